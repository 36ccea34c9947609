#!/usr/bin/env bash
# Builds every libFuzzer target of tests/fuzz with clang, ASan and UBSan,
# and runs each for SECONDS seconds on its corpus; prints the executions of
# each. Called by `make fuzz` (docs/TESTING.md, tests/fuzz/README.md):
#   scripts/fuzz.sh BUILD FUZZ_BUILD SECONDS [TARGET...]
# BUILD: a built tree with its fixtures (libhviske.a, fixtures/models);
# FUZZ_BUILD: where the targets, their growing corpora and their crash
# files go. Exit status 1 when a target fails to build or finds a crash.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "$1" && pwd)"
mkdir -p "$2"
OUTDIR="$(cd "$2" && pwd)"
SECONDS_EACH="$3"
shift 3
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(form request json config audio tokenizer added_tokens safetensors)

CC="${FUZZ_CC:-clang}"
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "fuzz: $CC not found (Debian: apt-get install clang)" >&2
  exit 1
fi
MODEL="$BUILD/fixtures/models/tiny-f32"
[ -d "$MODEL" ] || { echo "fuzz: no $MODEL (run the fixtures test of $BUILD)" >&2; exit 1; }

# The library's sources, defines, include folders and link libraries as
# CMake configured them for BUILD, so this follows the build's options.
FLAGS_MAKE="$BUILD/CMakeFiles/hviske_obj.dir/flags.make"
LINK_TXT="$BUILD/CMakeFiles/hviske-server.dir/link.txt"
[ -f "$FLAGS_MAKE" ] && [ -f "$LINK_TXT" ] || { echo "fuzz: $BUILD is not a CMake build" >&2; exit 1; }
read -r -a DEFS <<<"$(sed -n 's/^C_DEFINES = //p' "$FLAGS_MAKE")"
read -r -a INCS <<<"$(sed -n 's/^C_INCLUDES = //p' "$FLAGS_MAKE")"
read -r -a LIBS <<<"$(sed -n 's/.* libhviske\.a //p' "$LINK_TXT")"
CFLAGS=(-std=c11 -g -O1 -fno-sanitize-recover=undefined -Dkiss_fft_scalar=float
        -DKISS_FFT_SHARED "${DEFS[@]}" "${INCS[@]}" -I"$ROOT/proglib" -I"$ROOT/server")

# the library, instrumented for coverage and the sanitizers, once: every
# target links what it needs from it
OBJ="$OUTDIR/obj"
mkdir -p "$OBJ"
newest_h=$(find "$ROOT/src" "$ROOT/include" -name '*.h' -printf '%T@\n' | sort -n | tail -1)
export CC OBJ newest_h
printf '%s\n' $(find "$ROOT/src" -name '*.c' | sort) | xargs -P "${JOBS:-2}" -I{} bash -c '
  src="$1"; shift
  o="$OBJ/$(echo "${src#*/src/}" | tr / _).o"
  if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || \
     [ "$(stat -c %Y "$o")" -lt "${newest_h%.*}" ]; then
    echo "fuzz: compiling ${src#*/src/}" >&2
    "$CC" "$@" -fsanitize=fuzzer-no-link,address,undefined -c "$src" -o "$o"
  fi' _ {} "${CFLAGS[@]}"
rm -f "$OUTDIR/libhviske-fuzz.a"
ar qc "$OUTDIR/libhviske-fuzz.a" "$OBJ"/*.o
TOOLS=("$ROOT/server/server_form.c" "$ROOT/server/server_format.c" "$ROOT/server/server_metrics.c"
       "$ROOT/server/server_stream.c" "$ROOT/server/server_web.c" "$ROOT/server/server_guard.c"
       "$ROOT/server/server_multipart.c" "$ROOT"/proglib/*.c
       "$BUILD/server_web_assets.c")

build() { # target
  local src=("$ROOT/tests/fuzz/fuzz_$1.c")
  case "$1" in
    form | json) src+=("${TOOLS[@]}") ;;
    request) src+=("${TOOLS[@]}" "$ROOT/server/server_options.c" "$ROOT/server/server_queue.c"
                   "$ROOT/server/server_whisper.c" "$ROOT/server/server_response.c") ;;
  esac
  "$CC" "${CFLAGS[@]}" -fsanitize=fuzzer,address,undefined "${src[@]}" \
    "$OUTDIR/libhviske-fuzz.a" "${LIBS[@]}" -lpthread -o "$OUTDIR/fuzz_$1"
}

# seeds: the committed corpus, and for some targets the fixtures' files
seed() { # target dir
  local t="$1" d="$2"
  mkdir -p "$d"
  [ -d "$ROOT/tests/fuzz/corpus/$t" ] && cp -n "$ROOT/tests/fuzz/corpus/$t"/* "$d"/
  case "$t" in
    tokenizer) cp -n "$MODEL/tokenizer.model" "$d/fixture.model" ;;
    safetensors) cp -n "$MODEL/model.safetensors" "$d/fixture.safetensors" ;;
    config) { cat "$MODEL/config.json"; printf '\0'; cat "$MODEL/generation_config.json"; } \
              >"$d/fixture.json" ;;
    audio) for f in "$BUILD"/fixtures/audio/da5_16k.flac "$BUILD"/fixtures/audio/da3_8k.wav; do
             [ -f "$f" ] && cp -n "$f" "$d"/; done ;;
  esac
  return 0
}

status=0
summary=()
for t in "${TARGETS[@]}"; do
  echo "fuzz: building fuzz_$t" >&2
  if ! build "$t"; then
    summary+=("$t: BUILD FAILED")
    status=1
    continue
  fi
  corpus="$OUTDIR/corpus/$t"
  seed "$t" "$corpus"
  log="$OUTDIR/fuzz_$t.log"
  echo "fuzz: running fuzz_$t for $SECONDS_EACH s (log $log)" >&2
  rc=0
  (cd "$OUTDIR" && HV_FUZZ_MODEL="$MODEL" ASAN_OPTIONS=detect_leaks=1 \
     "./fuzz_$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
     -artifact_prefix="$OUTDIR/crash-$t-" "$corpus" >"$log" 2>&1) || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$rc" -ne 0 ]; then
    summary+=("$t: FAILED (exit $rc, ${runs:-?} runs; see $log and $OUTDIR/crash-$t-*)")
    status=1
  else
    summary+=("$t: ${runs:-?} runs in $SECONDS_EACH s, corpus $(ls "$corpus" | wc -l) files")
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $status
