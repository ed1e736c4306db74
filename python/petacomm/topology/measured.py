"""Measured communication matrices: CSV / NumPy files and profiler logs -> CommPattern.

File forms accepted by :func:`load_matrix_file`:

* ``.npy``: a square array (bytes, row = sender), or an (n, 3) array of
  ``src, dst, bytes`` triplets when ``triplets=True``.
* ``.csv``: either a square grid of numbers without a header (dense matrix), or a header row
  naming the columns ``src,dst,bytes`` (aliases: ``rank``/``sender``, ``peer``/``receiver``,
  ``nbytes``) followed by one triplet per line. ``#`` starts a comment line.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from pathlib import Path

import numpy as np

from petacomm.errors import PetacommError
from petacomm.files import read_bytes_file
from petacomm.topology.pattern import CommPattern, Phase, matrix_messages

_SRC_NAMES = ("src", "source", "rank", "sender", "from")
_DST_NAMES = ("dst", "dest", "destination", "peer", "receiver", "to")
_BYTES_NAMES = ("bytes", "nbytes", "size", "sent_bytes", "bytes_sent")


def _pick(names: list[str], wanted: tuple[str, ...], path, what: str) -> int:
    found = [i for i, n in enumerate(names) if n.strip().lower() in wanted]
    if len(found) > 1:
        raise ValueError(
            f"{path}: CSV header {names} names the {what} column more than once "
            f"({', '.join(names[i].strip() for i in found)})"
        )
    if found:
        return found[0]
    raise ValueError(
        f"{path}: CSV header {names} has no {what} column (expected one of {', '.join(wanted)})"
    )


# Rank numbers above this cannot be MPI ranks (int) and would not fit any network here.
MAX_RANK = (1 << 31) - 1


def _from_triplets(src, dst, nbytes, nranks, path) -> CommPattern:
    src = np.asarray(src, dtype=np.float64)
    dst = np.asarray(dst, dtype=np.float64)
    nbytes = np.asarray(nbytes, dtype=np.float64)
    for name, ranks in (("source", src), ("destination", dst)):
        if not np.all(np.isfinite(ranks)) or np.any(ranks != np.round(ranks)):
            raise ValueError(f"{path}: {name} ranks must be whole numbers")
        if ranks.size and (ranks.min() < 0 or ranks.max() > MAX_RANK):
            raise ValueError(f"{path}: {name} ranks must be in 0..{MAX_RANK}")
    src, dst = src.astype(np.int64), dst.astype(np.int64)
    if not np.all(np.isfinite(nbytes)) or np.any(nbytes < 0):
        raise ValueError(f"{path}: byte counts must be finite and >= 0")
    inferred = int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
    if nranks is None:
        nranks = inferred
    elif inferred > nranks:
        raise ValueError(f"{path}: rank {inferred - 1} out of range for {nranks} ranks")
    keep = nbytes > 0
    return CommPattern(
        max(nranks, 1),
        [Phase("measured", src[keep], dst[keep], nbytes[keep])],
        f"measured matrix from {path}",
    )


def _check_npy_size(data: bytes, path) -> None:
    """ValueError when the .npy header declares more data than the file holds: a header of
    100000 x 100000 made np.load allocate 80 GB (an 'out of memory' naming no file). A
    header that cannot be read is left to np.load to refuse."""
    from numpy.lib import format as npy

    stream = io.BytesIO(data)
    try:
        # Versions 2 and 3 differ from 1 in the header's length field (4 bytes, not 2).
        one = npy.read_magic(stream) == (1, 0)
        read_header = npy.read_array_header_1_0 if one else npy.read_array_header_2_0
        shape, _, dtype = read_header(stream)
    except (ValueError, OSError, EOFError):
        return
    if dtype.hasobject:  # refused by np.load (no pickles)
        return
    declared = math.prod(shape) * dtype.itemsize
    held = len(data) - stream.tell()
    if declared > held:
        from petacomm.units import format_bytes

        raise ValueError(
            f"{path}: the .npy header declares a {' x '.join(map(str, shape))} array of "
            f"{dtype} ({format_bytes(declared)}) but the file holds {format_bytes(held)} of "
            "data (a truncated or damaged file)"
        )


def load_matrix_file(path, nranks: int | None = None, triplets: bool = False) -> CommPattern:
    """Read a measured matrix from ``.npy`` or ``.csv`` (see module docstring)."""
    path = Path(path)
    if path.suffix.lower() not in (".npy", ".csv"):
        raise ValueError(f"{path}: unknown matrix file type (expected .csv or .npy)")
    try:
        data = read_bytes_file(path, "matrix", max_bytes=None)  # bounded by its messages
    except PetacommError as err:
        raise ValueError(str(err).removeprefix("matrix: ")) from None
    if path.suffix.lower() == ".npy":
        _check_npy_size(data, path)
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:
            raise ValueError(f"{path}: not a NumPy .npy array file ({err})") from None
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iuf":
            raise ValueError(f"{path}: expected an array of numbers")
        if triplets:
            if arr.ndim != 2 or arr.shape[1] != 3:
                raise ValueError(f"{path}: expected an (n, 3) array of src, dst, bytes")
            return _from_triplets(arr[:, 0], arr[:, 1], arr[:, 2], nranks, path)
        src, dst, nb = _checked_dense(arr, path)
        return CommPattern(
            nranks or arr.shape[0], [Phase("measured", src, dst, nb)], f"matrix from {path}"
        )
    if b"\0" in data:
        raise ValueError(f"{path}: a binary file, not CSV text")
    try:
        text = data.decode("utf-8-sig")  # a spreadsheet's export may start with a BOM
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 CSV text") from None
    fast = _read_csv_numbers(text)
    if fast is not None:
        header, numbers = fast
        if header is None:
            return _dense_pattern(numbers, path, nranks)
        si = _pick(header, _SRC_NAMES, path, "source")
        di = _pick(header, _DST_NAMES, path, "destination")
        bi = _pick(header, _BYTES_NAMES, path, "bytes")
        _check_rows(numbers, path)
        if np.any(numbers[:, [si, di]] != np.round(numbers[:, [si, di]])):
            raise ValueError(f"{path}: rank columns must hold integers")
        return _from_triplets(numbers[:, si], numbers[:, di], numbers[:, bi], nranks, path)
    # The careful reader: slower, but it says which line and column is wrong. A line of
    # spaces is blank to it too. Its text is read with csv's own line endings (LF, CRLF or
    # CR alone), not StringIO's.
    rows = [
        (lineno, row)
        for lineno, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1)
        if row and not row[0].lstrip().startswith("#") and (len(row) > 1 or row[0].strip())
    ]
    if not rows:
        raise ValueError(f"{path}: empty file")

    def number(lineno, col, cell):
        try:
            return float(cell)
        except ValueError:
            raise ValueError(
                f"{path}: line {lineno}, column {col + 1}: expected a number, got {cell!r}"
            ) from None

    first_line, first = rows[0]
    header = any(_is_word(c) for c in first)
    if header:
        si = _pick(first, _SRC_NAMES, path, "source")
        di = _pick(first, _DST_NAMES, path, "destination")
        bi = _pick(first, _BYTES_NAMES, path, "bytes")
        for lineno, row in rows[1:]:
            if len(row) != len(first):
                raise ValueError(
                    f"{path}: line {lineno}: expected {len(first)} values like the header, "
                    f"got {len(row)}"
                )
        data = np.array(
            [[number(ln, i, row[i]) for i in (si, di, bi)] for ln, row in rows[1:]]
        ).reshape(-1, 3)
        _check_rows(data, path)
        if np.any(data[:, :2] != np.round(data[:, :2])):
            raise ValueError(f"{path}: rank columns must hold integers")
        return _from_triplets(data[:, 0], data[:, 1], data[:, 2], nranks, path)
    n = len(first)
    for lineno, row in rows:
        if len(row) != n:
            raise ValueError(
                f"{path}: line {lineno}: expected {n} values (a square matrix), got {len(row)}"
            )
    arr = np.array([[number(ln, c, v) for c, v in enumerate(row)] for ln, row in rows])
    return _dense_pattern(arr, path, nranks)


def _check_rows(rows, path) -> None:
    """A header alone is refused as an empty file is: there is nothing to map."""
    if rows.shape[0] == 0:
        raise ValueError(f"{path}: no messages (a header and no rows)")


def _dense_pattern(arr, path, nranks) -> CommPattern:
    src, dst, nb = _checked_dense(arr, path)
    n = arr.shape[0]
    return CommPattern(nranks or n, [Phase("measured", src, dst, nb)], f"matrix from {path}")


def _read_csv_numbers(text: str):
    """(header cells or None, (rows, columns) array of numbers) of a plain numeric CSV,
    parsed in one pass by numpy; None when the text needs the careful reader (quotes, a
    cell that is not a number, rows of different lengths, an empty body) so that its error
    names the line and column."""
    if '"' in text or not _plain_text(text):
        return None
    # Leading comment lines are cheap to skip; comments further down need a line filter.
    start = 0
    while True:
        start = len(text) - len(text[start:].lstrip())
        if not text.startswith("#", start):
            break
        end = text.find("\n", start)
        start = len(text) if end < 0 else end + 1
    body = text[start:]
    if "#" in body:
        body = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))
    end = body.find("\n")
    first = (body if end < 0 else body[:end]).split(",")
    header = None
    if any(_is_word(c) for c in first):
        header, body = first, ("" if end < 0 else body[end + 1 :])
    width = len(first)
    rows = _rows_of_cells(body, width)
    if rows == 0:
        return None
    numbers = _parse_numbers(body.replace(",", " "))
    if numbers is None or numbers.size != width * rows or not np.all(np.isfinite(numbers)):
        return None
    return header, numbers.reshape(rows, width)


# What a numeric CSV is written with: printable ASCII, tabs and line breaks.
_PLAIN_BYTES = bytes(range(32, 127)) + b"\t\n\r"


def _plain_text(text: str) -> bool:
    """Whether TEXT holds only :data:`_PLAIN_BYTES`, with every CR before an LF: the
    one-pass reader and the careful one (csv) then split it into the same lines and cells.
    Form feeds, vertical tabs, lone CRs and Unicode line separators end lines for
    ``str.splitlines`` and separate numbers for numpy, not for csv (5 ms on 12 MB)."""
    if not text.isascii() or text.encode("ascii").translate(None, _PLAIN_BYTES):
        return False
    return "\r" not in text or text.count("\r") == text.count("\r\n")


def _rows_of_cells(body: str, width: int) -> int:
    """Rows of BODY when each of its non-blank lines holds WIDTH comma-separated cells and
    no cell is empty, else 0. Each cell must then hold one number: as many numbers as cells
    are parsed. (Counting commas and lines only took ``0,1,5,2,3`` then ``7`` as two rows of
    three, and ``1 2,,3`` as one.)"""
    raw = body.encode()
    text = np.frombuffer(raw, dtype=np.uint8)
    if b" " in raw or b"\t" in raw or b"\r" in raw:  # a copy without them (20 ms on 12 MB)
        text = text[(text != 32) & (text != 9) & (text != 13)]
    if text.size == 0:
        return 0
    newline = text == 10
    comma = text == 44
    separator = newline | comma
    # A comma first or last, or beside another separator, leaves a cell empty.
    if comma[0] or comma[-1] or np.any(comma[1:] & separator[:-1] | separator[1:] & comma[:-1]):
        return 0
    # A row ends at a line break after something else, or where the text ends.
    row_end = newline.copy()
    row_end[0] = False
    row_end[1:] &= ~newline[:-1]
    ends = np.flatnonzero(row_end)
    if not newline[-1]:
        ends = np.append(ends, text.size)
    commas = np.flatnonzero(comma)
    if ends.size == 0 or commas.size != ends.size * (width - 1):
        return 0
    # As many commas as cells need: each row has its own when its first lies after the row
    # before ends, and its last before it ends.
    if width > 1:
        own = commas.reshape(ends.size, width - 1)
        if np.any(own[1:, 0] < ends[:-1]) or np.any(own[:, -1] > ends):
            return 0
    return int(ends.size)


_INT64 = np.iinfo(np.int64)


def _parse_numbers(text: str):
    """Every whitespace-separated number of TEXT as float64, or None when one is not a
    number. Integers (what a communication matrix holds) are parsed as such first, eight
    times faster than numpy's float parser (1 M lines: 0.07 s against 0.57); the float parser
    takes any other text, and values beyond int64 (which the integer parser clamps)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            ints = np.fromstring(text, dtype=np.int64, sep=" ")
            if ints.size == 0 or (ints.max() < _INT64.max and ints.min() > _INT64.min):
                return ints.astype(np.float64)
        except (ValueError, DeprecationWarning):
            pass
        try:
            return np.fromstring(text, dtype=np.float64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None


def _is_word(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return True
    return False


def _checked_dense(arr, path):
    try:
        return matrix_messages(arr)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def read_profile_log(path, nranks: int | None = None) -> CommPattern:
    """Point-to-point and one-sided bytes per rank pair measured by ``petacomm profile``.

    Reads the profiler's log (schema in docs/profiler.md; a final log, or the partial logs
    of a run that never finished) through :mod:`petacomm.profile.log`, and takes its
    communication matrix: bytes sent from each rank to each partner (world ranks).
    Collectives have no partner and are not part of the matrix. The log must carry
    per-partner records, i.e. the profiler ran with ``PETACOMM_PROF_DETAIL`` ``normal``
    (the default) or ``full``. Bytes the log holds without a known partner (coarsened when
    the profiler's call table was full, an unresolved ``MPI_ANY_SOURCE``, a partner outside
    ``MPI_COMM_WORLD``) cannot be placed: the pattern's ``notes`` say how many there are.
    """
    from petacomm.profile import analysis, log

    try:
        profile = log.load(path)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a profile log (not UTF-8 JSON text)") from None
    except (PetacommError, OSError, ValueError) as err:
        raise ValueError(str(err)) from None
    measured = analysis.matrix(profile, max_cells=max(profile.ranks, 1))
    if measured is None:
        raise ValueError(
            f"{path}: the profile has no per-partner records (run the profiler with "
            "PETACOMM_PROF_DETAIL=normal or full)"
        )
    if nranks is not None and nranks < profile.ranks:
        raise ValueError(f"{path}: the profile has {profile.ranks} ranks, more than {nranks}")
    src, dst = np.nonzero(measured.bytes)
    if src.size == 0:  # nothing to place: a table of zeros would rank every mapping equal
        raise ValueError(
            f"{path}: the profile holds no point-to-point or one-sided bytes between two ranks "
            "(only collectives, or nothing sent)"
        )
    pattern = _from_triplets(src, dst, measured.bytes[src, dst], nranks or profile.ranks, path)
    pattern.description = f"profile {path} ({measured.source})"
    note = unplaced_bytes_note(profile, measured)
    if note:
        pattern.notes.append(note)
    if profile.missing_ranks:  # partial logs: what the matrix lacks
        pattern.notes.append(
            f"partial logs: no log from ranks {profile.missing_ranks_text()} "
            f"({len(profile.missing_ranks)} of {profile.ranks}): their sends are not in the matrix"
        )
    pattern.notes += [f"partial logs: {note}" for note in profile.notes]
    return pattern


def unplaced_bytes_note(profile, measured) -> str:
    """What the matrix leaves out: bytes of the same calls recorded without a partner rank
    (the profiler's partner codes), as a sentence; '' when nothing is left out."""
    from petacomm.profile import analysis, log

    kinds = analysis.RECV_KINDS if measured.source.startswith("receives") else analysis.SEND_KINDS
    reasons = {
        log.PEER_COARSE: "coarsened (the profiler's call table was full)",
        log.PEER_ANY: "MPI_ANY_SOURCE never resolved",
        log.PEER_OUTSIDE: "partner outside MPI_COMM_WORLD",
    }
    lost: dict[str, float] = {}
    for row in profile.peer_rows or []:
        if profile.kind(row["call"]) in kinds and row["peer"] in reasons:
            reason = reasons[row["peer"]]
            lost[reason] = lost.get(reason, 0.0) + float(row["bytes"])
    missing = sum(lost.values())
    if missing <= 0:
        return ""
    placed = float(measured.bytes.sum())
    share = 100.0 * missing / (placed + missing)
    from petacomm.units import format_bytes

    details = ", ".join(f"{format_bytes(b)} {reason}" for reason, b in lost.items())
    return (
        f"{share:.1f} % of the profile's point-to-point bytes ({format_bytes(missing)} of "
        f"{format_bytes(placed + missing)}) have no known partner and are not mapped: {details}"
    )
