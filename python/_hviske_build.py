"""The PEP 517 build backend of the hviske Python package (pyproject.toml's
`build-backend`, found through `backend-path`), written with the standard
library alone so that `pip install ./python` needs nothing from an index:
pip's isolated build environment starts empty, and it works offline, in a
fresh virtual environment, and with `--no-build-isolation` alike.

The package is Python over ctypes, so a wheel is a zip of hviske/ with
the metadata of pyproject.toml's [project] table (docs: python/README.md
"Installing"), and the library it loads: the installed one, recorded in
hviske/_installed.py so that the package finds it without
$LD_LIBRARY_PATH, or else one built for the wheel. The library is, in
order:

  * the file $HVISKE_LIBRARY names, when it is set at install time;
  * the library of the hviske source tree's build folder (../build), at
    the prefix its CMakeCache.txt installs into, when it is installed
    there (`make install PREFIX=...` from the same tree);
  * `pkg-config --variable=libdir hviske` (which honours
    $PKG_CONFIG_PATH), when libhviske.so.0 is there;
  * else libhviske built with CMake from the C sources around this folder
    (or those an sdist carries) by _hviske_clib.py, carried in the wheel
    as hviske/libhviske.so.0 with the speech detector in
    hviske/silero-vad/ (a platform wheel then). Without sources, or with a
    build tool or library missing, the install fails, naming what to
    install.

Hooks: build_wheel, build_sdist (the C sources in hviske-src/),
build_editable (a .pth file naming this folder; a library built for it is
put in hviske/ here), the get_requires_for_* hooks (nothing) and
prepare_metadata_for_build_*."""
import base64
import calendar
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile

import _hviske_clib as clib

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "hviske"
SONAME = "libhviske.so.0"
PURE_TAG = "py3-none-any"


# ------------------------------------------------------------ pyproject

_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def _unescape(s):
    def one(m):
        e = m.group(1)
        return chr(int(e[1:], 16)) if e[0] in "uU" else _ESCAPES[e]
    return re.sub(r'\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[btnfr"\\])', one, s)


def _toml_value(text):
    """One value of the TOML subset pyproject.toml uses: a basic string,
    an array of them, or an inline table of strings."""
    text = text.strip()
    if text.startswith('"'):
        m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', text)
        if not m:
            raise ValueError(f"pyproject.toml: cannot read the string {text}")
        return _unescape(m.group(1))
    if text.startswith("["):
        return [_toml_value(v) for v in re.findall(r'"(?:[^"\\]|\\.)*"', text)]
    if text.startswith("{"):
        return {k: _toml_value(v)
                for k, v in re.findall(r'([A-Za-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*")', text)}
    raise ValueError(f"pyproject.toml: cannot read the value {text}")


def parse_toml_subset(text):
    """pyproject.toml read without tomllib (Python < 3.11): [tables] of
    `key = value` lines, values as _toml_value reads them, arrays over
    several lines, # comments."""
    out, table, pending = {}, None, None
    for raw in text.splitlines():
        line = raw.strip()
        if pending is not None:
            pending[1].append(line)
            if line.startswith("]"):
                table[pending[0]] = _toml_value(" ".join(pending[1]))
                pending = None
            continue
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", line)
        if m:
            table = out
            for part in m.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        m = re.fullmatch(r"([A-Za-z0-9_-]+)\s*=\s*(.*)", line)
        if not m or table is None:
            raise ValueError(f"pyproject.toml: cannot read the line {raw!r}")
        key, value = m.groups()
        if value == "[" or (value.startswith("[") and not value.rstrip().endswith("]")):
            pending = (key, [value])
        else:
            table[key] = _toml_value(value)
    return out


def read_pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        return parse_toml_subset(data.decode("utf-8"))
    return tomllib.loads(data.decode("utf-8"))


KNOWN = {"name", "version", "description", "readme", "requires-python", "license",
         "classifiers", "dependencies", "optional-dependencies", "urls"}


def metadata():
    """The core metadata (METADATA / PKG-INFO) of [project], and the
    normalized name and version."""
    project = read_pyproject()["project"]
    unknown = sorted(set(project) - KNOWN)
    if unknown:
        raise ValueError(f"pyproject.toml: [project] keys this backend does not write: "
                         f"{', '.join(unknown)}")
    name, version = project["name"], project["version"]
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    if "license" in project:
        lines.append(f"License: {project['license']['text']}")
    for label, url in project.get("urls", {}).items():
        lines.append(f"Project-URL: {label}, {url}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    body = ""
    if "readme" in project:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, project["readme"]), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body, re.sub(r"[-_.]+", "_", name).lower(), version


# ------------------------------------------------------ the library

def _cmake_cache(build):
    values = {}
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8",
                  errors="replace") as f:
            for line in f:
                m = re.match(r"([A-Za-z0-9_]+):[A-Z]+=(.*)", line.rstrip("\n"))
                if m:
                    values[m.group(1)] = m.group(2)
    except OSError:
        pass
    return values


def installed_library():
    """The libhviske.so.0 to record (an absolute path), or None: build the
    library then. A $HVISKE_LIBRARY that names no file is a BuildError."""
    env = os.environ.get("HVISKE_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise clib.BuildError(f"hviske: $HVISKE_LIBRARY names {env}, which is no file")
        return os.path.abspath(env)
    cache = _cmake_cache(os.path.join(os.path.dirname(ROOT), "build"))
    prefix, libdir = cache.get("CMAKE_INSTALL_PREFIX"), cache.get("CMAKE_INSTALL_LIBDIR", "lib")
    if prefix:
        path = os.path.join(prefix, libdir, SONAME)
        if os.path.isfile(path):
            return path
    try:
        p = subprocess.run(["pkg-config", "--variable=libdir", "hviske"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = p.stdout.strip()
    path = os.path.join(libdir, SONAME) if p.returncode == 0 and libdir else None
    return path if path and os.path.isfile(path) else None


def installed_module(lib):
    return ('"""Written by python/_hviske_build.py when the wheel was built: the\n'
            'libhviske that was installed then (None: the wheel carries its own,\n'
            'hviske/libhviske.so.0)."""\n'
            "from typing import Optional\n\n"
            f"LIBRARY: Optional[str] = {lib!r}\n")


def library():
    """(the installed library to record, None) or (None, the library built
    for the wheel, a clib.Built to close)."""
    lib = installed_library()
    if lib:
        return lib, None
    src = clib.sources()
    if src is None:
        raise clib.BuildError(
            "hviske: no libhviske is installed (none named by $HVISKE_LIBRARY, installed from "
            "the source tree's build folder or found by pkg-config), and there are no hviske "
            f"C sources around {ROOT} to build it from: install the library first (make "
            "install in the hviske source tree), or install the python/ folder of a hviske "
            "source tree")
    return None, clib.Built(src)


# --------------------------------------------------------- archives

def _package_files():
    """(path in the archive, path on disk) of every file of hviske/."""
    out = []
    for d, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for n in sorted(files):
            if n.endswith((".py", ".typed")) and n != "_installed.py":
                p = os.path.join(d, n)
                out.append((os.path.relpath(p, ROOT).replace(os.sep, "/"), p))
    return out


def _date_time():
    t = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01
    return time.gmtime(max(t, 315532800))[:6]


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, name, data, executable=False):
        info = zipfile.ZipInfo(name, _date_time())
        info.external_attr = (0o755 if executable else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self.record.append(f"{name},sha256={digest.decode()},{len(data)}")

    def close(self, dist_info):
        name = f"{dist_info}/RECORD"
        self.record.append(f"{name},,")
        info = zipfile.ZipInfo(name, _date_time())
        info.external_attr = 0o644 << 16
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def _platform_tag():
    """This interpreter's platform, as a wheel's tag (linux_x86_64): a wheel
    with the library built for this machine."""
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def _dist_info_files(meta, tag=PURE_TAG):
    wheel = ("Wheel-Version: 1.0\nGenerator: hviske _hviske_build.py\n"
             f"Root-Is-Purelib: {'true' if tag == PURE_TAG else 'false'}\nTag: {tag}\n")
    return {"METADATA": meta, "WHEEL": wheel, "top_level.txt": PACKAGE + "\n"}


def _in_place(built):
    """An editable install's library: built's files in hviske/ here."""
    for arc, path, _ in built.files(PACKAGE):
        dst = os.path.join(ROOT, *arc.split("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(path, dst + ".tmp")
        os.replace(dst + ".tmp", dst)


def _build(wheel_directory, editable):
    meta, name, version = metadata()
    lib, built = library()
    try:
        tag = _platform_tag() if built and not editable else PURE_TAG
        dist_info = f"{name}-{version}.dist-info"
        filename = f"{name}-{version}-{tag}.whl"
        w = _Wheel(os.path.join(wheel_directory, filename))
        try:
            if editable:
                if built:
                    _in_place(built)
                w.add(f"{name}.pth", (ROOT + "\n").encode("utf-8"))
            else:
                files = [(arc, path, False) for arc, path in _package_files()]
                for arc, path, executable in files + (built.files(PACKAGE) if built else []):
                    with open(path, "rb") as f:
                        w.add(arc, f.read(), executable)
                w.add(f"{PACKAGE}/_installed.py", installed_module(lib).encode("utf-8"))
            for n, text in _dist_info_files(meta, tag).items():
                w.add(f"{dist_info}/{n}", text.encode("utf-8"))
            w.close(dist_info)
        except BaseException:
            w.zip.close()
            os.unlink(os.path.join(wheel_directory, filename))
            raise
    finally:
        if built:
            built.close()
    return filename


def _prepare_metadata(metadata_directory):
    meta, name, version = metadata()
    dist_info = f"{name}-{version}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for n, text in _dist_info_files(meta).items():
        with open(os.path.join(metadata_directory, dist_info, n), "w", encoding="utf-8") as f:
            f.write(text)
    return dist_info


# ------------------------------------------------------------ hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def _without_traceback(build):
    """build(), a BuildError's message alone on standard error (pip shows
    it) and exit status 1: what to install, not where in this file."""
    try:
        return build()
    except clib.BuildError as e:
        print(e, file=sys.stderr)
        raise SystemExit(1) from None


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _without_traceback(lambda: _build(wheel_directory, editable=False))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _without_traceback(lambda: _build(wheel_directory, editable=True))


def build_sdist(sdist_directory, config_settings=None):
    meta, name, version = metadata()
    base = f"{name}-{version}"
    filename = f"{base}.tar.gz"
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("_hviske_build.py", os.path.join(ROOT, "_hviske_build.py")),
             ("_hviske_clib.py", os.path.join(ROOT, "_hviske_clib.py")),
             ("README.md", os.path.join(ROOT, "README.md"))] + _package_files()
    src = clib.sources()
    if src:  # so that a wheel built from the sdist can build the library
        files += [(f"{clib.SDIST_SOURCES}/{rel.replace(os.sep, '/')}", path)
                  for rel, path in clib.source_files(src)]
    mtime = calendar.timegm(_date_time())

    def add(tar, arc, data):
        info = tarfile.TarInfo(f"{base}/{arc}")
        info.size, info.mode, info.mtime = len(data), 0o644, mtime
        tar.addfile(info, io.BytesIO(data))
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz",
                      format=tarfile.PAX_FORMAT) as tar:
        add(tar, "PKG-INFO", meta.encode("utf-8"))
        for arc, path in files:
            with open(path, "rb") as f:
                add(tar, arc, f.read())
    return filename
