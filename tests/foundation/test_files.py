"""petacomm.files: outputs are atomic, never replace an input, honour the umask, write
through symbolic links; inputs that are missing, empty, directories or binary give one-line
errors naming the argument."""

import os
import stat

import pytest

from petacomm.errors import PetacommError
from petacomm.files import (
    atomic_output,
    check_output_path,
    read_text_file,
    write_bytes_atomically,
    write_text_atomically,
)


@pytest.fixture
def umask():
    """Sets a umask for one test and restores the previous one."""
    previous = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(previous)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_get_0666_minus_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    path = write_text_atomically(tmp_path / "new.txt", "x")
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_an_existing_file_keeps_its_mode(tmp_path, umask):
    umask(0o077)
    path = tmp_path / "shared.txt"
    path.write_text("old")
    path.chmod(0o664)
    write_text_atomically(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o664


def test_a_symlink_is_written_through(tmp_path):
    target = tmp_path / "real" / "model.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_text_atomically(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    # A dangling link creates its target.
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "created.txt")
    write_bytes_atomically(dangling, b"\x00\x01")
    assert dangling.is_symlink() and (tmp_path / "created.txt").read_bytes() == b"\x00\x01"


def test_an_output_never_replaces_an_input(tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("0,1\n1,0\n")
    with pytest.raises(PetacommError, match="--output: .* is also the input of --matrix"):
        write_text_atomically(matrix, "overwritten", "--output", [("--matrix", matrix)])
    # The same file under another name (a symlink, a relative path) is the same input.
    alias = tmp_path / "alias.csv"
    alias.symlink_to(matrix)
    with pytest.raises(PetacommError, match="is also the input of --matrix"):
        check_output_path(alias, "--output", [("--matrix", matrix)])
    os.chdir(tmp_path)
    with pytest.raises(PetacommError, match="is also the input of --matrix"):
        check_output_path("m.csv", "--output", [("--matrix", str(matrix))])
    assert matrix.read_text() == "0,1\n1,0\n"
    check_output_path(tmp_path / "other.csv", "--output", [("--matrix", matrix), ("--x", None)])


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "keep.txt"
    path.write_text("precious")
    with pytest.raises(RuntimeError), atomic_output(path, "--output") as out:
        out.write("half")
        raise RuntimeError("writer failed")
    assert path.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: d, "is a directory"),
        (lambda d: (d / "f").write_text("x") and d / "f" / "below", "is not a directory"),
        (lambda d: "", "empty file name"),
    ],
)
def test_unwritable_outputs_are_named(tmp_path, setup, message):
    with pytest.raises(PetacommError, match=f"^--out: .*{message}"):
        check_output_path(setup(tmp_path), "--out")


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        (b"", "is empty"),
        (b"abc\x00def", "is a binary file"),
        (b"\xff\xfe\x00x", "is a binary file"),
        (b"\xffabc", "is not UTF-8 text"),
    ],
)
def test_unreadable_inputs_are_named(tmp_path, content, message):
    path = tmp_path / "in.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(PetacommError, match=f"^--pattern-file: .*{message}"):
        read_text_file(path, "--pattern-file")
    with pytest.raises(PetacommError, match="^--pattern-file: .* is a directory"):
        read_text_file(tmp_path, "--pattern-file")
