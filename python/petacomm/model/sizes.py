"""Byte sizes as people write them: ``8``, ``4K``, ``4KiB``, ``64M``, ``1GiB`` (powers of 1024)."""

from __future__ import annotations

import re

from petacomm.errors import PetacommError

_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
_PATTERN = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, argument: str = "size") -> int:
    match = _PATTERN.match(text)
    if not match:
        raise PetacommError(f"{argument}: expected a size like 8, 4K, 64MiB, got '{text}'")
    return int(match.group(1)) << _UNITS[match.group(2).upper()]


def parse_size_range(text: str, argument: str = "-m") -> tuple[int, int]:
    low, sep, high = text.partition(":")
    if not sep:
        raise PetacommError(f"{argument}: expected MIN:MAX (e.g. 8:64M), got '{text}'")
    lo, hi = parse_size(low, argument), parse_size(high, argument)
    if lo < 1 or lo > hi:
        raise PetacommError(f"{argument}: need 0 < MIN <= MAX, got '{text}'")
    return lo, hi


def format_size(nbytes: float) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{int(nbytes) >> shift} {unit}"
    return f"{int(nbytes)} B"
