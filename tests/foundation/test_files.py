"""petacomm.files: outputs are atomic, never replace an input, honour the umask, write
through symbolic links; inputs that are missing, empty, directories or binary give one-line
errors naming the argument."""

import errno
import os
import re
import stat
import tempfile

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


def test_devices_and_fifos_are_written_into_never_replaced(tmp_path):
    """Renaming over a FIFO or /dev/null would replace it by a regular file (the device
    itself, as root); they are written into instead."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that opening to write succeeds
    try:
        write_text_atomically(fifo, "through the pipe\n")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert os.read(reader, 100) == b"through the pipe\n"
    finally:
        os.close(reader)
    # A device node of its own (never /dev/null: a regression would replace it).
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pass  # not root: no device node to try
    else:
        write_bytes_atomically(null, b"discarded")
        assert stat.S_ISCHR(os.stat(null).st_mode) and os.stat(null).st_rdev == os.makedev(1, 3)
    with pytest.raises(PetacommError, match="--json: cannot write '/dev/fd/987'"):
        write_text_atomically("/dev/fd/987", "x", "--json")  # a descriptor not open
    # A regular file under /dev (tmpfs) is replaced atomically like any other, not appended.
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        shm = f"/dev/shm/petacomm-test-{os.getpid()}.json"
        try:
            write_text_atomically(shm, "first")
            write_text_atomically(shm, "second")
            with open(shm) as handle:
                assert handle.read() == "second"
        finally:
            os.unlink(shm)


def test_dev_stdout_redirected_to_a_file_is_appended_to(tmp_path):
    """`... --output /dev/stdout > out.txt`: what was printed stays, the output follows."""
    import subprocess
    import sys

    out = tmp_path / "out.txt"
    code = (
        "from petacomm.files import write_text_atomically; print('table', flush=True); "
        "write_text_atomically('/dev/stdout', 'mapping\\n', '--output')"
    )
    with open(out, "w") as handle:
        subprocess.run([sys.executable, "-c", code], stdout=handle, check=True)
    assert out.read_text() == "table\nmapping\n"


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


def test_a_missing_directory_is_refused_not_created(tmp_path, monkeypatch):
    """A typo in a path (nodir/x.json) is refused by every output, not created (bench map
    and bench sparse-reduce created it, map and profiler-overhead refused it)."""
    missing = re.escape(f"directory '{tmp_path}/nodir' does not exist")
    with pytest.raises(PetacommError, match=f"^--json: cannot write '.*': {missing}"):
        check_output_path(tmp_path / "nodir" / "x.json", "--json")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PetacommError, match="^--json: cannot write 'nodir/x.json': directory 'no"):
        write_text_atomically("nodir/x.json", "{}", "--json")
    with pytest.raises(PetacommError, match="directory 'nodir/deeper' does not exist"):
        write_text_atomically("nodir/deeper/x.json", "{}", "--json")
    assert sorted(os.listdir(tmp_path)) == []
    (tmp_path / "nodir").mkdir()
    write_text_atomically("nodir/x.json", "{}", "--json")
    assert (tmp_path / "nodir" / "x.json").read_text() == "{}"


def test_a_directory_no_file_can_be_created_in_is_named_with_the_reason(tmp_path, monkeypatch):
    """/proc/version exists, but no temporary file can be created beside it: the error said
    'No such file or directory'."""
    if not os.path.isfile("/proc/version"):
        pytest.skip("no /proc/version")
    with pytest.raises(PetacommError) as err:
        check_output_path("/proc/version", "--output")
    assert str(err.value).startswith("--output: cannot write '/proc/version'")
    assert "No such file" not in str(err.value)
    if os.geteuid() == 0:
        assert "'/proc' does not allow creating files" in str(err.value)
    # Other reasons, whatever mounts this machine has.
    target = tmp_path / "out.json"
    target.write_text("old")
    for code, reason in (
        (errno.EROFS, re.escape(f"'{tmp_path}' is on a read-only file system")),
        (errno.EACCES, re.escape(f"directory '{tmp_path}' not writable")),
    ):

        def refuse(*args, code=code, **kwargs):
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
        with pytest.raises(PetacommError, match=f"^--json: cannot write '.*': {reason}"):
            write_text_atomically(target, "new", "--json")
        monkeypatch.undo()
    assert target.read_text() == "old"


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


def _fifo_nobody_writes(directory) -> str:
    """A named pipe in ``directory``. A read of it would wait for a writer forever: a
    writer opens and closes it a second later, so that such a read ends (with nothing)
    instead of hanging the test."""
    import contextlib
    import threading
    import time

    fifo = os.path.join(directory, "pipe.txt")
    os.mkfifo(fifo)

    def unblock():
        time.sleep(1)
        with contextlib.suppress(OSError):  # nobody reads it: nothing to unblock
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=unblock, daemon=True).start()
    return fifo


def test_a_named_pipe_or_device_is_refused_without_reading_it(tmp_path):
    # A FIFO no program writes blocked the read forever; /dev/zero never ends.
    fifo = _fifo_nobody_writes(tmp_path)
    with pytest.raises(PetacommError, match="^--pattern-file: '.*pipe.txt' is a named pipe"):
        read_text_file(fifo, "--pattern-file")
    with pytest.raises(PetacommError, match="^--hosts: '/dev/null' is a character device, not"):
        read_text_file("/dev/null", "--hosts")
    # The name of an open descriptor (/dev/stdin, the shell's <(...)) is read as a stream.
    read_end, write_end = os.pipe()
    os.write(write_end, b"ranks 4; ring 8\n")
    os.close(write_end)
    try:
        assert read_text_file(f"/dev/fd/{read_end}", "--pattern-file") == "ranks 4; ring 8\n"
    finally:
        os.close(read_end)


def test_an_input_larger_than_the_bound_is_refused_before_it_is_read(tmp_path):
    # /dev/stdin < /dev/zero was read until memory ran out ("out of memory", no option).
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as out:
        out.truncate((256 << 20) + 1)  # sparse: nothing is written, nothing read
    with pytest.raises(
        PetacommError, match="^--pattern-file: '.*huge.txt' is 256 MiB, more than the 256 MiB"
    ):
        read_text_file(huge, "--pattern-file")
    read_end, write_end = os.pipe()  # a stream: its size is known once read
    os.write(write_end, b"x" * 100)
    os.close(write_end)
    try:
        with pytest.raises(PetacommError, match=f"^--hosts: '/dev/fd/{read_end}' holds more"):
            read_text_file(f"/dev/fd/{read_end}", "--hosts", max_bytes=99)
    finally:
        os.close(read_end)
