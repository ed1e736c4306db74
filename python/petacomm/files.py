"""Reading and writing files the way every petacomm tool must: clear errors, atomic writes.

Writing: a file is written to a temporary name in the target's directory, flushed to disk,
then renamed over the target, so a reader never sees it half-written and an existing file
survives any failure. These rules hold for every output:

* an output never replaces one of the command's inputs (``report X -o X`` is refused);
* the file gets the permissions a plain ``open()`` would give it: an existing file keeps its
  mode, a new one gets ``0666`` minus the umask (the temporary file's private ``0600`` is
  not left behind);
* a symbolic link at the output path is written *through*: its target is replaced and the
  link stays (as ``cp`` and shell redirection do); a dangling link creates its target;
* the directory must exist: it is never created (a typo in a path would silently create
  directories), and a new file must be creatable in it (tried, since permissions do not
  tell: root, read-only mounts, /proc);
* a device node, FIFO or socket, and the name of an open descriptor (``/dev/stdout``,
  ``/dev/fd/3``, ``/proc/self/fd/1``), is written into and never replaced: renaming a file
  over ``/dev/null`` would replace the device itself (as root), and over ``/dev/stdout``
  the file the shell redirected the command's output to. Such an output is appended to,
  as ``>>`` does.

Commands call :func:`check_output_path` while checking their arguments, before any long
work, and then one of the ``write_*_atomically`` functions (or :func:`atomic_output` for
writers that want a file object, such as matplotlib).

Reading: :func:`read_text_file` and :func:`read_bytes_file` turn every way a path can be
wrong (missing, a directory, a named pipe or device, unreadable, empty, not text) into a
one-line :class:`PetacommError` naming the argument.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from petacomm.errors import PetacommError

# (argument, path) pairs naming a command's input files, e.g. [("--matrix", "m.csv")].
Inputs = Iterable[tuple[str, "str | os.PathLike | None"]]


def _real_target(path: str | os.PathLike) -> Path:
    """The file a write to ``path`` really replaces: symbolic links followed (also a dangling
    one, whose target is then created)."""
    return Path(os.path.realpath(path))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


# The names of an open descriptor (``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``).
_DESCRIPTOR_NAME = re.compile(r"/dev/(stdin|stdout|stderr|fd/\d+)|/proc/(self|\d+)/fd/\d+")


def _written_in_place(path: str | os.PathLike) -> bool:
    """Whether ``path`` is written into rather than replaced (module docstring). A regular
    file elsewhere under /dev (/dev/shm) is replaced like any other."""
    if _DESCRIPTOR_NAME.fullmatch(os.path.abspath(path)):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not os.path.isdir(path)
    except (OSError, ValueError):
        return False


def refuse_empty_names(named: Inputs) -> None:
    """PetacommError naming the first option given an empty file name: '' names no file,
    and a command testing ``if args.output:`` would take it for the option left out (and
    use its default file) without a word."""
    for argument, value in named:
        if value is not None and not os.fspath(value):
            raise PetacommError(f"{argument}: empty file name")


def check_output_path(
    path: str | os.PathLike, argument: str = "output", inputs: Inputs = ()
) -> Path:
    """Checks, before any work is done, that ``path`` can be written and is none of the
    ``inputs``; returns the real target. Raises PetacommError naming ``argument``."""
    text = os.fspath(path)
    if not text:
        raise PetacommError(f"{argument}: empty file name")
    if "\0" in text:
        raise PetacommError(f"{argument}: the file name contains a NUL byte")
    if _written_in_place(path):
        if not os.path.exists(path):
            raise PetacommError(f"{argument}: cannot write '{text}': no such file or device")
        if os.path.isdir(path):
            raise PetacommError(f"{argument}: '{text}' is a directory")
        if not os.access(path, os.W_OK):
            raise PetacommError(f"{argument}: cannot write '{text}' (not writable)")
        return Path(path)
    target = _real_target(path)
    for input_argument, input_path in inputs:
        if input_path is None or not os.fspath(input_path):
            continue
        source = _real_target(input_path)
        if _same_file(target, source):
            raise PetacommError(
                f"{argument}: '{text}' is also the input of {input_argument}; refusing to "
                "overwrite an input (write to another file)"
            )
    if target.is_dir():
        raise PetacommError(f"{argument}: '{text}' is a directory")
    existing = target.parent
    while not existing.exists():
        if existing == existing.parent:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise PetacommError(f"{argument}: cannot write '{text}' ('{existing}' is not a directory)")
    if existing != target.parent:  # a typo in a path must not create directories
        given = os.path.dirname(text)
        missing = given if given and not os.path.isdir(given) else target.parent
        raise PetacommError(
            f"{argument}: cannot write '{text}': directory '{missing}' does not exist"
        )
    if target.exists() and not os.access(target, os.W_OK):
        raise PetacommError(f"{argument}: cannot write '{text}' (file not writable)")
    reason = why_no_file_can_be_created(target.parent, f".{target.name}.")
    if reason is not None:
        raise PetacommError(f"{argument}: cannot write '{text}': {reason}")
    return target


def why_no_file_can_be_created(directory: Path, prefix: str, output: bool = True) -> str | None:
    """None when a file can be created in ``directory`` (one is, then removed: permissions
    do not tell, as root, on read-only mounts or in /proc), else why not
    (:func:`cannot_create_reason`)."""
    try:
        handle, probe = tempfile.mkstemp(prefix=prefix, dir=directory)
    except OSError as err:
        return cannot_create_reason(directory, err, output)
    os.close(handle)
    os.unlink(probe)
    return None


def cannot_create_reason(directory: Path, err: OSError, output: bool = True) -> str:
    """Why no file could be made in ``directory`` (an ``output`` is written to a temporary
    one beside it, then renamed over it): the reason, not errno's words alone (/proc answers
    'No such file or directory' for a directory that exists)."""
    if err.errno == errno.EROFS:
        return f"'{directory}' is on a read-only file system"
    if err.errno in (errno.EACCES, errno.EPERM):
        return f"directory '{directory}' not writable ({err.strerror})"
    if err.errno == errno.ENOENT and directory.is_dir():
        why = (
            " (outputs are written to a new file in the same directory, then renamed over the "
            "old one)"
        )
        return f"'{directory}' does not allow creating files" + (why if output else "")
    return f"cannot create a file in '{directory}' ({err.strerror})"


def _new_file_mode(target: Path) -> int:
    """The mode open() would give: an existing file keeps its own, a new one 0666 - umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        pass
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_output(
    path: str | os.PathLike, argument: str = "output", binary: bool = False, inputs: Inputs = ()
) -> Iterator:
    """A file object whose contents replace ``path`` atomically when the block ends without
    an exception (nothing is replaced otherwise). The directory must exist."""
    target = check_output_path(path, argument, inputs)
    shown = os.fspath(path)
    if _written_in_place(path):
        try:
            with open(path, "ab" if binary else "a", **({} if binary else _TEXT)) as out:
                yield out
        except OSError as err:
            raise PetacommError(f"{argument}: cannot write '{shown}': {err.strerror}") from err
        return
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as err:
        reason = cannot_create_reason(target.parent, err)
        raise PetacommError(f"{argument}: cannot write '{shown}': {reason}") from err
    try:
        with os.fdopen(handle, "wb" if binary else "w", **({} if binary else _TEXT)) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, _new_file_mode(target))
        os.replace(temporary, target)
    except BaseException as err:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise PetacommError(f"{argument}: cannot write '{shown}': {err.strerror}") from err
        raise


_TEXT = {"encoding": "utf-8", "newline": ""}


def write_text_atomically(
    path: str | os.PathLike, text: str, argument: str = "output", inputs: Inputs = ()
) -> Path:
    """Writes ``text`` (UTF-8) to ``path`` atomically; PetacommError names ``argument`` and
    the reason on failure. The directory must exist (it is not created)."""
    with atomic_output(path, argument, inputs=inputs) as out:
        out.write(text)
    return Path(path)


def write_bytes_atomically(
    path: str | os.PathLike, data: bytes, argument: str = "output", inputs: Inputs = ()
) -> Path:
    """Like :func:`write_text_atomically` for bytes."""
    with atomic_output(path, argument, binary=True, inputs=inputs) as out:
        out.write(data)
    return Path(path)


def special_file_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` is when an input must not be read from it: 'a named pipe (FIFO)', 'a
    character device', ... (a FIFO that no program writes blocks a read forever, /dev/zero
    never ends). None for a regular file, a directory, a path that does not exist (its
    reader says so) and the name of an open descriptor (``/dev/stdin``, the ``/dev/fd/63``
    of the shell's ``<(...)``), which is read as the stream it is."""
    try:
        if _DESCRIPTOR_NAME.fullmatch(os.path.abspath(path)):
            return None
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    for test, kind in (
        (stat.S_ISREG, None),
        (stat.S_ISDIR, None),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "a special file"


# Inputs are read whole: a description, host list, hwloc topology or raw measurement larger
# than this is a wrong file, or a stream without end (/dev/stdin < /dev/zero), which was
# read until memory ran out. Readers of larger inputs (measured matrices) give their own.
MAX_INPUT_BYTES = 256 << 20


def read_bytes_file(
    path: str | os.PathLike,
    argument: str,
    allow_empty: bool = False,
    max_bytes: int | None = MAX_INPUT_BYTES,
) -> bytes:
    """The contents of an input file; PetacommError naming ``argument`` when ``path`` is
    missing, a directory, not a regular file (:func:`special_file_kind`), unreadable,
    larger than ``max_bytes`` (None: no bound) or (unless ``allow_empty``) empty."""
    shown = os.fspath(path)
    if not shown:
        raise PetacommError(f"{argument}: empty file name")
    kind = special_file_kind(path)
    if kind is not None:
        raise PetacommError(f"{argument}: '{shown}' is {kind}, not a regular file")
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size  # 0 for a stream
            if max_bytes is not None and size > max_bytes:
                raise PetacommError(
                    f"{argument}: '{shown}' is {_size(size)}, more than the {_size(max_bytes)} "
                    "an input may be"
                )
            data = file.read() if max_bytes is None else file.read(max_bytes + 1)
    except FileNotFoundError:
        raise PetacommError(f"{argument}: '{shown}': no such file") from None
    except IsADirectoryError:
        raise PetacommError(f"{argument}: '{shown}' is a directory, not a file") from None
    except OSError as err:
        raise PetacommError(f"{argument}: cannot read '{shown}': {err.strerror or err}") from None
    except ValueError as err:  # e.g. an embedded NUL byte in the name
        raise PetacommError(f"{argument}: cannot read '{shown}': {err}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise PetacommError(
            f"{argument}: '{shown}' holds more than the {_size(max_bytes)} an input may be"
        )
    if not data and not allow_empty:
        raise PetacommError(f"{argument}: '{shown}' is empty")
    return data


def _size(nbytes: int) -> str:
    from petacomm.units import format_bytes

    return format_bytes(nbytes, decimals=0)


def read_text_file(
    path: str | os.PathLike,
    argument: str,
    allow_empty: bool = False,
    max_bytes: int | None = MAX_INPUT_BYTES,
) -> str:
    """An input text file (UTF-8); binary contents are refused with a one-line error."""
    data = read_bytes_file(path, argument, allow_empty, max_bytes)
    if b"\0" in data:
        raise PetacommError(f"{argument}: '{os.fspath(path)}' is a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PetacommError(
            f"{argument}: '{os.fspath(path)}' is not UTF-8 text (byte {err.start})"
        ) from None


def loads_json(text: str, **options):
    """``json.loads`` whose refusal of a document nested deeper than Python's recursion
    limit (``[[[[...``, 100,000 deep) is a ``json.JSONDecodeError`` like any other, so a
    reader's message for bad JSON covers it, instead of a RecursionError traceback."""
    import json

    try:
        return json.loads(text, **options)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
