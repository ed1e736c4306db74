"""Banded (nearest-neighbour) keys: rank r holds block r of the range plus a halo on each
side that its neighbours hold too, in a shuffled order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from petacomm.datasets._common import MAX_PER_RANK, KeySetMixin, check_positive, check_rank, rng


@dataclass(frozen=True)
class BandedKeys(KeySetMixin):
    ranks: int
    keys_per_rank: int = 10000
    halo: int = 1000  # keys of each neighbour's block also held
    seed: int = 0
    name = "banded"

    def __post_init__(self):
        check_positive("ranks", self.ranks)
        check_positive("keys_per_rank", self.keys_per_rank, allow_zero=True, maximum=MAX_PER_RANK)
        check_positive("halo", self.halo, allow_zero=True, maximum=MAX_PER_RANK)

    @property
    def key_range(self) -> int:
        return max(1, self.ranks * self.keys_per_rank)

    def keys(self, rank: int) -> np.ndarray:
        check_rank(rank, self.ranks)
        low = max(0, rank * self.keys_per_rank - self.halo)
        high = min(self.key_range, (rank + 1) * self.keys_per_rank + self.halo)
        return rng(self.seed, rank, 2).permutation(np.arange(low, high, dtype=np.int64))
