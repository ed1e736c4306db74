"""Benchmarks: commands that print figures with units, comparing strategies side by side."""

from __future__ import annotations

from petacomm.errors import PetacommError, refuse_repeats


def name_list(text: str, what: str) -> list[str]:
    """A comma list of names (variants, transports) given as option ``what``, each stripped;
    an empty name (``''``, ``a,``), which was taken for the default or reached the program,
    and a name listed twice, which ran twice, are refused."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise PetacommError(f"{what}: empty name in {text!r}")
    refuse_repeats(names, what)
    return names


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


def launched_ranks(counts, what: str, hint: str = "") -> None:
    """PetacommError naming option ``what`` when a rank count is more than a benchmark
    launches on this machine (launch.MAX_LOCAL_RANKS: more were launched and hung)."""
    from petacomm.launch import MAX_LOCAL_RANKS

    for ranks in counts:
        if ranks > MAX_LOCAL_RANKS:
            raise PetacommError(
                f"{what}: at most {MAX_LOCAL_RANKS} ranks are launched on one machine, "
                f"got {ranks}{hint}"
            )
