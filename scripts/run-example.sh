#!/usr/bin/env bash
# What `make run` does: transcribes the bundled example with the demo model
# (models/demo) and the program built in BUILD_DIR.
#
#   scripts/run-example.sh BUILD_DIR
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=$1/hviske
if [ ! -x "$cli" ]; then
  echo "run-example: $cli not found; build first (make build)" >&2
  exit 1
fi
echo "+ $cli -m models/demo examples/da-example.wav" >&2
exec "$cli" -m "$root/models/demo" "$root/examples/da-example.wav"
