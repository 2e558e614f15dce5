"""Between two variants a warm worker empties every folder a variant may write
(`gi.fitness.sandboxed.warm_cleaning.empty`). In the sandbox those folders are RAM file systems that
also hold other mounts: /tmp holds the read-only copies of the variant's program and gi's tools,
and the Python installation when it lives under /tmp. Emptying must remove what a variant left
on the RAM file system and never walk into another mount: walking a venv's thousands of
read-only files between every two variants made warm evaluations nearly three times as slow, and
a writable mount inside would lose its files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gi.engine.sandbox.bubblewrap import bubblewrap_available

REPOSITORY = Path(__file__).resolve().parents[2]

#: Run inside bubblewrap: leave files, folders, an unreadable folder and one nested deeper than a
#: path can name on the RAM file system, empty it, and print what is left.
LEAVE_AND_EMPTY = """\
import os, sys
DEPTH = 3000
sys.path.insert(0, sys.argv[1])
from gi.fitness.sandboxed.warm_cleaning import empty
open("/mnt/left.txt", "w").write("x")
os.makedirs("/mnt/folder/inner")
open("/mnt/folder/inner/deep.txt", "w").write("x")
os.makedirs("/mnt/locked")
open("/mnt/locked/file.txt", "w").write("x")
os.chmod("/mnt/locked", 0)
os.makedirs("/mnt/deep")
os.chdir("/mnt/deep")
for _ in range(DEPTH):  # deeper than Python's recursion limit and than the longest path (4096)
    os.mkdir("dd")
    os.chdir("dd")
open("bottom.txt", "w").write("x")
os.chdir("/")
empty("/mnt")
print(sorted(os.listdir("/mnt")))
"""


@pytest.mark.skipif(not bubblewrap_available(), reason="mounts inside a folder need the bubblewrap sandbox")
def test_emptying_a_ram_folder_removes_what_a_variant_left_and_leaves_the_mounts_inside_it(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "sub").mkdir(parents=True)
    (host / "kept.txt").write_text("host file")
    (host / "sub" / "also.txt").write_text("host file")
    # /mnt becomes RAM, with a writable folder of the host mounted inside it; the interpreter
    # and this repository are visible wherever they live (the root is bound read-only first,
    # and /mnt is empty on the host).
    argv = [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/mnt", "--bind", str(host), "/mnt/mounted",
        sys.executable, "-c", LEAVE_AND_EMPTY, str(REPOSITORY),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    # Everything the "variant" left is gone; the mount point stays (a mount cannot be removed).
    assert done.stdout.strip() == "['mounted']"
    # Nothing of the mounted host folder was touched.
    assert (host / "kept.txt").read_text() == "host file"
    assert (host / "sub" / "also.txt").read_text() == "host file"
