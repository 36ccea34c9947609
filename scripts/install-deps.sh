#!/usr/bin/env bash
# Installs every Debian package that the build, the tests and the PyTorch
# reference need. Idempotent: does nothing when all are present.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  libcjson-dev libopenblas-dev libsndfile1-dev libsoxr-dev libkissfft-dev
  libmicrohttpd-dev curl
  python3 python3-numpy python3-torch python3-sentencepiece
  sentencepiece espeak-ng sox
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
