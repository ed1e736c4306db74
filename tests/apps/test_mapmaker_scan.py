"""The map-maker's inputs against independent references: its scan against the key-set
generator it shares a definition with (petacomm.datasets.CmbScanKeys), every detector's
pixels against healpy and its polarisation angles against a plain numpy computation of the
documented geometry; its generated sky and its counter-based random numbers against the
numpy implementation of the same definition."""

from __future__ import annotations

import healpy
import numpy as np
import pytest
from apps_harness import UNSEEN, run_mapmaker

from petacomm.datasets import CmbScanKeys, counter_rng

NSIDE, SAMPLES, DETECTORS, SEED = 16, 20000, 4, 11


def reference_pointing(nside, samples, detectors, seed, spin_samples=1000, precession_spins=25):
    """Pixels and psi per detector from the formulas of docs/mapmaker.md, with healpy."""
    phase_key = counter_rng.stream_key(seed, counter_rng.STREAM_SCAN_PHASES, 0)
    ph = 2 * np.pi * counter_rng.uniform(phase_key, np.arange(3))
    t = np.arange(samples, dtype=float)
    lon = ph[0] + 2 * np.pi * t / samples
    prec = ph[1] + 2 * np.pi * t / (spin_samples * precession_spins)
    spin = ph[2] + 2 * np.pi * t / spin_samples
    anti_sun = np.array([np.cos(lon), np.sin(lon), 0 * t])
    east = np.array([-np.sin(lon), np.cos(lon), 0 * t])
    pole = np.array([0.0, 0.0, 1.0])[:, None]
    a, b = np.radians(7.5), np.radians(85.0)
    axis = np.cos(a) * anti_sun + np.sin(a) * (np.cos(prec) * pole + np.sin(prec) * east)
    u = pole - axis * axis[2]
    u /= np.sqrt((u**2).sum(0))
    v = np.cross(axis.T, u.T).T
    bore = np.cos(b) * axis + np.sin(b) * (np.cos(spin) * u + np.sin(spin) * v)
    scan = -np.sin(spin) * u + np.cos(spin) * v
    cross = np.cross(bore.T, scan.T).T
    theta, phi = healpy.vec2ang(bore.T)
    e_theta = np.array([np.cos(theta) * np.cos(phi), np.cos(theta) * np.sin(phi), -np.sin(theta)])
    e_phi = np.array([-np.sin(phi), np.cos(phi), 0 * phi])
    pixels, psis = [], []
    sigma = np.sqrt(4 * np.pi / (12 * nside**2)) / 3
    for d in range(detectors):
        key = counter_rng.stream_key(seed, counter_rng.STREAM_JITTER, d)
        index = (
            3 * np.arange(samples, dtype=np.uint64)[None, :]
            + np.arange(3, dtype=np.uint64)[:, None]
        )
        pixels.append(healpy.vec2pix(nside, *(bore + sigma * counter_rng.normal(key, index))))
        gamma = np.pi * d / detectors
        pol = np.cos(gamma) * scan + np.sin(gamma) * cross
        psis.append(np.arctan2((pol * e_phi).sum(0), -(pol * e_theta).sum(0)))
    return np.array(pixels), np.array(psis)


@pytest.fixture(scope="module")
def app_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("scan")
    run_mapmaker(
        1,
        f"--nside={NSIDE}",
        f"--samples={SAMPLES}",
        f"--detectors={DETECTORS}",
        f"--seed={SEED}",
        "--noise=none",
        f"--save-pointing={out / 'pointing.npy'}",
        f"--output={out / 'map.npy'}",
        "--quiet",
    )
    return np.load(out / "pointing.npy"), np.load(out / "map.npy")


def test_detector0_is_the_key_set_generator_for_any_rank_count(app_run):
    pointing, _ = app_run
    assert pointing.shape == (DETECTORS, SAMPLES, 2)
    native = pointing[0, :, 0].astype(np.int64)
    for ranks in (1, 3):
        gen = CmbScanKeys(ranks=ranks, nside=NSIDE, total_samples=SAMPLES, seed=SEED)
        keys = np.concatenate(gen.all_keys())
        # Same doubles up to libm rounding: a pixel could differ only at an exact pixel edge.
        assert np.count_nonzero(keys != native) <= 2, np.flatnonzero(keys != native)[:10]


def test_pixels_match_healpy_and_psi_matches_the_documented_geometry(app_run):
    pointing, _ = app_run
    pixels, psi = reference_pointing(NSIDE, SAMPLES, DETECTORS, SEED)
    native_pixels = pointing[:, :, 0].astype(np.int64)
    assert np.count_nonzero(native_pixels != pixels) <= 2
    # Both polar caps and the equatorial belt are exercised (RING: caps are the first and
    # last 2 nside (nside - 1) pixels).
    cap = 2 * NSIDE * (NSIDE - 1)
    assert (native_pixels < cap).any() and (native_pixels >= 12 * NSIDE**2 - cap).any()
    # ... and the pixels within 8 degrees of a pole, where HEALPix computes from sin(theta).
    z = healpy.pix2vec(NSIDE, native_pixels.ravel())[2]
    assert (np.abs(z) > 0.99).any()
    dpsi = np.angle(np.exp(1j * (pointing[:, :, 1] - psi)))
    assert np.abs(dpsi).max() < 1e-9
    # Detectors at pi d / D: at one sample, detector d is turned by pi d / D from detector 0.
    turn = np.angle(np.exp(1j * (pointing[1, :, 1] - pointing[0, :, 1])))
    assert np.allclose(np.abs(turn), np.pi / DETECTORS, atol=1e-9)


def test_generated_sky_is_the_counter_based_definition(app_run):
    _, solved = app_run
    seen = solved[0] != UNSEEN
    assert seen.sum() > 0.5 * solved.shape[1]
    for c, amplitude in enumerate((100.0, 10.0, 10.0)):
        key = counter_rng.stream_key(SEED, counter_rng.STREAM_SKY, c)
        expected = amplitude * counter_rng.normal(key, np.flatnonzero(seen))
        assert np.abs(solved[c, seen] - expected).max() <= 1e-8 * np.abs(expected).max()


def test_counter_rng_known_values():
    # Hand-worked from the definition: SplitMix64 finaliser of seed + G etc. (Python ints).
    mask = (1 << 64) - 1
    g = 0x9E3779B97F4A7C15

    def mix(z):
        z &= mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    key = mix(mix(mix(5 + g) + 3 * g) + 8 * g)  # seed 5, stream 2, sub 7
    assert counter_rng.stream_key(5, 2, 7) == key
    bits = [mix(key + (i + 1) * g) for i in range(4)]
    assert counter_rng.bits(key, np.arange(4)).tolist() == bits
    u = [((b >> 11) + 0.5) / 2**53 for b in bits]
    assert counter_rng.uniform(key, np.arange(4)).tolist() == u
    normal = np.sqrt(-2 * np.log(u[2])) * np.cos(2 * np.pi * u[3])
    assert counter_rng.normal(key, [1])[0] == pytest.approx(normal, rel=1e-15)
