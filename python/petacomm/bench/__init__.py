"""Benchmarks: commands that print figures with units, comparing strategies side by side."""

from __future__ import annotations

from petacomm.errors import PetacommError, refuse_repeats

# Timed (or warm-up) repetitions at most: 99999999999 ran without end (or, in a native
# program's atoi, as 1215752191). petacomm-fftfilter, petacomm-halo (-i, -x) and the C
# drivers (core/bench_driver.h) take the same: the library's bound.
from petacomm.native import MAX_REPS  # noqa: F401 (the benchmarks import it from here)
from petacomm.units import decimal_int


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
        values = [decimal_int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise PetacommError(f"{what}: expected comma-separated integers, got '{text}'") from None
    if not values:
        raise PetacommError(f"{what}: empty list (expected positive integers, got '{text}')")
    if min(values) < 1:
        raise PetacommError(f"{what}: expected positive integers, got '{text}'")
    refuse_repeats(values, what)
    return values


def bounded_int(value: int, option: str, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` of integer option ``option``, or PetacommError naming it when below
    ``minimum`` or above ``maximum``. The maximum is the bound of the native program the
    benchmark runs: a larger value was refused only after the launch (or ran for days)."""
    if value < minimum:
        raise PetacommError(f"{option}: must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise PetacommError(f"{option}: at most {maximum}, got {value}")
    return value


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
