"""The packed half-complex real FFT (FFTW underneath): a real line of n values (n even)
becomes exactly n/2 complex values, slot 0 holding mode 0 (real part) and mode n/2
(imaginary part), slot k mode k; irfft_packed is its exact inverse (normalised)."""

from __future__ import annotations

import numpy as np

from petacomm.transpose import _capi


def rfft_packed(x) -> np.ndarray:
    """Packed forward transform along the last axis: (..., n) float64 -> (..., n/2)."""
    array = np.ascontiguousarray(x, dtype=np.float64)
    if array.ndim < 1:
        raise ValueError("x: expected at least one dimension")
    n = array.shape[-1]
    out = np.empty((*array.shape[:-1], n // 2), np.complex128)
    lib = _capi.library()
    count = array.size // n if n else 0
    status = lib.petacomm_rfft_packed(n, count, array.ctypes.data, out.ctypes.data)
    _capi.check(lib, status, "rfft_packed")
    return out


def irfft_packed(packed) -> np.ndarray:
    """The inverse: (..., m) complex128 -> (..., 2 m) float64, normalised by 1/(2 m)."""
    array = np.ascontiguousarray(packed, dtype=np.complex128)
    if array.ndim < 1:
        raise ValueError("packed: expected at least one dimension")
    half = array.shape[-1]
    out = np.empty((*array.shape[:-1], 2 * half), np.float64)
    lib = _capi.library()
    count = array.size // half if half else 0
    status = lib.petacomm_irfft_packed(2 * half, count, array.ctypes.data, out.ctypes.data)
    _capi.check(lib, status, "irfft_packed")
    return out
