"""memtool: record, analyse and shrink the GPU memory of repetitive CUDA programs.

The package carries the `memtool` executable (bin/memtool) and the preload library
(lib/libmemtool.so) in the layout of an install prefix, so that memtool finds its library as
../lib/libmemtool.so from its own executable. The `memtool` console script runs it.
"""
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
EXECUTABLE = PACKAGE_DIR / "bin" / "memtool"
PRELOAD_LIBRARY = PACKAGE_DIR / "lib" / "libmemtool.so"
