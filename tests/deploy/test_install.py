"""Installation: `make install` and what it puts under the prefix.

Copies the source tree (without build folders) into a temporary folder
under HV_BINARY_DIR and runs there, with HOME set to another temporary
folder, the shell block of README.md's "C library" section as it is
written: `make install PREFIX=$HOME/.local` (with CMAKE_FLAGS=
-DBUILD_TESTING=OFF in the environment, so only the library and the
programs are built), then examples/transcribe.c compiled with nothing but
`pkg-config --cflags --libs hviske` and run on the demo model. Then checks:

  * the exact list of installed files: the programs, libhviske.so.0.1.0
    with its links libhviske.so.0 and libhviske.so, libhviske.a, hviske.h,
    hviske.pc, the speech detector, the man pages; the soname; a DESTDIR
    install of the same build puts the same files under DESTDIR;
  * hviske.pc is relocatable: the DESTDIR tree used where it lies, and a
    `cmake --install build --prefix DIR` of the same build, each build
    examples/transcribe.c with pkg-config into a program that works;
  * hviske.pc: version, flags, and that its Requires.private modules exist
    and, with -pthread -lm, link libhviske.a into a working program;
  * the installed hviske finds the installed speech detector by itself
    (the copy's models/silero-vad, the other place compiled into its search
    path, is deleted first): the same transcript and segments as with
    --vad-model PREFIX/share/hviske/silero-vad, and with the installed
    detector moved away it fails naming PREFIX/share/hviske/silero-vad;
    the installed hviske-server starts with it and hviske-bench runs;
  * the man pages render with `man -l` without warnings, and name every
    option of the program's --help.
  * the Python package, installed with `pip install --no-index python/`
    in a fresh virtual environment, finds the installed library without
    $LD_LIBRARY_PATH and the installed detector, and runs README.md's
    Python example.

Environment: HV_SOURCE_DIR (the source tree), HV_BINARY_DIR (where the
temporary folders go).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import finish, finish_in, readme_section, report, wait_until  # noqa: E402

SOURCE = os.path.abspath(os.environ["HV_SOURCE_DIR"])
BINARY = os.path.abspath(os.environ["HV_BINARY_DIR"])
SENTENCE = "I morgen bliver det gråt med minus tyve grader."
TIMEOUT = 1200  # seconds for the build and install


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(hviske VERSION (\d+)\.(\d+)\.(\d+)", f.read())
    return m.groups()


def readme_block():
    """The sh block of README.md's "C library" section."""
    section = readme_section(SOURCE, "C library")
    if section is None:
        return None
    b = re.search(r"^```sh\n(.*?)^```", section, re.S | re.M)
    return b.group(1) if b and "make install" in b.group(1) else None


def readme_python():
    """The python block of README.md's "Python" section."""
    section = readme_section(SOURCE, "Python")
    b = re.search(r"^```python\n(.*?)^```", section or "", re.S | re.M)
    return b.group(1) if b else None


def base_env(home):
    """The environment without anything that would change where things are
    found or installed."""
    env = dict(os.environ)
    for k in ("PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "HVISKE_VAD_MODEL", "MAKEFLAGS", "MFLAGS",
              "MAKELEVEL", "DESTDIR", "PREFIX", "BUILD", "CMAKE_FLAGS", "CFLAGS", "LDFLAGS"):
        env.pop(k, None)
    env.update(HOME=home, JOBS="2", CMAKE_FLAGS="-DBUILD_TESTING=OFF", LC_ALL="C.UTF-8")
    return env


def run(args, **kw):
    kw.setdefault("timeout", 600)
    try:
        return subprocess.run(args, capture_output=True, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(args, None, e.stdout or b"", e.stderr or b"")


def text(b):
    return (b or b"").decode("utf-8", "replace")


def why(p):
    return (f"[{' '.join(map(str, p.args)) if isinstance(p.args, list) else p.args}] "
            f"rc={p.returncode} out={text(p.stdout)[-600:]!r} err={text(p.stderr)[-1500:]!r}")


def copy_source(dst):
    top_skip = lambda n: n.startswith("build") or n in (".git", ".gl", ".whl")  # noqa: E731

    def ignore(d, names):
        skip = {n for n in names if n in ("node_modules", "__pycache__")}
        if os.path.abspath(d) == SOURCE:
            skip |= {n for n in names if top_skip(n)}
        return skip

    shutil.copytree(SOURCE, dst, ignore=ignore, symlinks=True)
    # make install runs scripts/install-deps.sh, which wants the detector
    # oracle's node packages in place: the source tree's serve
    nm = os.path.join(SOURCE, "research", "vad-oracle", "node_modules")
    if os.path.isdir(nm):
        os.symlink(nm, os.path.join(dst, "research", "vad-oracle", "node_modules"))


def file_list(root):
    """Every file and link under root, relative, with '@' after links."""
    out = set()
    for d, dirs, files in os.walk(root):
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, n)
            out.add(os.path.relpath(p, root) + ("@" if os.path.islink(p) else ""))
    return out


def expected_files(version):
    major, minor, patch = version
    full = f"libhviske.so.{major}.{minor}.{patch}"
    return {
        "bin/hviske", "bin/hviske-server", "bin/hviske-bench", "bin/hviske-quantize",
        f"lib/{full}", f"lib/libhviske.so.{major}@", "lib/libhviske.so@", "lib/libhviske.a",
        "lib/pkgconfig/hviske.pc", "include/hviske.h",
        "include/hviske_output.h",
        "share/hviske/silero-vad/config.json", "share/hviske/silero-vad/model.safetensors",
        "share/hviske/silero-vad/LICENSE", "share/hviske/silero-vad/README.md",
        "share/man/man1/hviske.1", "share/man/man1/hviske-server.1",
        "share/man/man1/hviske-quantize.1",
    }


def check_files(prefix, version):
    want = expected_files(version)
    got = file_list(prefix)
    report("installed files: programs, libhviske.so.X.Y.Z with its links, libhviske.a, "
           "hviske.h, hviske.pc, silero-vad, man pages", got == want,
           f"missing {sorted(want - got)}, unexpected {sorted(got - want)}")
    major, minor, patch = version
    lib = os.path.join(prefix, "lib")
    links = (os.readlink(os.path.join(lib, "libhviske.so")) if os.path.islink(
        os.path.join(lib, "libhviske.so")) else None,
        os.readlink(os.path.join(lib, f"libhviske.so.{major}")) if os.path.islink(
        os.path.join(lib, f"libhviske.so.{major}")) else None)
    report("libhviske.so -> libhviske.so.0 -> libhviske.so.0.1.0",
           links == (f"libhviske.so.{major}", f"libhviske.so.{major}.{minor}.{patch}"),
           f"links {links}")
    p = run(["objdump", "-p", os.path.join(lib, "libhviske.so")])
    report(f"SONAME libhviske.so.{major}",
           re.search(rf"SONAME\s+libhviske\.so\.{major}\n", text(p.stdout)) is not None, why(p))
    with open(os.path.join(SOURCE, "include", "hviske.h"), "rb") as a, \
            open(os.path.join(prefix, "include", "hviske.h"), "rb") as b:
        report("installed hviske.h is include/hviske.h", a.read() == b.read())
    exe = all(os.access(os.path.join(prefix, "bin", n), os.X_OK)
              for n in ("hviske", "hviske-server", "hviske-bench"))
    report("programs are executable", exe)


def check_pkgconfig(prefix, version, env, work):
    env = dict(env, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
    p = run(["pkg-config", "--modversion", "hviske"], env=env)
    report("pkg-config --modversion hviske", text(p.stdout).strip() == ".".join(version),
           why(p))
    p = run(["pkg-config", "--cflags", "--libs", "hviske"], env=env)
    flags = [f[:2] + os.path.normpath(f[2:]) if f[:2] in ("-I", "-L") else f
             for f in text(p.stdout).split()]
    report("pkg-config --cflags --libs hviske: -I, -L of the prefix and -lhviske",
           p.returncode == 0 and f"-I{prefix}/include" in flags and f"-L{prefix}/lib" in flags
           and "-lhviske" in flags, why(p))
    p = run(["pkg-config", "--print-requires-private", "hviske"], env=env)
    reqs = text(p.stdout).split()
    missing = [r for r in reqs if run(["pkg-config", "--exists", r], env=env).returncode != 0]
    report(f"Requires.private modules exist: {' '.join(reqs)}",
           p.returncode == 0 and len(reqs) >= 5 and not missing, f"missing {missing} {why(p)}")
    # libhviske.a with the shared libraries of what it needs: the program
    # must not need libhviske.so
    cflags = text(run(["pkg-config", "--cflags", "hviske"], env=env).stdout).split()
    deplibs = text(run(["pkg-config", "--libs"] + reqs, env=env).stdout).split()
    # and the flags of Libs.private (-pthread -lm, oneDNN's when built with it)
    with open(os.path.join(prefix, "lib", "pkgconfig", "hviske.pc"), encoding="utf-8") as f:
        private = [w for line in f if line.startswith("Libs.private:")
                   for w in line.split(":", 1)[1].split()]
    exe = os.path.join(work, "transcribe-static")
    p = run(["cc", "-o", exe, os.path.join(SOURCE, "examples", "transcribe.c")] + cflags +
            [os.path.join(prefix, "lib", "libhviske.a")] + deplibs + private, env=env)
    if p.returncode != 0:
        report("libhviske.a links with Requires.private and Libs.private", False, why(p))
        return
    p = run([exe, os.path.join(SOURCE, "models", "demo"),
             os.path.join(SOURCE, "examples", "da-example.wav")], env=env)
    ldd = text(run(["ldd", exe]).stdout)
    report("libhviske.a links with Requires.private and Libs.private; the program "
           "transcribes the example without libhviske.so",
           p.returncode == 0 and text(p.stdout).strip() == SENTENCE and "libhviske" not in ldd,
           why(p) + " ldd: " + ldd[:300])


def check_detector(prefix, env, copy):
    """The installed hviske finds the installed detector by itself."""
    shutil.rmtree(os.path.join(copy, "models", "silero-vad"))
    hv = os.path.join(prefix, "bin", "hviske")
    vad = os.path.join(prefix, "share", "hviske", "silero-vad")
    demo = os.path.join(SOURCE, "models", "demo")
    wav = os.path.join(SOURCE, "examples", "da-example.wav")
    p = run([hv, "-m", demo, "-q", wav], env=env)
    report("installed hviske transcribes the example with the installed detector "
           "(the build tree's copy deleted, $HVISKE_VAD_MODEL unset)",
           p.returncode == 0 and text(p.stdout).strip() == SENTENCE, why(p))
    a = run([hv, "-m", demo, "-q", "--json", wav], env=env)
    b = run([hv, "-m", demo, "-q", "--json", "--vad-model", vad, wav], env=env)
    c = run([hv, "-m", demo, "-q", "--json", "--chunking", "energy", wav], env=env)
    try:
        sa, sb, sc = (json.loads(text(r.stdout))["chunks"] for r in (a, b, c))
        ok = sa == sb and sa != sc and sa[0]["text"] == SENTENCE
    except (ValueError, KeyError, IndexError):
        ok, sa, sb, sc = False, None, None, None
    report("its segments equal those with --vad-model PREFIX/share/hviske/silero-vad "
           "(and differ from --chunking energy)", ok,
           f"{sa} / {sb} / {sc} {why(a)} {why(b)}")
    away = vad + "-away"
    os.rename(vad, away)
    try:
        p = run([hv, "-m", demo, "-q", wav], env=env)
    finally:
        os.rename(away, vad)
    report("with the installed detector moved away it fails, naming "
           "PREFIX/share/hviske/silero-vad",
           p.returncode == 1 and vad in text(p.stderr) and "no speech detector" in text(p.stderr),
           why(p))

    log = os.path.join(copy, "server.log")
    with open(log, "wb") as f:
        srv = subprocess.Popen([os.path.join(prefix, "bin", "hviske-server"), "-m", demo,
                                "--port", "0", "-t", "1"], stdout=f, stderr=f, env=env)
    try:
        def listening():
            with open(log, encoding="utf-8", errors="replace") as f:
                return "listening on" in f.read() or srv.poll() is not None
        wait_until(listening, timeout=120)
        up = srv.poll() is None
    finally:
        if srv.poll() is None:
            srv.send_signal(signal.SIGTERM)
        try:
            rc = srv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
            rc = srv.wait()
    with open(log, encoding="utf-8", errors="replace") as f:
        out = f.read()
    report("installed hviske-server starts with the installed detector and stops on SIGTERM",
           up and rc == 0 and "listening on" in out, f"rc={rc} log={out[-800:]!r}")
    p = run([os.path.join(prefix, "bin", "hviske-bench"), "-m", demo, "-t", "1", "--runs", "1",
             "--warmup", "0", "--json", wav], env=env)
    report("installed hviske-bench runs with the installed detector", p.returncode == 0,
           why(p))


def check_python(prefix, env, tmp, copy):
    """The Python package, installed with plain pip in a fresh virtual
    environment from the copy's python/ (whose build folder installed the
    library), finds the installed library without $LD_LIBRARY_PATH (its
    path recorded at install time) and the installed detector next to it."""
    venv = os.path.join(tmp, "venv")
    p = run([sys.executable, "-m", "venv", venv], env=env)
    penv = {k: v for k, v in env.items() if not k.startswith(("PIP_", "PKG_CONFIG_"))}
    penv.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore")
    if p.returncode == 0:
        p = run([os.path.join(venv, "bin", "pip"), "install", "--no-index",
                 os.path.join(copy, "python")], env=penv, cwd=tmp)
    if p.returncode != 0:
        report("python3 -m venv, then pip install --no-index python/", False, why(p))
        return
    py = os.path.join(venv, "bin", "python")
    code = ("import hviske\n"
            "m = hviske.Model(%r, threads=2)\n"
            "r = m.transcribe(%r)\n"
            "print(m.library_path); print(m.vad_model); print(r.text)\n"
            % (os.path.join(SOURCE, "models", "demo"),
               os.path.join(SOURCE, "examples", "da-example.wav")))
    cenv = {k: v for k, v in penv.items()
            if k not in ("HVISKE_LIBRARY", "HVISKE_VAD_MODEL", "LD_LIBRARY_PATH")}
    p = run([py, "-c", code], env=cenv, cwd=tmp)
    out = text(p.stdout).strip().split("\n")
    want = [os.path.realpath(os.path.join(prefix, "lib", "libhviske.so.0")),
            os.path.join(prefix, "share", "hviske", "silero-vad"), SENTENCE]
    report("pip install --no-index python/ in a fresh venv after make install: the package "
           "finds the installed library (no $LD_LIBRARY_PATH) and detector and transcribes "
           "the example", p.returncode == 0 and out == want, f"{out} != {want} {why(p)}")

    # the README's example as written, from the source tree's root
    block = readme_python()
    if not block:
        report("README's Python section has a python block", False)
        return
    p = run([py, "-c", block], env=cenv, cwd=SOURCE)
    out = text(p.stdout).strip().split("\n")
    words, prev = [], 0.0
    for line in out[1:]:
        parts = line.split()
        try:
            a, b = float(parts[0]), float(parts[1])
        except (ValueError, IndexError):
            break
        if not prev <= a <= b:
            break
        prev = b
        words.append(" ".join(parts[2:]))
    report("README's Python example, as written: the sentence, then its words in time order",
           p.returncode == 0 and out[0] == SENTENCE and " ".join(words) == SENTENCE,
           f"{out} {why(p)}")


def help_options(prog, env):
    p = run([prog, "--help"], env=env)
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", text(p.stdout)))


def check_pc_program(prefix, label, env, work):
    """A C program built with nothing but `pkg-config --cflags --libs hviske`
    against the tree under prefix transcribes the example."""
    env = dict(env, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
    p = run(["pkg-config", "--cflags", "--libs", "hviske"], env=env)
    exe = os.path.join(work, "transcribe-" + label.split()[0])
    if p.returncode == 0:
        p = run(["cc", "-o", exe, os.path.join(SOURCE, "examples", "transcribe.c")] +
                text(p.stdout).split(), env=env)
    if p.returncode == 0:
        p = run([exe, os.path.join(SOURCE, "models", "demo"),
                 os.path.join(SOURCE, "examples", "da-example.wav")],
                env=dict(env, LD_LIBRARY_PATH=os.path.join(prefix, "lib")))
    report(f"{label}: hviske.pc builds a program that transcribes the example",
           p.returncode == 0 and text(p.stdout).strip() == SENTENCE, why(p))


def check_man(prefix, env):
    for name in ("hviske", "hviske-server", "hviske-quantize"):
        page = os.path.join(prefix, "share", "man", "man1", name + ".1")
        p = run(["man", "--warnings", "-l", page], env=dict(env, MANWIDTH="80", MANPAGER="cat",
                                                              PAGER="cat"))
        out = text(p.stdout)
        report(f"man -l {name}.1 renders without warnings",
               p.returncode == 0 and not p.stderr and "NAME" in out and "OPTIONS" in out, why(p))
        with open(page, encoding="utf-8") as f:
            src = re.sub(r"\\f[BIRP]", "", f.read()).replace("\\-", "-")
        opts = help_options(os.path.join(prefix, "bin", name), env)
        missing = sorted(o for o in opts if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])",
                                                           src))
        report(f"{name}.1 names every option of {name} --help ({len(opts)})",
               len(opts) > (4 if name == "hviske-quantize" else 10) and not missing,
               f"missing {missing}")


def main():
    version = project_version()
    block = readme_block()
    if not block:
        report("README's C library section has an sh block with make install", False)
        return finish()
    tmp = tempfile.mkdtemp(prefix="test-install-", dir=BINARY)
    home, copy = os.path.join(tmp, "home"), os.path.join(tmp, "src")
    os.mkdir(home)
    copy_source(copy)
    env = base_env(home)
    prefix = os.path.join(home, ".local")

    p = run(["bash", "-ec", block], cwd=copy, env=env, timeout=TIMEOUT)
    out = text(p.stdout).strip().split("\n")
    report("README's C library commands, as written: make install, cc with pkg-config, "
           "./transcribe prints the sentence", p.returncode == 0 and out[-1] == SENTENCE, why(p))
    if not os.path.isdir(prefix):
        return finish()
    check_files(prefix, version)

    dest = os.path.join(tmp, "dest")
    p = run(["make", "install", "PREFIX=" + prefix, "DESTDIR=" + dest], cwd=copy, env=env,
            timeout=TIMEOUT)
    got = file_list(dest + prefix) if os.path.isdir(dest + prefix) else set()
    report("make install DESTDIR=D: the same files under D/PREFIX, nothing else",
           p.returncode == 0 and got == expected_files(version) and
           file_list(dest) == {prefix.lstrip("/") + "/" + f for f in got}, why(p))

    check_pc_program(dest + prefix, "make install DESTDIR=D (used in place)", env, tmp)
    other = os.path.join(tmp, "other-prefix")
    p = run(["cmake", "--install", os.path.join(copy, "build"), "--prefix", other], cwd=copy,
            env=env, timeout=TIMEOUT)
    report("cmake --install build --prefix DIR", p.returncode == 0, why(p))
    check_pc_program(other, "cmake --install --prefix DIR", env, tmp)

    check_pkgconfig(prefix, version, env, tmp)
    check_man(prefix, env)
    check_detector(prefix, env, copy)
    check_python(prefix, env, tmp, copy)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
