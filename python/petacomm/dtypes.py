"""The numpy dtypes the native libraries take, by the native code of each.

The native code reads an array's bytes as they are, as values of this machine's byte order:
a byte-swapped array (``>f8`` on a little-endian machine) has the name of a supported dtype
(``float64``) but its values would be read wrong. So the codes are looked up by dtype, not
by name: ``np.dtype("float64")`` is this machine's byte order, and ``>f8`` misses. A dtype
is also hashed and compared faster than its ``name`` is built (0.1 against 2.4 us), which
counts on every execution.
"""

from __future__ import annotations

import numpy as np


def codes_by_dtype(codes_by_name: dict[str, int]) -> dict[np.dtype, int]:
    """``{np.dtype(name): code}``: the dtypes of those names in this machine's byte order."""
    return {np.dtype(name): code for name, code in codes_by_name.items()}


def numpy_dtype(dtype, what: str) -> np.dtype:
    """``np.dtype(dtype)``; ValueError naming ``what`` when numpy knows no such dtype (its own
    "data type 'x' not understood" names no argument)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        raise ValueError(f"{what}: not a numpy dtype: {dtype!r}") from None


def refusal(dtype, expected) -> str:
    """Why ``dtype`` is refused, for an error message after "ARGUMENT: ": a byte-swapped
    dtype by its byte-order string (``>f8``) and how to convert it, any other by its name
    and the ``expected`` names."""
    dtype = np.dtype(dtype)
    if not dtype.isnative and dtype.name in expected:
        return (
            f"dtype {dtype.str} is not in this machine's byte order (convert with "
            f".astype('{dtype.name}'))"
        )
    return f"unsupported dtype {dtype.name} (expected one of {', '.join(expected)})"
