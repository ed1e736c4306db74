"""unique_keys against numpy's sort-based np.unique, on both of its paths."""

import numpy as np
import pytest

from petacomm.topology import unique_keys as uk

_CASES = [(0, 10), (1, 1), (5, 3), (1000, 50), (1000, 1 << 13), (300, 1 << 40), (200_000, 1 << 20)]


@pytest.mark.parametrize(
    "size, key_range, dtype",
    [(n, r, t) for n, r in _CASES for t in (np.int64, np.int32) if r <= np.iinfo(t).max],
)
def test_unique_keys_are_numpys(size, key_range, dtype):
    rng = np.random.default_rng(size)
    key = rng.integers(0, key_range, size, dtype=dtype)
    distinct, index = uk.unique_keys(key, key_range)
    want_distinct, want_index = np.unique(key, return_inverse=True)
    assert distinct.dtype == key.dtype
    assert np.array_equal(distinct, want_distinct)
    assert np.array_equal(index, want_index)
    assert np.array_equal(distinct[index], key)


def test_small_ranges_are_counted_and_large_ones_sorted(monkeypatch):
    calls = []
    real = np.unique
    monkeypatch.setattr(uk.np, "unique", lambda *a, **k: calls.append(1) or real(*a, **k))
    key = np.array([7, 3, 7, 0, 3])
    assert uk.unique_keys(key, 8)[0].tolist() == [0, 3, 7]
    assert calls == []
    assert uk.unique_keys(key, 1 << 40)[1].tolist() == [2, 1, 2, 0, 1]
    assert calls == [1]
