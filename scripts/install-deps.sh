#!/usr/bin/env bash
# Installs the Debian packages a make target needs, by group:
#   install-deps.sh        (make, make run, make install) building and running
#   install-deps.sh test   (make test) the above, the test tools (the web
#                          page's: headless Chromium, its WebDriver and
#                          python3-selenium), the PyTorch reference and the
#                          node packages of the speech detector's ONNX Runtime
#                          oracle and the Node client
#   install-deps.sh fuzz   (make fuzz) the build's packages, clang and its
#                          OpenMP header (src/kernels/onednn.c includes omp.h)
#   install-deps.sh eval   ktuberling-data: the real room tone of
#                          research/train-demo/evaluate-pauses
#   install-deps.sh emulated  (make test-avx512-emulated) Bochs with its
#                          text display and BIOS images, busybox-static,
#                          isolinux and xorriso: tests/emulated/avx512.sh
#                          boots Debian's kernel (which it fetches with
#                          apt-get download) on an emulated AVX-512 CPU
#   install-deps.sh arm64  (make cross-arm64, make test-arm64) the cross
#                          compiler for 64-bit ARM, qemu-user-static to run
#                          its programs, and the build's libraries for arm64
#                          beside the host's (dpkg --add-architecture arm64;
#                          no oneDNN: docs/TESTING.md, "ARM64")
# Idempotent: quick when all are present.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
GROUP="${1:-build}"

# building the library and the programs, and running them
PKGS=(
  build-essential cmake pkg-config
  libcjson-dev libopenblas-dev libsndfile1-dev libmpg123-dev libvorbis-dev libogg-dev libsoxr-dev libkissfft-dev zlib1g-dev
  libmicrohttpd-dev libdnnl-dev
  libavformat-dev libavcodec-dev libswresample-dev
)
case "$GROUP" in
  build) ;;
  test)
    PKGS+=(
      curl nginx
      python3 python3-numpy python3-torch python3-sentencepiece python3-venv python3-mypy
      sentencepiece espeak-ng libespeak-ng-dev sox libsox-fmt-mp3 ffmpeg
      python3-onnx clang-format
      man-db python3-pip python3-setuptools
      slurm-wlm munge
      chromium chromium-driver python3-selenium
    )
    # node and npm may come from elsewhere (NodeSource, nvm): Debian's
    # packages only for a command that is missing
    command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
    command -v npm >/dev/null 2>&1 || PKGS+=(npm)
    ;;
  fuzz) PKGS+=(clang libclang-rt-14-dev libomp-14-dev) ;;
  eval) PKGS+=(ktuberling-data) ;;
  emulated) PKGS+=(bochs bochs-term bochsbios vgabios busybox-static isolinux syslinux-common xorriso cpio python3) ;;
  arm64)
    PKGS+=(crossbuild-essential-arm64 qemu-user-static
      libc6-dev:arm64 libcjson-dev:arm64 libopenblas-dev:arm64 libsndfile1-dev:arm64
      libmpg123-dev:arm64 libvorbis-dev:arm64 libogg-dev:arm64 libsoxr-dev:arm64
      libkissfft-dev:arm64 libmicrohttpd-dev:arm64
      zlib1g-dev:arm64)
    ;;
  *)
    echo "install-deps: unknown group '$GROUP' (build, test, fuzz, eval, emulated or arm64)" >&2
    exit 2
    ;;
esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
# the arm64 packages need dpkg to take that architecture (apt-get update
# below then reads its package lists)
if [ "$GROUP" = arm64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64 &&
  [ "$(dpkg --print-architecture)" != arm64 ]; then
  echo "install-deps: dpkg --add-architecture arm64" >&2
  $SUDO dpkg --add-architecture arm64
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ "$GROUP" = test ] || exit 0

# The node packages of the oracle and of the Node client test (tests/node:
# the OpenAI SDK), exactly as their package-lock.json files pin them.
# Install scripts are skipped: onnxruntime-node's would download more, and
# the package ships libonnxruntime for linux-x64 already. A stamp with the
# lock file's checksum tells a current node_modules from a missing or stale
# one.
for dir in research/vad-oracle tests/node; do
  stamp="$ROOT/$dir/node_modules/.hviske-lock.sha256"
  want="$(sha256sum "$ROOT/$dir/package-lock.json" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "install-deps: npm ci in $dir" >&2
    (cd "$ROOT/$dir" && npm ci --ignore-scripts --no-audit --no-fund)
    echo "$want" >"$stamp"
  fi
done
