#!/usr/bin/env bash
# What `make run` does: transcribes the bundled example with the program
# built in BUILD_DIR.
#
#   scripts/run-example.sh BUILD_DIR
#
# With a trained demo model in models/demo/ it uses that. Until one ships it
# falls back to the random-weight test model that the test fixtures contain,
# which proves the pipeline runs end to end but writes gibberish.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=$build/hviske
audio=$root/examples/da-example.wav

if [ ! -x "$cli" ]; then
  echo "run-example: $cli not found; build first (make build)" >&2
  exit 1
fi

if [ -f "$root/models/demo/config.json" ]; then
  exec "$cli" -m "$root/models/demo" "$audio"
fi

fixtures=$build/fixtures
model=$fixtures/models/multi-f32
if [ ! -f "$fixtures/manifest.json" ] || [ ! -f "$model/config.json" ]; then
  echo "run-example: generating the test fixtures in $fixtures ..." >&2
  /usr/bin/python3 "$root/tests/reference/make_fixtures.py" --out "$fixtures"
fi

cat >&2 <<EOF
run-example: no trained model ships with hviske yet, so this runs the tiny
random-weight TEST model ($model).
Its output below is gibberish tokens: that is expected, it only shows the
whole pipeline (audio -> features -> encoder -> decoder -> text) running.
For real transcripts download a checkpoint (for example syvai/hviske-v5.3
from Hugging Face) and run:
    $cli -m path/to/checkpoint -l da file.wav
EOF
"$cli" -m "$model" "$audio"
