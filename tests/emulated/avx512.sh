#!/usr/bin/env bash
# Runs compiled test programs on an emulated AVX-512 CPU: Bochs (Debian's
# bochs package) boots Debian's kernel with a busybox initramfs that holds
# the programs, the shared libraries they load and the data they read, runs
# each program there and powers off. For code paths that only run where the
# CPU has AVX-512 (our dispatch, oneDNN's and OpenBLAS's), on a host without
# it. docs/TESTING.md, "Emulated AVX-512 CPU", has the details.
#
#   tests/emulated/avx512.sh [options] TEST...
#
# Each TEST is a CTest test name of the build folder (its command line,
# environment and working folder as ctest gives them, e.g. test_onednn or
# test_onednn_AVX2) or a path to a program, alone or with its arguments in
# one word ("build/tests/test_gemm --flag"; run in the current folder).
# Either may start with NAME=VALUE words for that test's environment
# ("ONEDNN_VERBOSE=1 test_onednn_model").
# Options:
#   --build DIR     build folder of the CTest names (default: build)
#   --cpu MODEL     Bochs CPU model (default corei7_skylake_x; bochs -help cpu)
#   --timeout S     limit for the whole run in seconds, boot included
#                   (default 7200); past it Bochs is stopped, exit 124
#   --memory MB     guest memory (default 2048)
#   --env NAME=VAL  also set NAME in each test's environment (repeatable),
#                   e.g. --env ONEDNN_VERBOSE=1
#   --data PATH     also copy PATH (file or folder) into the guest at the
#                   same absolute path (repeatable); models/, examples/ and
#                   the build's fixtures/ are always there
#   --kernel FILE   a bzImage to boot instead of Debian's linux-image-amd64
#   --keep          keep the scratch folder (initramfs, ISO image, bochsrc)
# Prints the guest's CPU flags, each test's output (each line prefixed with
# the host's elapsed time), its exit status and time; exits 0 only when
# every test passed. The console log and Bochs' log of the last run are
# left in BUILD/emulated/ (serial.log, bochs.log).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"

BUILD="$ROOT/build"
CPU=corei7_skylake_x
LIMIT=7200
MEMORY=2048
KERNEL=""
KEEP=0
ENVS=()
DATA=()
TESTS=()
die() {
  echo "avx512.sh: $*" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$(cd "${2:?--build needs a folder}" && pwd)" || die "no folder $2"; shift 2 ;;
    --cpu) CPU="${2:?--cpu needs a model}"; shift 2 ;;
    --timeout) LIMIT="${2:?--timeout needs seconds}"; shift 2 ;;
    --memory) MEMORY="${2:?--memory needs megabytes}"; shift 2 ;;
    --env) ENVS+=("${2:?--env needs NAME=VALUE}"); shift 2 ;;
    --data) DATA+=("$(realpath -e "${2:?--data needs a path}")") || die "no file $2"; shift 2 ;;
    --kernel) KERNEL="$(realpath -e "${2:?--kernel needs a file}")" || die "no file $2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --*) die "unknown option $1 (--help lists them)" ;;
    *) TESTS+=("$1"); shift ;;
  esac
done
[ ${#TESTS[@]} -gt 0 ] || die "no tests given (--help)"
[[ "$LIMIT" =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds, not '$LIMIT'"
[[ "$MEMORY" =~ ^[1-9][0-9]*$ ]] || die "--memory wants megabytes, not '$MEMORY'"
for e in ${ENVS[@]+"${ENVS[@]}"}; do
  [[ "$e" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env wants NAME=VALUE, not '$e'"
done

bash "$ROOT/scripts/install-deps.sh" emulated
models="$(bochs-bin -help cpu 2>&1 || true)"
grep -qx "$CPU" <<<"$models" ||
  die "Bochs has no CPU model '$CPU' (bochs -help cpu lists them)"

OUT="$BUILD/emulated"
mkdir -p "$OUT"
WORK="$(mktemp -d "$OUT/run.XXXXXX")"
BOCHS_PID=""
cleanup() { # Bochs' debugger catches SIGTERM: KILL it and its timeout
  if [ -n "$BOCHS_PID" ]; then
    pkill -KILL -P "$BOCHS_PID" 2>/dev/null || true
    kill -KILL "$BOCHS_PID" 2>/dev/null || true
  fi
  if [ "$KEEP" = 0 ]; then rm -rf "$WORK"; else echo "avx512.sh: scratch kept in $WORK" >&2; fi
}
trap cleanup EXIT

# The kernel: Debian's current linux-image-amd64, downloaded (not
# installed) once into BUILD/emulated/.
if [ -z "$KERNEL" ]; then
  pkg="$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -1)"
  [ -n "$pkg" ] || die "apt-cache knows no linux-image-amd64 (apt-get update?)"
  KERNEL="$OUT/vmlinuz-${pkg#linux-image-}"
  if [ ! -s "$KERNEL" ]; then
    echo "avx512.sh: fetching the kernel ($pkg) into $OUT" >&2
    rm -f "$OUT"/"$pkg"_*.deb
    (cd "$OUT" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) ||
      die "apt-get download $pkg failed"
    deb="$(ls "$OUT"/"$pkg"_*.deb 2>/dev/null | head -1)"
    [ -n "$deb" ] || die "apt-get download $pkg left no .deb"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO "./boot/vmlinuz-${pkg#linux-image-}" >"$KERNEL.part"
    mv "$KERNEL.part" "$KERNEL"
    rm -f "$deb"
  fi
fi

# The plan: each test's name, folder, environment and command, as lines of
# the guest's /init, and the files the guest needs.
PLAN="$WORK/plan.sh"
FILES="$WORK/files.txt"
python3 - "$BUILD" "$PLAN" "$FILES" ${ENVS[@]+"${ENVS[@]}"} -- "${TESTS[@]}" <<'EOF'
import json, os, re, shlex, subprocess, sys

build, plan_path, files_path = sys.argv[1:4]
rest = sys.argv[4:]
cut = rest.index("--")
extra_env, specs = rest[:cut], rest[cut + 1:]

def fail(msg):
    print("avx512.sh: " + msg, file=sys.stderr)
    sys.exit(2)

ctest = None
def ctest_tests():
    global ctest
    if ctest is None:
        if not os.path.isfile(os.path.join(build, "CTestTestfile.cmake")):
            fail(f"{build} is no CMake build folder (--build; make build makes one)")
        out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                             capture_output=True, text=True).stdout
        ctest = {t["name"]: t for t in json.loads(out)["tests"]}
    return ctest

def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"

runs, files = [], set()
for spec in specs:
    words = shlex.split(spec)
    own_env = []
    while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        own_env.append(words.pop(0))
    if not words:
        fail(f"no test in '{spec}'")
    if os.sep in words[0] or os.path.isfile(words[0]):
        prog = os.path.realpath(words[0])
        if not os.path.isfile(prog) or not os.access(prog, os.X_OK):
            fail(f"{words[0]}: no such program")
        name, argv, env, cwd = os.path.basename(prog), [prog] + words[1:], [], os.getcwd()
    else:
        if len(words) > 1:
            fail(f"'{spec}': a CTest test takes no arguments (a program's path does)")
        t = ctest_tests().get(words[0])
        if t is None:
            fail(f"no CTest test '{words[0]}' in {build} (ctest -N lists them)")
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        name, argv = words[0], t["command"]
        if not os.path.realpath(argv[0]).startswith(os.path.realpath(build) + os.sep):
            fail(f"{name} runs {argv[0]}: only the build's compiled programs run in the guest")
        env = props.get("ENVIRONMENT", [])
        cwd = props.get("WORKING_DIRECTORY", build)
    if not os.path.isabs(argv[0]) or not os.path.isfile(argv[0]) or not is_elf(argv[0]):
        fail(f"{name} runs {argv[0]}: only compiled programs run in the guest")
    files.add(argv[0])
    runs.append((name, cwd, env + extra_env + own_env, argv))

with open(plan_path, "w") as f:
    for i, (name, cwd, env, argv) in enumerate(runs):
        q = shlex.quote
        f.write(f"run_test {i} {q(name)} {q(cwd)} env {' '.join(map(q, env + argv))}\n")
with open(files_path, "w") as f:
    f.write("".join(p + "\n" for p in sorted(files)))
EOF

# The initramfs: busybox, the programs at their own paths, every library
# they load (ldd) at the path ldd names, the data.
ROOTFS="$WORK/root"
mkdir -p "$ROOTFS"/{bin,proc,sys,dev,tmp,lib64}
cp /bin/busybox "$ROOTFS/bin/busybox"
copy_in() { # copies a file (links followed) or folder to its own path in the root
  local src="$1"
  mkdir -p "$ROOTFS$(dirname "$src")"
  cp -rL "$src" "$ROOTFS$src"
}
LIBDIRS=()
while read -r prog; do
  copy_in "$prog"
  libs="$(ldd "$prog")" || die "ldd $prog failed"
  if grep -q 'not found' <<<"$libs"; then die "$prog: a library is missing: $(grep 'not found' <<<"$libs")"; fi
  while read -r lib; do
    [ -e "$ROOTFS$lib" ] || copy_in "$lib"
    LIBDIRS+=("$(dirname "$lib")")
  done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$libs")
done <"$FILES"
for d in "$ROOT/models" "$ROOT/examples" "$BUILD/fixtures" ${DATA[@]+"${DATA[@]}"}; do
  if [ -e "$d" ]; then copy_in "$d"; fi
done
LIBPATH="$(printf '%s\n' ${LIBDIRS[@]+"${LIBDIRS[@]}"} | sort -u | paste -sd:)"

# /init: CPU flags, then each test between markers the host reads, then off.
{
  cat <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp TMPDIR=/tmp LD_LIBRARY_PATH=$LIBPATH
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
dmesg -n 1 # kernel messages after each test, not within its output
dmesg -c >/dev/null
echo "@@hvemu flags \$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2)"
EOF
  cat <<'EOF'
run_test() {
  i=$1 name=$2 dir=$3
  shift 3
  mkdir -p "$dir"
  echo "@@hvemu begin $i $name"
  (cd "$dir" && "$@") </dev/null 2>&1
  rc=$?
  dmesg -c | sed 's/^/kernel: /'
  echo "@@hvemu end $i $rc"
}
EOF
  cat "$PLAN"
  cat <<'EOF'
echo "@@hvemu done"
# a setting made with TCSETSW, which returns once the console's output
# has left the serial port: then power off without losing the marker
stty -F /dev/console -echo
poweroff -f
EOF
} >"$ROOTFS/init"
chmod +x "$ROOTFS/init"

ISO="$WORK/iso"
mkdir -p "$ISO/isolinux"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$ISO/isolinux/"
cp "$KERNEL" "$ISO/vmlinuz"
(cd "$ROOTFS" && find . | cpio -o -H newc --quiet) >"$ISO/initrd.img"
# Bochs 2.7 describes the PKRU state and the compacted XSAVE format
# wrongly in CPUID leaf 0xd, and Linux then turns XSAVE (so AVX and
# AVX-512) off: the kernel is told to leave PKU, XSAVES and XSAVEC alone.
# aperfmperf: Bochs has no such MSRs.
cat >"$ISO/isolinux/isolinux.cfg" <<'EOF'
default linux
prompt 0
timeout 0
label linux
  kernel /vmlinuz
  initrd /initrd.img
  append console=ttyS0,115200 printk.time=1 panic=-1 mitigations=off clearcpuid=pku,xsaves,xsavec,aperfmperf
EOF
xorriso -as mkisofs -quiet -o "$WORK/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
  -no-emul-boot -boot-load-size 4 -boot-info-table "$ISO" 2>/dev/null
initrd_mb=$(($(stat -c %s "$ISO/initrd.img") / 1048576))
rm -rf "$ROOTFS" "$ISO"

SERIAL="$OUT/serial.log"
LOG="$OUT/bochs.log"
rm -f "$SERIAL" "$LOG"
# Debian's Bochs has no "nogui" display and is built with its debugger:
# the text display draws into /dev/null and the debugger is told to run.
cat >"$WORK/bochsrc" <<EOF
display_library: term
config_interface: textconfig
memory: guest=$MEMORY, host=$MEMORY
cpu: model=$CPU, count=1, ips=200000000, reset_on_triple_fault=0
romimage: file=/usr/share/bochs/BIOS-bochs-latest, options=fastboot
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0-master: type=cdrom, path=$WORK/boot.iso, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$SERIAL
log: $LOG
panic: action=fatal
error: action=report
clock: sync=none, time0=local
speaker: enabled=0
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
EOF
printf 'continue\nquit\n' >"$WORK/debugger.rc"

echo "avx512.sh: booting Bochs ($CPU, ${MEMORY} MB, initramfs ${initrd_mb} MB), limit ${LIMIT} s" >&2
start=$(date +%s)
(cd "$WORK" && TERM=vt100 exec timeout -k 10 "$LIMIT" bochs-bin -q -f bochsrc -rc debugger.rc \
  </dev/null >/dev/null 2>"$WORK/bochs.stderr") &
BOCHS_PID=$!
touch "$SERIAL"

# Follows the console: every line with the elapsed time; the markers give
# each test's status and time.
stamp() {
  local s=$(($(date +%s) - start))
  printf '%02d:%02d:%02d' $((s / 3600)) $((s / 60 % 60)) $((s % 60))
}
declare -a NAMES STATUS SECS
seen_flags=0 done=0 t0=0 cur=-1
while IFS= read -r line; do
  line="${line%$'\r'}"
  if [[ "$line" == ?*"@@hvemu "* ]]; then # output without a final newline
    echo "[$(stamp)] ${line%%@@hvemu *}"
    line="@@hvemu ${line#*@@hvemu }"
  fi
  case "$line" in
    "@@hvemu flags "*)
      flags="${line#@@hvemu flags }"
      seen_flags=1
      echo "[$(stamp)] guest booted; CPU flags:$flags"
      for want in avx512f avx512bw avx512vl avx512_vnni avx512_bf16 amx_tile; do
        if [[ " $flags " == *" $want "* ]]; then echo "    $want: yes"; else echo "    $want: no"; fi
      done
      ;;
    "@@hvemu begin "*)
      read -r _ _ cur name <<<"$line"
      NAMES[$cur]="$name"
      t0=$(date +%s)
      echo "[$(stamp)] === $name"
      ;;
    "@@hvemu end "*)
      read -r _ _ i rc <<<"$line"
      STATUS[$i]="$rc"
      SECS[$i]=$(($(date +%s) - t0))
      echo "[$(stamp)] === ${NAMES[$i]}: exit status $rc, ${SECS[$i]} s"
      cur=-1
      ;;
    "@@hvemu done")
      done=1
      ;;
    *) if [ "$seen_flags" = 1 ]; then echo "[$(stamp)] $line"; fi ;;
  esac
done < <(tail -n +1 -F --pid="$BOCHS_PID" "$SERIAL" 2>/dev/null)
wait "$BOCHS_PID" 2>/dev/null && brc=0 || brc=$?
BOCHS_PID=""
cp "$WORK/bochs.stderr" "$OUT/bochs.stderr" 2>/dev/null || true

echo
echo "avx512.sh: $CPU, $(($(date +%s) - start)) s in all; console log $SERIAL"
failed=0
for i in "${!NAMES[@]}"; do
  st="${STATUS[$i]:-}"
  if [ "$st" = 0 ]; then
    printf '  %-28s passed  %6s s\n' "${NAMES[$i]}" "${SECS[$i]}"
  elif [ -n "$st" ]; then
    printf '  %-28s FAILED  %6s s (exit status %s)\n' "${NAMES[$i]}" "${SECS[$i]}" "$st"
    failed=1
  else
    printf '  %-28s did not finish\n' "${NAMES[$i]}"
    failed=1
  fi
done
if [ "$done" != 1 ]; then
  if [ "$brc" = 124 ] || { [ "$brc" = 137 ] && [ $(($(date +%s) - start)) -ge "$LIMIT" ]; }; then
    echo "avx512.sh: the guest did not finish within ${LIMIT} s (--timeout); Bochs stopped" >&2
    exit 124
  fi
  if [ "$seen_flags" = 0 ]; then
    echo "avx512.sh: the guest never reached its init: see $SERIAL and $LOG" >&2
  else
    echo "avx512.sh: Bochs stopped before the guest finished (status $brc): see $LOG" >&2
  fi
  grep -h -E 'PANIC|FATAL|Kernel panic' "$LOG" "$SERIAL" 2>/dev/null | tail -5 >&2 || true
  exit 1
fi
exit "$failed"
