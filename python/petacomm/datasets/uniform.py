"""Uniform random keys: no locality, every pair of ranks shares a few keys."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from petacomm.datasets._common import MAX_PER_RANK, KeySetMixin, check_positive, check_rank, rng


@dataclass(frozen=True)
class UniformKeys(KeySetMixin):
    ranks: int
    keys_per_rank: int = 10000
    range_factor: int = 20  # key range = range_factor * keys_per_rank
    seed: int = 0
    name = "uniform"

    def __post_init__(self):
        check_positive("ranks", self.ranks)
        check_positive("keys_per_rank", self.keys_per_rank, allow_zero=True, maximum=MAX_PER_RANK)
        check_positive("range_factor", self.range_factor)

    @property
    def key_range(self) -> int:
        return max(1, self.range_factor * self.keys_per_rank)

    def keys(self, rank: int) -> np.ndarray:
        check_rank(rank, self.ranks)
        return rng(self.seed, rank, 1).integers(0, self.key_range, self.keys_per_rank, np.int64)
