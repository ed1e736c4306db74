"""Rows of a compressed sparse row (CSR) layout, gathered with numpy: the one step the
contention refinement, the flow model's routes and successors, and the rank-by-rank
chains of ordered phases all take (a row's entries are ``indptr[row]:indptr[row + 1]``)."""

from __future__ import annotations

import numpy as np


def csr_entries(indptr, rows):
    """(index into ``rows``, position in the CSR arrays) of every entry of every row listed."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    ends = np.cumsum(lengths)
    owner = np.repeat(np.arange(rows.size), lengths)
    # Entry j of the result is entry j - (ends - lengths)[owner] of its row.
    return owner, np.arange(int(ends[-1]) if ends.size else 0) + (starts - ends + lengths)[owner]
