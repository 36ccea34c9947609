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
# config.json, generation_config.json, tokenizer.model, tokenizer_config.json
# when the repository has one (the tokens a Hugging Face tokenizer adds:
# docs/MODEL.md), then model.safetensors, or the shards
# model.safetensors.index.json lists.
# Each comes from $HF_ENDPOINT/NAME/resolve/$HF_REVISION/FILE (defaults
# https://huggingface.co and main), with "Authorization: Bearer $HF_TOKEN"
# when HF_TOKEN is set, as Hugging Face's own tools read them.
#
# Nothing the server sends replaces a file before every file is in and
# checked. A file is downloaded into FILE.part (resumed from there when
# the script runs again), at most its size ceiling (16 MiB for the JSON
# files, 64 MiB for tokenizer.model, the server's size for weights), cut
# off when it stalls below 1 KiB/s for 60 s, and checked: the JSON files
# parse as JSON objects, tokenizer.model as a SentencePiece model,
# safetensors files' sizes as their headers say, sizes as the server's
# and, for shards, their weights' total as the index's; the index's shard
# names are taken one per line and must be plain file names. Only when
# all are whole are they renamed into place, so a failure leaves the
# previous complete checkpoint as it was. A file already complete is not
# fetched again. Needs curl and python3. Exit status: 0 done, 1 a
# download or a check failed (the message names the file and URL), 2 bad
# usage.
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

command -v python3 >/dev/null 2>&1 || fail "needs python3 (Debian: apt-get install python3)"

# The token goes to curl in a file of its own (-H @FILE), not on the
# command line where other users' ps would show it; curl sends it to the
# endpoint's host only, not to the host a redirect leads to. A transfer
# slower than 1 KiB/s for 60 s is cut off; progress shows on a terminal.
CURL=(curl --show-error --location --retry 3 --connect-timeout 30 --speed-limit 1024
  --speed-time 60)
if [ -t 2 ]; then CURL+=(--progress-bar); else CURL+=(--silent); fi
HEADERS=""
cleanup() { [ -z "$HEADERS" ] || rm -f "$HEADERS"; }
trap cleanup EXIT
if [ -n "${HF_TOKEN:-}" ]; then
  HEADERS=$(umask 077 && mktemp)
  printf 'Authorization: Bearer %s\n' "$HF_TOKEN" >"$HEADERS"
  CURL+=(-H "@$HEADERS")
fi

# Size ceilings, bytes: what no such file of a real checkpoint comes near.
JSON_MAX=$((16 << 20))
TOKENIZER_MAX=$((64 << 20))
WEIGHTS_MAX=$((1 << 40))

# HEAD of a file: STATUS (the last response's) and SIZE (the hub's
# X-Linked-Size of a large file, else the last Content-Length; "" when
# none).
STATUS="" SIZE=""
probe() {
  local url=$1 h
  h=$("${CURL[@]}" --silent --head "$url" 2>/dev/null | tr -d '\r') || true
  STATUS=$(printf '%s\n' "$h" | awk 'toupper($1) ~ /^HTTP\// { s = $2 } END { print s }')
  SIZE=$(printf '%s\n' "$h" | awk 'tolower($1) == "x-linked-size:" { print $2; exit }')
  [ -n "$SIZE" ] || SIZE=$(printf '%s\n' "$h" |
    awk 'toupper($1) ~ /^HTTP\// { n = "" } tolower($1) == "content-length:" { n = $2 } END { print n }')
  [[ $SIZE =~ ^[0-9]{1,15}$ ]] || SIZE=""
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

# check KIND FILE: whether FILE is what a checkpoint's file of KIND must
# be (json: a JSON object; tokenizer: a SentencePiece model; safetensors:
# a header that parses, whose tensors end where the file does, printing
# the bytes of weights; index: model.safetensors.index.json, printing
# its total_size (or -) and then its shard names, one per line). On
# failure prints why and returns 1.
check() {
  python3 - "$1" "$2" <<'PY'
import json, re, struct, sys

kind, path = sys.argv[1], sys.argv[2]


def bad(why):
    print(why)
    sys.exit(1)


def json_object(data, what):
    try:
        o = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        bad(f"not JSON ({str(e)[:80]})")
    if not isinstance(o, dict):
        bad(f"{what} is not a JSON object")
    return o


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            bad("not a SentencePiece model (a cut or overlong number)")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of a protobuf message, strictly."""
    i = 0
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if f == 0:
            bad("not a SentencePiece model (field 0)")
        if wt == 0:
            v, i = varint(b, i)
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            if i + n > len(b):
                bad("not a SentencePiece model (cut)")
            v, i = b[i:i + n], i + n
        elif wt == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                bad("not a SentencePiece model (a length past the end)")
            v, i = b[i:i + n], i + n
        else:
            bad(f"not a SentencePiece model (wire type {wt})")
        yield f, wt, v


with open(path, "rb") as fh:
    data = fh.read()
if kind == "json":
    json_object(data, "it")
elif kind == "index":
    o = json_object(data, "the index")
    wm = o.get("weight_map")
    if not isinstance(wm, dict) or not wm or not all(isinstance(v, str) for v in wm.values()):
        bad("the index has no weight_map of tensor names to shard files")
    names = sorted(set(wm.values()))
    for n in names:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.safetensors", n):
            bad(f"the index names {n!r}, not a shard's file name")
    total = (o.get("metadata") or {}).get("total_size") if isinstance(o.get("metadata"), dict) \
        else None
    print(total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else "-")
    print("\n".join(names))
elif kind == "tokenizer":
    pieces = 0
    for f, wt, v in fields(data):
        if f == 1:  # ModelProto.pieces: SentencePiece {piece = 1, score = 2, type = 3}
            if wt != 2:
                bad("not a SentencePiece model (pieces of the wrong type)")
            text = [x for g, t, x in fields(v) if g == 1 and t == 2]
            if len(text) != 1:
                bad("not a SentencePiece model (a piece without its text)")
            try:
                text[0].decode("utf-8")
            except UnicodeDecodeError:
                bad("not a SentencePiece model (a piece that is not UTF-8)")
            pieces += 1
    if pieces < 2:
        bad(f"not a SentencePiece model ({pieces} pieces)")
elif kind == "safetensors":
    if len(data) < 8:
        bad("shorter than a safetensors header")
    n = struct.unpack("<Q", data[:8])[0]
    if not 2 <= n <= min(100_000_000, len(data) - 8):
        bad(f"a header of {n} bytes in {len(data)}")
    h = json_object(data[8:8 + n], "its header")
    end = 0
    for k, t in h.items():
        if k == "__metadata__":
            continue
        off = t.get("data_offsets") if isinstance(t, dict) else None
        if not (isinstance(off, list) and len(off) == 2 and
                all(isinstance(x, int) and not isinstance(x, bool) for x in off) and
                0 <= off[0] <= off[1]):
            bad(f"its header's tensor {k[:60]!r} has no valid data_offsets")
        end = max(end, off[1])
    if 8 + n + end != len(data):
        bad(f"its size ({len(data)} bytes) is not what its header says ({8 + n + end})")
    print(end)
PY
}

# Downloaded files waiting to be renamed into place (FILE.part -> FILE),
# all at the end, once every one is whole and checked.
STAGED=()

# fetch FILE KIND CEILING: FILE of KIND (check) into DIR/FILE.part,
# resumed, at most CEILING bytes (or the server's size), checked, staged.
# An existing DIR/FILE of the server's size that passes the check is kept.
fetch() {
  local file=$1 kind=$2 ceiling=$3 dest="$DIR/$1" part="$DIR/$1.part" url="$BASE/$1" have
  local why limit rc
  probe "$url"
  [ "$STATUS" = 200 ] || refused "$file"
  if [ -n "$SIZE" ] && [ "$SIZE" -gt "$ceiling" ]; then
    fail "$NAME: $file: the server says $SIZE bytes, more than such a file may have" \
      "($ceiling): nothing fetched from $url"
  fi
  if [ -f "$dest" ] && [ -n "$SIZE" ] && [ "$(size_of "$dest")" -eq "$SIZE" ] &&
    check "$kind" "$dest" >/dev/null; then
    echo "$PROG: $dest: there already ($SIZE bytes)" >&2
    return 0
  fi
  limit=${SIZE:-$ceiling}
  have=0
  [ -f "$part" ] && have=$(size_of "$part")
  if [ "$have" -gt "$limit" ]; then
    rm -f "$part"
    have=0
  fi
  if [ -z "$SIZE" ] || [ "$have" -lt "$SIZE" ]; then
    local from=""
    [ "$have" -eq 0 ] || from=", resuming at byte $have"
    echo "$PROG: $dest: ${SIZE:-?} bytes$from" >&2
    # at most limit + 1 bytes are written: one more is a file too large
    rc=0
    "${CURL[@]}" --fail --continue-at "$have" --output - "$url" |
      head -c $((limit + 1 - have)) >>"$part" || rc=$?
    rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 33 ]; then # the server cannot resume: from the start
      : >"$part"
      rc=0
      "${CURL[@]}" --fail --output - "$url" | head -c $((limit + 1)) >>"$part" || true
      rc=${PIPESTATUS[0]}
    fi
    if [ -f "$part" ] && [ "$(size_of "$part")" -gt "$limit" ]; then
      rm -f "$part"
      local what="the ceiling"
      [ -z "$SIZE" ] || what="the server's size"
      fail "$NAME: $file: more than $limit bytes ($what) came from $url: removed"
    fi
    [ "$rc" -eq 0 ] || fail "$NAME: $file: the download from $url failed (curl exit $rc; run" \
      "again to resume from $part)"
  fi
  [ -f "$part" ] && have=$(size_of "$part") || have=0
  if [ "$have" -eq 0 ]; then
    rm -f "$part"
    fail "$NAME: $file: the server sent nothing from $url"
  fi
  if [ -n "$SIZE" ] && [ "$have" -ne "$SIZE" ]; then
    fail "$NAME: $file: $have bytes, but the server says $SIZE (run again to resume)"
  fi
  if ! why=$(check "$kind" "$part"); then
    rm -f "$part"
    fail "$NAME: $file from $url: ${why:-it fails its check}: removed, nothing replaced"
  fi
  STAGED+=("$file")
}

# The checkpoint must be there before anything is made.
probe "$BASE/config.json"
[ "$STATUS" = 200 ] || refused config.json
mkdir -p "$DIR"
fetch config.json json "$JSON_MAX"
fetch generation_config.json json "$JSON_MAX"
fetch tokenizer.model tokenizer "$TOKENIZER_MAX"
probe "$BASE/tokenizer_config.json"
[ "$STATUS" != 200 ] || fetch tokenizer_config.json json "$JSON_MAX"
probe "$BASE/model.safetensors.index.json"
if [ "$STATUS" = 200 ]; then
  fetch model.safetensors.index.json index "$JSON_MAX"
  index="$DIR/model.safetensors.index.json"
  [ -f "$index.part" ] && index="$index.part"
  listed=$(check index "$index") || fail "$NAME: model.safetensors.index.json: $listed"
  total="" weights=0
  while IFS= read -r f; do
    if [ -z "$total" ]; then
      total=$f
      continue
    fi
    fetch "$f" safetensors "$WEIGHTS_MAX"
    w="$DIR/$f"
    [ -f "$w.part" ] && w="$w.part"
    weights=$((weights + $(check safetensors "$w")))
  done <<<"$listed"
  if [ "$total" != - ] && [ "$weights" -ne "$total" ]; then
    for f in "${STAGED[@]}"; do rm -f "$DIR/$f.part"; done
    fail "$NAME: the shards hold $weights bytes of weights, the index says $total:" \
      "removed, nothing replaced"
  fi
elif [ "$STATUS" = 404 ]; then
  fetch model.safetensors safetensors "$WEIGHTS_MAX"
else
  refused model.safetensors.index.json
fi
for f in "${STAGED[@]}"; do mv -f "$DIR/$f.part" "$DIR/$f"; done
echo "$PROG: $NAME is in $DIR: hviske -m $DIR FILE..." >&2
