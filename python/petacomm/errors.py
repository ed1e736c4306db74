"""The error type for user errors: the CLI prints its message on one line, no traceback."""

import operator


class PetacommError(Exception):
    """A user-facing error: bad argument, missing tool, unreadable or invalid file.

    The message names the offending argument or file and the value, e.g.
    ``--ranks: must be a positive integer, got '0'``.
    """


def refuse_repeats(values, option: str) -> None:
    """PetacommError naming ``option`` when a comma list names a value twice (it would be
    run, and reported, twice)."""
    seen = set()
    for v in values:
        if v in seen:
            raise PetacommError(f"{option}: {v} is listed twice")
        seen.add(v)


def integer_argument(value, name: str, bounds: tuple[int, int] | None = None) -> int:
    """``value`` as an int when it is an integer (a Python or numpy one, a 0-d integer
    array; not a bool) and, when ``bounds`` (low, high) are given, within them; ValueError
    naming ``name`` otherwise: int() would truncate 4.5 to 4, read "44" as 44 and refuse
    NaN in words that name nothing."""
    if isinstance(value, bool):  # numpy's booleans have no __index__
        raise ValueError(f"{name}: expected an integer, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}: expected an integer, got {value!r}") from None
    if bounds is not None and not bounds[0] <= number <= bounds[1]:
        raise ValueError(f"{name}: must be in [{bounds[0]}, {bounds[1]}], got {number}")
    return number
