"""csr_entries (the flow model's routes and successors, the contention refinement, the
ordered phases' chains) against a plain loop over the rows' entries."""

import numpy as np

from petacomm.topology.csr import csr_entries


def test_csr_entries_match_a_loop_over_the_rows():
    rng = np.random.default_rng(1)
    for _ in range(300):
        lengths = rng.integers(0, 5, size=rng.integers(1, 30))  # empty rows included
        indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        rows = rng.integers(0, lengths.size, size=rng.integers(0, 10))  # repeats included
        owner, position = csr_entries(indptr, rows)
        want = [(i, j) for i, r in enumerate(rows) for j in range(indptr[r], indptr[r + 1])]
        assert list(zip(owner.tolist(), position.tolist(), strict=True)) == want


def test_csr_entries_of_no_rows_are_empty():
    owner, position = csr_entries(np.array([0, 2, 5]), np.zeros(0, dtype=np.int64))
    assert owner.size == 0 and position.size == 0
