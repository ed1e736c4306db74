"""Key-set generators: deterministic by seed, any p without MPI, the intended structure."""

from __future__ import annotations

import numpy as np
import pytest

from petacomm.datasets import GENERATORS, make


def multiplicities(keysets):
    distinct = np.concatenate([np.unique(k) for k in keysets])
    _, d = np.unique(distinct, return_counts=True)
    return d


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_deterministic_by_seed_and_independent_of_who_generates(name):
    small = {"cmb": {"nside": 32, "samples_per_rank": 2000}}.get(name, {"keys_per_rank": 500})
    a = make(name, 5, seed=3, **small)
    b = make(name, 5, seed=3, **small)
    c = make(name, 5, seed=4, **small)
    for r in range(5):
        keys = a.keys(r)
        assert keys.dtype == np.int64 and keys.ndim == 1
        assert np.array_equal(keys, b.keys(r))
        assert keys.min(initial=0) >= 0 and keys.max(initial=0) < a.key_range
    assert any(not np.array_equal(a.keys(r), c.keys(r)) for r in range(5))


def test_cmb_structure_matches_the_study():
    gen = make("cmb", 8)  # the benchmark's default size
    keysets = gen.all_keys()
    per_rank = [np.unique(k).size for k in keysets]
    assert gen.key_range >= 10 * max(per_rank)  # dense range >= 10x a rank's keys
    assert max(per_rank) < 1.3 * min(per_rank)  # samples split evenly
    d = multiplicities(keysets)
    assert np.mean(d <= 2) > 0.8  # most pixels on few ranks
    assert d.max() >= 7  # a few on almost all 8
    for keys in keysets:  # spread over the whole range, not contiguous
        u = np.unique(keys)
        assert u[0] < gen.key_range / 10 and u[-1] > 0.9 * gen.key_range


def test_cmb_any_p_and_even_split():
    gen = make("cmb", 1000, nside=64, total_samples=123457)
    sizes = [gen.sample_range(r)[1] - gen.sample_range(r)[0] for r in range(1000)]
    assert sum(sizes) == 123457 and max(sizes) - min(sizes) <= 1
    assert gen.keys(999).size == sizes[999]


def test_cmb_all_keys_in_one_pass_equal_rank_by_rank():
    gen = make("cmb", 7, nside=32, total_samples=9001, spin_samples=300)
    keysets = gen.all_keys()
    assert len(keysets) == 7
    for r in range(7):
        assert np.array_equal(keysets[r], gen.keys(r))


def test_banded_shares_with_neighbours_only():
    keysets = make("banded", 6, keys_per_rank=100, halo=10).all_keys()
    for r in range(6):
        for q in range(6):
            shared = np.intersect1d(keysets[r], keysets[q]).size
            assert (shared > 0) == (abs(r - q) <= 1)


def test_zipf_popularity():
    gen = make("zipf", 8, keys_per_rank=2000, exponent=1.1)
    keysets = gen.all_keys()
    d = multiplicities(keysets)
    assert np.mean(d == 1) > 0.5  # the long tail: most keys drawn on one rank only
    assert (d == 8).sum() >= 20  # popular keys on every rank
    # The most popular key (popularity rank 0, key 0) takes 1 / H(N, s) of the draws.
    n, s = gen.key_range, 1.1
    share = 1 / np.sum(np.arange(1, n + 1) ** -s)
    drawn = np.mean(np.concatenate(keysets) == 0)
    assert abs(drawn - share) < 5 * np.sqrt(share / (8 * 2000))
    # Popularity is spread over the range: the 100 most common keys are not one block.
    top = np.unique(np.concatenate(keysets), return_counts=True)
    common = top[0][np.argsort(-top[1])[:100]]
    assert common.max() - common.min() > gen.key_range / 2


@pytest.mark.parametrize(
    ("name", "params", "fragment"),
    [
        ("cmb", {"nside": 100}, "nside"),
        ("cmb", {"year_fraction": 0}, "year_fraction"),
        ("uniform", {"keys_per_rank": -1}, "keys_per_rank"),
        ("zipf", {"exponent": 0}, "exponent"),
        ("nope", {}, "generator"),
        # more than a rank holds: 2^30 + 1 keys or samples of one rank
        ("uniform", {"keys_per_rank": 2**30 + 1}, "keys_per_rank: at most 1073741824"),
        ("zipf", {"keys_per_rank": 2**30 + 1}, "keys_per_rank: at most"),
        ("banded", {"halo": 2**30 + 1}, "halo: at most"),
        ("cmb", {"samples_per_rank": 2**30 + 1}, "samples_per_rank: at most"),
        ("cmb", {"total_samples": 4 * 2**30 + 1}, "total_samples: at most 4294967296"),
    ],
)
def test_bad_parameters_are_named(name, params, fragment):
    with pytest.raises(ValueError, match=fragment):
        make(name, 4, **params)
    if name != "nope":
        with pytest.raises(ValueError, match="rank"):
            make(name, 4).keys(4)
