#!/usr/bin/env bash
# Installs the oracle tier's virtual environment: the packages of
# tests/oracle/requirements.lock, exactly as pinned, from the Python package
# index into VENV (CTest's oracle_venv step runs this; docs/TESTING.md, "The
# Hugging Face oracle").
#   oracle-venv.sh VENV [PYTHON]     PYTHON: the interpreter (/usr/bin/python3)
# A stamp with the lock file's checksum and the interpreter's version tells a
# current environment from a missing or stale one, which is made anew. Where
# the index cannot be reached, or a pinned package cannot be had, it says so
# and exits 1: the tier fails, it is never skipped.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:?usage: oracle-venv.sh VENV [PYTHON]}"
PY="${2:-/usr/bin/python3}"
LOCK="$ROOT/tests/oracle/requirements.lock"

want="$(sha256sum "$LOCK" | cut -d' ' -f1) $("$PY" -c 'import sys; print(sys.version.split()[0])')"
stamp="$VENV/.hviske-lock"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "oracle-venv: $VENV is current ($(du -sh "$VENV" | cut -f1))"
    exit 0
fi

t0=$(date +%s)
rm -rf "$VENV"
if ! "$PY" -m venv "$VENV"; then
    echo "oracle-venv: FAILED: $PY -m venv $VENV (Debian's python3-venv: scripts/install-deps.sh test)" >&2
    exit 1
fi
echo "oracle-venv: installing tests/oracle/requirements.lock into $VENV"
if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input --no-deps \
    --only-binary :all: -r "$LOCK"; then
    echo "oracle-venv: FAILED: the pinned packages of tests/oracle/requirements.lock cannot be" \
        "installed from the Python package index (pip's message above); the Hugging Face" \
        "oracle tier (test_hf_oracle) needs them and fails without them" >&2
    rm -rf "$VENV"
    exit 1
fi
if ! "$VENV/bin/python" -c '
import torch, transformers
from transformers import CohereAsrForConditionalGeneration
torch.randn(4) @ torch.randn(4)
print("oracle-venv: torch %s, transformers %s" % (torch.__version__, transformers.__version__))'; then
    echo "oracle-venv: FAILED: torch or transformers does not import in $VENV" >&2
    rm -rf "$VENV"
    exit 1
fi
echo "$want" >"$stamp"
echo "oracle-venv: installed in $(($(date +%s) - t0)) s, $(du -sh "$VENV" | cut -f1)"
