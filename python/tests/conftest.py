# Shared fixtures of the Python tests: the anasim executable and source tree (set by ctest; see
# python/CMakeLists.txt), and the PNG size reader the plot tests use.
import os
import struct
import subprocess

import pytest

SOURCE_DIR = os.environ.get("ANASIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def cli():
    """Runs the anasim executable (ANASIM_CLI, else build/anasim); returns the CompletedProcess."""
    exe = os.environ.get("ANASIM_CLI", os.path.join(SOURCE_DIR, "build", "anasim"))

    def run(*args, check=True):
        p = subprocess.run([exe, *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"anasim {' '.join(map(str, args))} -> {p.returncode}\n{p.stderr}")
        return p
    return run


def src(*parts):
    return os.path.join(SOURCE_DIR, *parts)


def png_size(path):
    """(width, height) from a PNG's IHDR chunk."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])
