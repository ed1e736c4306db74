"""Counter-based random numbers shared with the native mini-apps.

The value at index ``i`` of the stream ``(seed, stream, sub)`` is a pure function of those
integers, so any rank (or any program) can generate any sample's random numbers without
communication, and results do not depend on how samples are split over ranks. This is the
numpy implementation of the definition in ``native/apps/common/counter_rng.hpp``
(tests/apps check that both give the same bits)::

    mix(z)      the SplitMix64 finaliser
    key         k = mix(seed + G); k = mix(k + (stream + 1) G); k = mix(k + (sub + 1) G)
    bits(i)     mix(k + (i + 1) G)                 (G = 0x9E3779B97F4A7C15, modulo 2^64)
    uniform(i)  ((bits(i) >> 11) + 0.5) 2^-53      in (0, 1)
    normal(i)   sqrt(-2 ln uniform(2i)) cos(2 pi uniform(2i + 1))
"""

from __future__ import annotations

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1

# Stream numbers (one per purpose), as in counter_rng.hpp.
STREAM_SCAN_PHASES = 1
STREAM_JITTER = 2
STREAM_NOISE = 3
STREAM_SKY = 4
STREAM_MADBENCH_DATA = 5


def _mix_int(z: int) -> int:
    z &= _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _mix_array(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def stream_key(seed: int, stream: int, sub: int) -> int:
    key = _mix_int(seed + GOLDEN)
    key = _mix_int(key + (stream + 1) * GOLDEN)
    return _mix_int(key + (sub + 1) * GOLDEN)


def bits(key: int, index) -> np.ndarray:
    """uint64 random bits at ``index`` (an integer array) of the stream with this key."""
    i = np.asarray(index, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return _mix_array(np.uint64(key) + (i + np.uint64(1)) * np.uint64(GOLDEN))


def uniform(key: int, index) -> np.ndarray:
    return ((bits(key, index) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def normal(key: int, index) -> np.ndarray:
    i = np.asarray(index, dtype=np.uint64)
    radius = np.sqrt(-2.0 * np.log(uniform(key, 2 * i)))
    return radius * np.cos(2.0 * np.pi * uniform(key, 2 * i + np.uint64(1)))
