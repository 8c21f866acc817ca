"""PEP 517 build backend of the memtool wheel (standard library only, so it builds offline).

A wheel is a zip of the files to install plus a .dist-info folder (PEP 427). Ours holds the
Python package memtool/ (packaging/python/memtool) and, inside it, what
`cmake --install --component runtime --strip` puts under a prefix: bin/memtool and
lib/libmemtool.so. The wheel's platform tag is read from those binaries: manylinux_X_Y for the
newest glibc symbol version they need (2.17 on x86_64 with compat/'s pins, MEMTOOL_GLIBC_PINS;
2.34 without them), so pip refuses it on a machine whose glibc is older, instead of the loader
failing later (packaging/README.md).

config_settings (pip wheel --config-settings KEY=VALUE):
  build-dir   an existing CMake build of this tree to pack as it is (nothing is built);
              default: configure and build memtool and memtool_preload in <repo>/build-wheel
  build-type  CMAKE_BUILD_TYPE of that build (default Release)
The environment variable MEMTOOL_WHEEL_BUILD_DIR is read when build-dir is not given.
"""
import base64
import hashlib
import os
import platform
import re
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGING_DIR = Path(__file__).resolve().parent.parent
REPO = PACKAGING_DIR.parent.parent
NAME = "memtool"
GLIBC_FLOOR_IF_UNKNOWN = (2, 34)  # without objdump: the floor of a build without compat/'s pins


def _version() -> str:
    text = (REPO / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*memtool\s+VERSION\s+([0-9.]+)", text)
    if not match:
        raise RuntimeError("no project(memtool VERSION ...) in CMakeLists.txt")
    return match.group(1)


def _say(message: str) -> None:
    sys.stderr.write(f"memtool wheel: {message}\n")


def _run(command) -> None:
    _say(" ".join(str(part) for part in command))
    subprocess.run([str(part) for part in command], check=True, stdout=sys.stderr)


def _build_dir(config_settings) -> Path:
    settings = config_settings or {}
    given = settings.get("build-dir") or os.environ.get("MEMTOOL_WHEEL_BUILD_DIR")
    if given:
        build = Path(given).resolve()
        if not (build / "CMakeCache.txt").is_file():
            raise RuntimeError(f"build-dir {build}: not a CMake build folder (no CMakeCache.txt)")
        return build
    build = REPO / "build-wheel"
    build_type = settings.get("build-type", "Release")
    _run(["cmake", "-S", REPO, "-B", build, f"-DCMAKE_BUILD_TYPE={build_type}",
          "-DMEMTOOL_BUILD_TESTS=OFF", "-DMEMTOOL_BUILD_BENCH=OFF"])
    _run(["cmake", "--build", build, "--target", "memtool", "memtool_preload",
          "-j", str(os.cpu_count() or 2)])
    return build


def _glibc_floor(binaries) -> tuple:
    """The newest GLIBC_x.y symbol version the binaries need (objdump -T), or the floor of a
    build without compat/'s pins when objdump is missing. A binary objdump cannot read is an
    error, never a guess."""
    newest = (0, 0)
    for binary in binaries:
        try:
            dump = subprocess.run(["objdump", "-T", str(binary)], check=True, capture_output=True, text=True).stdout
        except FileNotFoundError:
            return GLIBC_FLOOR_IF_UNKNOWN
        except subprocess.CalledProcessError as error:
            raise RuntimeError(f"objdump -T {binary}: {error.stderr.strip()}") from error
        for major, minor in re.findall(r"\bGLIBC_([0-9]+)\.([0-9]+)", dump):
            newest = max(newest, (int(major), int(minor)))
    return newest if newest != (0, 0) else GLIBC_FLOOR_IF_UNKNOWN


def _record_line(archive_name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{archive_name},sha256={digest},{len(data)}"


def _metadata(version: str) -> str:
    readme = (REPO / "README.md").read_text()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: Record, analyse and shrink the GPU memory of repetitive CUDA programs\n"
            "Requires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n" + readme)


def _tag(floor) -> str:
    machine = platform.machine()
    return f"py3-none-manylinux_{floor[0]}_{floor[1]}_{machine}"


def _write_wheel(wheel_directory: Path, files, version: str, tag: str) -> str:
    """files: (archive name, bytes, executable) of the package; adds the .dist-info."""
    dist_info = f"{NAME}-{version}.dist-info"
    entry_points = "[console_scripts]\nmemtool = memtool._cli:main\n"
    wheel = f"Wheel-Version: 1.0\nGenerator: memtool_wheel\nRoot-Is-Purelib: false\nTag: {tag}\n"
    all_files = list(files) + [
        (f"{dist_info}/METADATA", _metadata(version).encode(), False),
        (f"{dist_info}/WHEEL", wheel.encode(), False),
        (f"{dist_info}/entry_points.txt", entry_points.encode(), False),
    ]
    record = [_record_line(name, data) for name, data, _ in all_files] + [f"{dist_info}/RECORD,,"]
    all_files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), False))
    file_name = f"{NAME}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel_directory / file_name, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data, executable in all_files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            # The file type too: pip makes a file executable only when the mode is a regular
            # file's with an executable bit.
            info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
            archive.writestr(info, data)
    return file_name


# ---- PEP 517 hooks ---------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    build = _build_dir(config_settings)
    with tempfile.TemporaryDirectory(prefix="memtool-wheel-") as staging:
        prefix = Path(staging)
        _run(["cmake", "--install", build, "--prefix", prefix, "--component", "runtime", "--strip"])
        executable = prefix / "bin" / "memtool"
        library = prefix / "lib" / "libmemtool.so"
        for needed in (executable, library):
            if not needed.is_file():
                raise RuntimeError(f"{needed.relative_to(prefix)} is not in the install of {build}: build memtool "
                                   "and memtool_preload there first")
        files = []
        for source in sorted((PACKAGING_DIR / "memtool").glob("*.py")):
            files.append((f"memtool/{source.name}", source.read_bytes(), False))
        files.append(("memtool/bin/memtool", executable.read_bytes(), True))
        files.append(("memtool/lib/libmemtool.so", library.read_bytes(), False))
        tag = _tag(_glibc_floor([executable, library]))
        name = _write_wheel(Path(wheel_directory), files, version, tag)
    _say(f"wrote {name}")
    return name


if __name__ == "__main__":  # python3 memtool_wheel.py OUT_DIR [BUILD_DIR]
    settings = {"build-dir": sys.argv[2]} if len(sys.argv) > 2 else None
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    print(build_wheel(sys.argv[1], settings))
