#!/usr/bin/env bash
# Fetches a published checkpoint of the Hviske / Cohere Transcribe family
# from the Hugging Face hub, as whisper.cpp's download-ggml-model.sh does
# for its models (docs/CLI.md, "Model paths"):
#
#   scripts/download-model.sh NAME [DIR]
#   scripts/download-model.sh syvai/hviske-v5.3       # into ./hviske-v5.3
#   build/hviske -m hviske-v5.3 recording.wav
#
# NAME is the hub's OWNER/NAME; DIR the checkpoint directory to fill
# (default: NAME's last part, in the current directory). The files are
# config.json, generation_config.json, tokenizer.model, then
# model.safetensors, or the shards model.safetensors.index.json lists.
# Each comes from $HF_ENDPOINT/NAME/resolve/$HF_REVISION/FILE (defaults
# https://huggingface.co and main), with "Authorization: Bearer $HF_TOKEN"
# when HF_TOKEN is set, as Hugging Face's own tools read them. A file is
# downloaded into FILE.part, resumed from there when the script runs
# again, and renamed into place only when its size is the server's (and a
# safetensors file's size what its own header says); a file already
# complete is not fetched again. Exit status: 0 done, 1 a download
# failed, 2 bad usage.
set -euo pipefail

PROG=download-model
usage() {
  echo "usage: $PROG NAME [DIR]   (NAME: the hub's OWNER/NAME, such as syvai/hviske-v5.3)" >&2
  exit 2
}
fail() {
  echo "$PROG: $*" >&2
  exit 1
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
NAME=$1
[[ $NAME =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || {
  echo "$PROG: '$NAME' is not a model name of the hub (OWNER/NAME)" >&2
  usage
}
DIR=${2:-${NAME##*/}}
[ -n "$DIR" ] || usage
ENDPOINT=${HF_ENDPOINT:-https://huggingface.co}
ENDPOINT=${ENDPOINT%/}
REVISION=${HF_REVISION:-main}
BASE="$ENDPOINT/$NAME/resolve/$REVISION"
command -v curl >/dev/null 2>&1 || fail "needs curl (Debian: apt-get install curl)"

# The token goes to curl in a file of its own (-H @FILE), not on the
# command line where other users' ps would show it; curl sends it to the
# endpoint's host only, not to the host a redirect leads to.
CURL=(curl --silent --show-error --location --retry 3 --connect-timeout 30)
HEADERS=""
cleanup() { [ -z "$HEADERS" ] || rm -f "$HEADERS"; }
trap cleanup EXIT
if [ -n "${HF_TOKEN:-}" ]; then
  HEADERS=$(umask 077 && mktemp)
  printf 'Authorization: Bearer %s\n' "$HF_TOKEN" >"$HEADERS"
  CURL+=(-H "@$HEADERS")
fi

# HEAD of a file: STATUS (the last response's) and SIZE (the hub's
# X-Linked-Size of a large file, else the last Content-Length; "" when
# none).
STATUS="" SIZE=""
probe() {
  local url=$1 h
  h=$("${CURL[@]}" --head "$url" 2>/dev/null | tr -d '\r') || true
  STATUS=$(printf '%s\n' "$h" | awk 'toupper($1) ~ /^HTTP\// { s = $2 } END { print s }')
  SIZE=$(printf '%s\n' "$h" | awk 'tolower($1) == "x-linked-size:" { print $2; exit }')
  [ -n "$SIZE" ] || SIZE=$(printf '%s\n' "$h" |
    awk 'toupper($1) ~ /^HTTP\// { n = "" } tolower($1) == "content-length:" { n = $2 } END { print n }')
}

# What a refused HEAD means.
refused() {
  local file=$1
  case "$STATUS" in
    401 | 403)
      if [ -n "${HF_TOKEN:-}" ]; then
        fail "$NAME: $file: the hub refused HF_TOKEN ($STATUS)"
      else
        fail "$NAME: $file: the hub wants a token ($STATUS): set HF_TOKEN"
      fi
      ;;
    404) fail "$NAME: $file: not found at $BASE/$file (404)" ;;
    "") fail "$NAME: $file: no answer from $ENDPOINT" ;;
    *) fail "$NAME: $file: the server answered $STATUS" ;;
  esac
}

size_of() { stat -c %s "$1"; }

# A safetensors file's size is 8 + its header's length + the end of its
# last tensor's data; 0 when it is not so.
safetensors_ok() {
  local f=$1 n end
  n=$(od -An -t u8 -N 8 "$f" | tr -d ' ')
  if [ -z "$n" ] || [ "$n" -le 0 ] || [ "$n" -ge 100000000 ]; then return 1; fi
  end=$(head -c $((8 + n)) "$f" | tail -c "$n" |
    grep -o '"data_offsets" *: *\[ *[0-9]* *, *[0-9]* *\]' |
    sed 's/.*, *\([0-9]*\) *\]/\1/' | sort -n | tail -1)
  [ -n "$end" ] && [ "$(size_of "$f")" -eq $((8 + n + end)) ]
}

# Fetches one file into DIR: FILE.part, resumed, then renamed when whole.
fetch() {
  local file=$1 dest="$DIR/$1" part="$DIR/$1.part" have
  probe "$BASE/$file"
  [ "$STATUS" = 200 ] || refused "$file"
  if [ -f "$dest" ] && [ -n "$SIZE" ] && [ "$(size_of "$dest")" -eq "$SIZE" ]; then
    echo "$PROG: $dest: there already ($SIZE bytes)" >&2
    return 0
  fi
  have=0
  [ -f "$part" ] && have=$(size_of "$part")
  if [ -n "$SIZE" ] && [ "$have" -gt "$SIZE" ]; then
    rm -f "$part"
    have=0
  fi
  if [ -z "$SIZE" ] || [ "$have" -lt "$SIZE" ]; then
    local from=""
    [ "$have" -eq 0 ] || from=", resuming at byte $have"
    echo "$PROG: $dest: ${SIZE:-?} bytes$from" >&2
    local rc=0
    "${CURL[@]}" --fail --continue-at - --output "$part" "$BASE/$file" || rc=$?
    if [ "$rc" -eq 33 ]; then # the server cannot resume: from the start
      rm -f "$part"
      rc=0
      "${CURL[@]}" --fail --output "$part" "$BASE/$file" || rc=$?
    fi
    [ "$rc" -eq 0 ] || fail "$NAME: $file: the download failed (run again to resume from $part)"
  fi
  have=$(size_of "$part")
  if [ -n "$SIZE" ] && [ "$have" -ne "$SIZE" ]; then
    fail "$NAME: $file: $have bytes, but the server says $SIZE (run again to resume)"
  fi
  if [[ $file == *.safetensors ]] && ! safetensors_ok "$part"; then
    rm -f "$part"
    fail "$NAME: $file: its size ($have bytes) is not what its header says: removed"
  fi
  mv -f "$part" "$dest"
}

# The checkpoint must be there before anything is made.
probe "$BASE/config.json"
[ "$STATUS" = 200 ] || refused config.json
mkdir -p "$DIR"
for f in config.json generation_config.json tokenizer.model; do fetch "$f"; done
probe "$BASE/model.safetensors.index.json"
if [ "$STATUS" = 200 ]; then
  fetch model.safetensors.index.json
  shards=$(grep -o '"[^"]*\.safetensors"' "$DIR/model.safetensors.index.json" | tr -d '"' |
    sort -u)
  [ -n "$shards" ] || fail "$NAME: model.safetensors.index.json lists no shards"
  for f in $shards; do
    [[ $f =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || fail "$NAME: the index names '$f', not a file"
    fetch "$f"
  done
elif [ "$STATUS" = 404 ]; then
  fetch model.safetensors
else
  refused model.safetensors.index.json
fi
echo "$PROG: $NAME is in $DIR: hviske -m $DIR FILE..." >&2
