# Sourced by device_train.sh and device_train_diarize.sh: puts the espeak-ng
# and sox of build-demo/gpu-bundle (make_bundle.sh) first on PATH, through
# wrappers that point them at the bundle's libraries and data, and installs
# the bundle's sox format plugins where sox looks for them.
B=$PWD/build-demo/gpu-bundle
[ -d "$B" ] || { echo "build-demo/gpu-bundle missing: run research/train-demo/make_bundle.sh and carry it"; exit 2; }
if [ ! -f /usr/lib/x86_64-linux-gnu/sox/libsox_fmt_mp3.so ]; then mkdir -p /usr/lib/x86_64-linux-gnu/sox && cp $B/soxfmt/*.so /usr/lib/x86_64-linux-gnu/sox/; fi
mkdir -p /tmp/wbin
for t in espeak-ng sox; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib ESPEAK_DATA_PATH=%s exec %s/bin/%s "$@"\n' $B $B $B $t > /tmp/wbin/$t
  chmod +x /tmp/wbin/$t
done
export PATH=/tmp/wbin:$PATH PYTHONUNBUFFERED=1
