"""Hockney fits on synthetic data with known parameters."""

import numpy as np
import pytest

from petacomm.errors import PetacommError
from petacomm.model.fit import fit_line, fit_piecewise, piece_for

SIZES = 2.0 ** np.arange(3, 27)  # 8 B .. 64 MiB


def test_single_line_recovered_exactly():
    alpha, beta = 2.5e-6, 1 / 7.0e9
    fit = fit_line(SIZES, alpha + beta * SIZES)
    assert fit.alpha == pytest.approx(alpha, rel=1e-9)
    assert fit.beta == pytest.approx(beta, rel=1e-9)
    assert fit.r2 == pytest.approx(1.0)


def test_noisy_line_recovered_within_one_percent():
    rng = np.random.default_rng(7)
    alpha, beta = 1.2e-6, 1 / 12.0e9
    truth = alpha + beta * SIZES
    noisy = truth * (1 + rng.normal(0, 0.002, SIZES.size))
    fit = fit_line(SIZES, noisy)
    assert fit.alpha == pytest.approx(alpha, rel=0.01)
    assert fit.beta == pytest.approx(beta, rel=0.01)
    assert fit.r2 > 0.99


def test_piecewise_breakpoint_found_from_data():
    # Eager below 8 KiB (low latency, lower bandwidth); rendezvous above.
    eager = (0.8e-6, 1 / 3.0e9)
    rendezvous = (6.0e-6, 1 / 9.0e9)
    t = np.where(SIZES < 8192, eager[0] + eager[1] * SIZES, rendezvous[0] + rendezvous[1] * SIZES)
    rng = np.random.default_rng(3)
    t = t * (1 + rng.normal(0, 0.001, SIZES.size))
    pieces = fit_piecewise(SIZES, t)
    assert len(pieces) == 2
    low, high = pieces
    assert low.to_bytes == 4096 and high.from_bytes == 8192
    assert low.alpha == pytest.approx(eager[0], rel=0.01)
    assert low.beta == pytest.approx(eager[1], rel=0.01)
    assert high.alpha == pytest.approx(rendezvous[0], rel=0.01)
    assert high.beta == pytest.approx(rendezvous[1], rel=0.01)
    assert piece_for(pieces, 100) is low and piece_for(pieces, 1 << 20) is high


def test_straight_line_is_not_split():
    t = 3e-6 + SIZES / 5e9
    assert len(fit_piecewise(SIZES, t * (1 + 1e-4 * np.sin(SIZES)))) == 1


def test_three_protocols():
    t = np.select(
        [SIZES < 1024, SIZES < 262144],
        [0.3e-6 + SIZES / 1e9, 2e-6 + SIZES / 4e9],
        10e-6 + SIZES / 10e9,
    )
    pieces = fit_piecewise(SIZES, t)
    assert [p.from_bytes for p in pieces] == [8, 1024, 262144]


def test_coefficients_never_negative():
    # Data bending down would ask for a negative latency; the fit clamps it to zero.
    t = 1e-9 * SIZES - 1e-7 * np.sqrt(SIZES) + 1e-5
    fit = fit_line(SIZES[10:], t[10:])
    assert fit.alpha >= 0 and fit.beta >= 0


@pytest.mark.parametrize(
    ("n", "t", "message"),
    [
        ([1, 2], [1.0], "same length"),
        ([1], [1.0], "at least 2"),
        ([1, 2], [0.0, 1.0], "positive"),
    ],
)
def test_bad_input(n, t, message):
    with pytest.raises(PetacommError, match=message):
        fit_line(n, t)
