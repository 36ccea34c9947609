#!/bin/bash
# Copies espeak-ng, sox, the shared libraries they and four sox format
# plugins (amr_nb, gsm, mp3, vorbis) need (glibc itself excepted), and the
# Danish espeak-ng data into build-demo/gpu-bundle (16 MB), for
# device_train.sh on a machine that has PyTorch but neither espeak-ng nor
# sox (built on Debian 12; the target needs a glibc at least as new).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-demo/gpu-bundle
rm -rf $B && mkdir -p $B/bin $B/lib $B/soxfmt $B/espeak-ng-data
cp "$(command -v espeak-ng)" "$(command -v sox)" $B/bin/
P=/usr/lib/x86_64-linux-gnu/sox
for l in $( (ldd "$(command -v espeak-ng)" "$(command -v sox)"; for f in amr_nb gsm mp3 vorbis; do ldd $P/libsox_fmt_$f.so; done) \
            | grep "=>" | awk '{print $3}' | sort -u | grep -v -E "/libc.so|/libm.so"); do
  cp -L "$l" $B/lib/
done
for f in amr_nb gsm mp3 vorbis; do cp $P/libsox_fmt_$f.so $B/soxfmt/; done
D=/usr/lib/x86_64-linux-gnu/espeak-ng-data
cp -r $D/phondata $D/phonindex $D/phontab $D/intonations $D/da_dict $D/lang $D/voices $B/espeak-ng-data/
du -sh $B
