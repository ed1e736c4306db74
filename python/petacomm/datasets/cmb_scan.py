"""A CMB-like scan: a telescope spinning about an axis at ``spin_angle_deg`` from the
boresight, the spin axis precessing at ``precession_angle_deg`` about the anti-sun
direction, which turns once around the ecliptic over ``year_fraction`` of a year during the
whole observation. Each sample hits one HEALPix pixel (RING ordering: pixel numbers spread
over the whole range); samples are split evenly over ranks in time order, as a map-maker
does for load balance.

Structure this reproduces (docs/sparse-reduce.md): consecutive ranks scan neighbouring
rings and share many pixels; rings cross each other (cross-linking from the precession);
every ring passes near the ecliptic poles, so pixels there are held by almost every rank.

The scan phases and the pointing jitter come from counter-based random numbers indexed by
the global sample (petacomm.datasets.counter_rng), so a sample's pixel does not depend on the
number of ranks, and the native map-maker (``petacomm-mapmaker``, native/apps/mapmaker/scan.cpp)
generates the same pixels for its detector 0 from the same seed and parameters
(tests/apps/test_mapmaker_scan.py checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from petacomm.datasets import counter_rng
from petacomm.datasets._common import MAX_PER_RANK, KeySetMixin, check_positive, check_rank


@dataclass(frozen=True)
class CmbScanKeys(KeySetMixin):
    ranks: int
    nside: int = 128
    samples_per_rank: int = 20000
    total_samples: int = 0  # > 0: split this many samples over the ranks instead
    spin_samples: int = 1000  # samples per spin (one ring)
    precession_spins: int = 25  # spins per precession period
    spin_angle_deg: float = 85.0
    precession_angle_deg: float = 7.5
    year_fraction: float = 1.0
    seed: int = 0
    name = "cmb"

    def __post_init__(self):
        check_positive("ranks", self.ranks)
        check_positive("nside", self.nside)
        if self.nside & (self.nside - 1):
            raise ValueError(f"nside: must be a power of two, got {self.nside}")
        check_positive(
            "samples_per_rank", self.samples_per_rank, allow_zero=True, maximum=MAX_PER_RANK
        )
        check_positive(
            "total_samples", self.total_samples, allow_zero=True, maximum=MAX_PER_RANK * self.ranks
        )
        check_positive("spin_samples", self.spin_samples)
        check_positive("precession_spins", self.precession_spins)
        if not 0 < self.year_fraction <= 1:
            raise ValueError(f"year_fraction: must be in (0, 1], got {self.year_fraction}")

    @property
    def key_range(self) -> int:
        return 12 * self.nside * self.nside

    @property
    def samples(self) -> int:
        return self.total_samples if self.total_samples > 0 else self.ranks * self.samples_per_rank

    def sample_range(self, rank: int) -> tuple[int, int]:
        """First and one-past-last sample of ``rank`` (even split, remainder to low ranks)."""
        check_rank(rank, self.ranks)
        base, extra = divmod(self.samples, self.ranks)
        start = rank * base + min(rank, extra)
        return start, start + base + (1 if rank < extra else 0)

    def keys(self, rank: int) -> np.ndarray:
        start, stop = self.sample_range(rank)
        return self.pixels(start, stop, rank)

    def all_keys(self) -> list[np.ndarray]:
        """Every rank's keys (as keys(r)), the scan computed in blocks of samples rather than
        rank by rank: one pass however many ranks share it."""
        block = 1 << 18
        pixels = np.concatenate(
            [self.pixels(s, min(s + block, self.samples)) for s in range(0, self.samples, block)]
            or [np.zeros(0, dtype=np.int64)]
        )
        base, extra = divmod(self.samples, self.ranks)
        sizes = np.full(self.ranks, base, dtype=np.int64)
        sizes[:extra] += 1
        return np.split(pixels, np.cumsum(sizes)[:-1])

    def pixels(self, start: int, stop: int, rank: int = 0) -> np.ndarray:
        import healpy

        del rank  # every sample's pointing is a function of its global index alone
        phase_key = counter_rng.stream_key(self.seed, counter_rng.STREAM_SCAN_PHASES, 0)
        phases = 2 * np.pi * counter_rng.uniform(phase_key, np.arange(3))
        t = np.arange(start, stop, dtype=np.float64)
        total = max(self.samples, 1)
        longitude = phases[0] + 2 * np.pi * self.year_fraction * t / total
        precession = phases[1] + 2 * np.pi * t / (self.spin_samples * self.precession_spins)
        spin = phases[2] + 2 * np.pi * t / self.spin_samples
        # Anti-sun direction A, east E (in the ecliptic plane) and the pole Z.
        a = np.stack([np.cos(longitude), np.sin(longitude), np.zeros_like(t)])
        e = np.stack([-np.sin(longitude), np.cos(longitude), np.zeros_like(t)])
        z = np.array([0.0, 0.0, 1.0])[:, None]
        alpha = np.radians(self.precession_angle_deg)
        axis = np.cos(alpha) * a + np.sin(alpha) * (np.cos(precession) * z + np.sin(precession) * e)
        u = z - axis * axis[2]
        u /= np.linalg.norm(u, axis=0)
        v = np.cross(axis, u, axis=0)
        beta = np.radians(self.spin_angle_deg)
        boresight = np.cos(beta) * axis + np.sin(beta) * (np.cos(spin) * u + np.sin(spin) * v)
        # Pointing jitter of a third of a pixel: normals 3 t + axis of detector 0's stream.
        jitter = healpy.nside2resol(self.nside) / 3
        jitter_key = counter_rng.stream_key(self.seed, counter_rng.STREAM_JITTER, 0)
        index = (
            3 * np.arange(start, stop, dtype=np.uint64)[None, :]
            + np.arange(3, dtype=np.uint64)[:, None]
        )
        boresight = boresight + jitter * counter_rng.normal(jitter_key, index)
        return healpy.vec2pix(self.nside, *boresight).astype(np.int64)
