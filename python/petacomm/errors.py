"""The error type for user errors: the CLI prints its message on one line, no traceback."""


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
