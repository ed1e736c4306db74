"""Zipf-distributed keys: every rank draws keys_per_rank samples with P(key of popularity
rank i) proportional to 1 / i^exponent over the whole range, so a few popular keys are held
by almost every rank and most keys by one or none. Popularity ranks are spread over the
range by a fixed multiplicative permutation (popular keys are not all in one block)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from petacomm.datasets._common import MAX_PER_RANK, KeySetMixin, check_positive, check_rank, rng


@dataclass(frozen=True)
class ZipfKeys(KeySetMixin):
    ranks: int
    keys_per_rank: int = 10000
    exponent: float = 1.1
    range_factor: int = 20  # key range = range_factor * keys_per_rank
    seed: int = 0
    name = "zipf"

    def __post_init__(self):
        check_positive("ranks", self.ranks)
        check_positive("keys_per_rank", self.keys_per_rank, allow_zero=True, maximum=MAX_PER_RANK)
        check_positive("range_factor", self.range_factor)
        if not (isinstance(self.exponent, int | float) and 0 < self.exponent <= 10):
            raise ValueError(f"exponent: must be in (0, 10], got {self.exponent!r}")

    @property
    def key_range(self) -> int:
        return max(1, self.range_factor * self.keys_per_rank)

    @cached_property
    def _cumulative(self) -> np.ndarray:
        weights = np.arange(1, self.key_range + 1, dtype=np.float64) ** -float(self.exponent)
        cumulative = np.cumsum(weights)
        return cumulative / cumulative[-1]

    @cached_property
    def _stride(self) -> int:
        """A multiplier coprime to the range near its golden section: key = i * stride % N
        is a permutation of [0, N)."""
        n = self.key_range
        stride = max(1, int(n * 0.6180339887))
        while math.gcd(stride, n) != 1:
            stride += 1
        return stride

    def keys(self, rank: int) -> np.ndarray:
        check_rank(rank, self.ranks)
        u = rng(self.seed, rank, 1).random(self.keys_per_rank)
        popularity = np.searchsorted(self._cumulative, u, side="right")  # 0 = most popular
        popularity = np.minimum(popularity, self.key_range - 1).astype(np.int64)
        return popularity * self._stride % self.key_range
