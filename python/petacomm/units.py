"""Byte sizes as people write them (``1MiB``, ``64KiB``, ``1.5MB``, ``64M``, ``512``) and back.

One module for every command: binary prefixes (KiB, MiB...) and decimal ones (kB, MB...)
are kept distinct; a bare ``K``/``M``/``G``/``T`` is binary, as in the OSU benchmarks and
MPI tools. The profiler's runtime parses PETACOMM_PROF_* sizes with the same grammar and
meaning ("4MB" is 4,000,000 bytes everywhere; tests/prof/test_settings.py compares them).
"""

from __future__ import annotations

import math
import re

# Binary (KiB) and decimal (kB) prefixes are both in use; keep them distinct rather than guess.
_UNITS = {
    "": 1,
    "B": 1,
    "KIB": 1024,
    "MIB": 1024**2,
    "GIB": 1024**3,
    "TIB": 1024**4,
    "K": 1024,
    "M": 1024**2,
    "G": 1024**3,
    "T": 1024**4,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
}
_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?([A-Za-z]*)$")


_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")


def decimal_int(text: str) -> int:
    """An integer as a command line writes it: a sign or none, then ASCII digits (blanks
    around are allowed). int() alone also reads '1_0' as 10 and other scripts' digits ('٤'
    as 4); ValueError for those and anything else, which the caller words."""
    stripped = text.strip()
    if not _DECIMAL_INT.fullmatch(stripped):
        raise ValueError(f"not a decimal integer: {text!r}")
    return int(stripped)


def is_whole_number(text: str) -> bool:
    """True for ASCII digits only: str.isdigit() alone also takes '²', which int() then
    refuses with its own words, and other scripts' digits ('٤')."""
    return text.isascii() and text.isdigit()


def parse_size(text: str) -> float:
    """Return the number of bytes ``text`` denotes; raise ValueError naming the text if invalid."""
    match = _SIZE_RE.match(text.strip())
    if not match:
        raise ValueError(f"not a byte size: {text!r} (expected e.g. 8, 64KiB, 1MiB, 2.5MB)")
    unit = match.group(2).upper()
    if unit not in _UNITS:
        raise ValueError(
            f"unknown size unit {match.group(2)!r} in {text!r} (expected B, KiB, MiB, GiB, TiB, "
            "K, M, G, T, kB, MB, GB, TB)"
        )
    number = float(text.strip()[: len(text.strip()) - len(match.group(2))])
    value = number * _UNITS[unit]
    if not math.isfinite(value):
        raise ValueError(f"byte size {text!r} is too large")
    return value


def parse_byte_count(text: str, argument: str) -> int:
    """A whole number of bytes for option ``argument``; PetacommError names it when invalid."""
    from petacomm.errors import PetacommError

    try:
        value = parse_size(text)
    except ValueError as err:
        raise PetacommError(f"{argument}: {err}") from err
    if not math.isfinite(value) or value != math.floor(value):
        raise PetacommError(f"{argument}: not a whole number of bytes: '{text}'")
    return int(value)


def parse_size_range(text: str, argument: str) -> tuple[int, int]:
    """``MIN:MAX`` byte sizes with 0 < MIN <= MAX."""
    from petacomm.errors import PetacommError

    low, sep, high = text.partition(":")
    if not sep:
        raise PetacommError(f"{argument}: expected MIN:MAX (e.g. 8:64M), got '{text}'")
    lo, hi = parse_byte_count(low, argument), parse_byte_count(high, argument)
    if lo < 1 or lo > hi:
        raise PetacommError(f"{argument}: need 0 < MIN <= MAX, got '{text}'")
    return lo, hi


def format_exact_size(nbytes: float) -> str:
    """``64 MiB`` for exact binary multiples, else ``1000 B``: for tables of power-of-two sizes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{int(nbytes) >> shift} {unit}"
    return f"{int(nbytes)} B"


def format_bytes(nbytes: float, decimals: int = 2) -> str:
    """Render a byte count with a binary unit, e.g. ``1.00 MiB`` (``512 B`` below 1 KiB)."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.{decimals}f} {unit}"
        value /= 1024
    return f"{value:.{decimals}f} TiB"


def format_seconds(seconds: float) -> str:
    """Render a duration with a readable unit (s, ms, us, ns)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds / 1e-9:.3f} ns"
