"""Benchmarks: commands that print figures with units, comparing strategies side by side."""

from __future__ import annotations

from petacomm.errors import PetacommError, refuse_repeats


def positive_int_list(text: str, what: str) -> list[int]:
    """A comma list of positive integers (rank counts, sizes) given as option ``what``."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise PetacommError(f"{what}: expected comma-separated integers, got '{text}'") from None
    if not values:
        raise PetacommError(f"{what}: empty list (expected positive integers, got '{text}')")
    if min(values) < 1:
        raise PetacommError(f"{what}: expected positive integers, got '{text}'")
    refuse_repeats(values, what)
    return values
