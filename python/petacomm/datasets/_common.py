"""Shared checks and helpers of the key-set generators."""

from __future__ import annotations

import numpy as np

# Keys or samples of one rank at most (8 GiB of int64 keys): bench sparse-reduce launched
# ranks to generate 10^11.
MAX_PER_RANK = 1 << 30


def check_positive(
    name: str, value, *, allow_zero: bool = False, maximum: int | None = None
) -> None:
    if not isinstance(value, int | np.integer) or isinstance(value, bool):
        raise ValueError(f"{name}: expected an integer, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name}: must be {'>= 0' if allow_zero else '> 0'}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: at most {maximum}, got {value}")


def check_rank(rank, ranks: int) -> None:
    if not isinstance(rank, int | np.integer) or not 0 <= rank < ranks:
        raise ValueError(f"rank: must be in [0, {ranks}), got {rank!r}")


def rng(seed: int, rank: int, stream: int) -> np.random.Generator:
    """Independent reproducible stream per (seed, rank, purpose)."""
    return np.random.default_rng([seed, rank, stream])


class KeySetMixin:
    ranks: int

    def all_keys(self) -> list[np.ndarray]:
        return [self.keys(r) for r in range(self.ranks)]
