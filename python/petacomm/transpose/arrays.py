"""numpy arrays as the library's array descriptors (petacomm_transpose_array).

The library checks every descriptor on every rank before anything is sent, so one rank's
bad array fails the collective call everywhere; arguments that are not numpy arrays at all
travel as empty descriptors and get their message here, on the rank that passed them.
"""

from __future__ import annotations

import numpy as np

from petacomm.dtypes import codes_by_dtype, refusal
from petacomm.native import SUCCESS
from petacomm.transpose import _capi

_DTYPE_CODES = codes_by_dtype(_capi.DTYPES)


def dtype_code(dtype) -> int:
    """The library's code of ``dtype``, UNKNOWN_DTYPE for any other (a byte-swapped one
    too: see petacomm.dtypes)."""
    return _DTYPE_CODES.get(np.dtype(dtype), _capi.UNKNOWN_DTYPE)


def check_creation(lib, status: int, call: str, mine=None) -> None:
    """_capi.check of a plan's creation, which the library failed on every rank together
    when this rank passed it an argument it refused: ``mine`` is the exception of the
    constructor's own checks (raised again here, as it was), or the plan's dtype, which the
    library refuses as UNKNOWN_DTYPE and this rank then names in its own words (a
    byte-swapped dtype: how to convert it), or None."""
    if status != SUCCESS and mine is not None:
        if isinstance(mine, Exception):
            raise mine
        if dtype_code(mine) == _capi.UNKNOWN_DTYPE:
            raise ValueError(f"dtype: {refusal(mine, _capi.DTYPES)}")
    _capi.check(lib, status, call)


def descriptor(value) -> _capi.Array:
    """The descriptor of ``value`` (an empty one when it is not a numpy array)."""
    array = _capi.Array()
    if not isinstance(value, np.ndarray):
        array.ndim = 0
        array.dtype = _capi.UNKNOWN_DTYPE
        return array
    array.data = value.ctypes.data if value.size else None
    array.ndim = min(value.ndim, 5)
    for k in range(min(value.ndim, 4)):
        array.shape[k] = value.shape[k]
        array.strides[k] = value.strides[k]
    array.dtype = dtype_code(value.dtype)
    array.writeable = 1 if value.flags.writeable else 0
    return array


def local_message(message: str, named: dict) -> str:
    """The library's message, made specific where it only saw a placeholder: a value that
    is not a numpy array, or a dtype it does not know."""
    for name, value in named.items():
        if not message.startswith(f"{name}:"):
            continue
        if not isinstance(value, np.ndarray):
            return f"{name}: expected a numpy array, got {type(value).__name__}"
        if "dtype unknown" in message:
            shown = str(value.dtype)
            if not value.dtype.isnative:  # >c16: its name would hide why
                shown = f"{value.dtype.str} (not in this machine's byte order)"
            return message.replace("dtype unknown", f"dtype {shown}")
    return message
