"""Hockney fits on synthetic data with known parameters."""

import dataclasses
import itertools
import math

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


def test_breakpoint_next_to_either_end_is_found():
    # A piece needs min_points (3) points; cuts 3 points from the start or from the end are
    # valid and, on exact two-line data, the only fits with no residual.
    low, high = (0.5e-6, 1 / 2.0e9), (8.0e-6, 1 / 10.0e9)
    for cut in (3, SIZES.size - 3):
        t = np.where(np.arange(SIZES.size) < cut, *(a + b * SIZES for a, b in (low, high)))
        pieces = fit_piecewise(SIZES, t, max_pieces=2)
        assert [p.from_bytes for p in pieces] == [8, int(SIZES[cut])], cut
        assert [p.points for p in pieces] == [cut, SIZES.size - cut]


def _line(piece):  # (from_bytes, to_bytes) -> a LineFit covering that range
    from petacomm.model.fit import LineFit

    return LineFit(1e-6, 1e-9, 1.0, piece[0], piece[1], 3, 0.0)


def test_piece_for_at_and_around_the_breakpoints():
    # The documented rule: the piece whose range starts at or below the size; below the
    # first piece the first one, above the last the last one.
    pieces = [_line((64, 4096)), _line((8192, 65536)), _line((131072, 1 << 20))]
    expected = {1: 0, 64: 0, 8191: 0, 8192: 1, 100000: 1, 131071: 1, 131072: 2, 1 << 30: 2}
    for size, index in expected.items():
        assert piece_for(pieces, size) is pieces[index], size


def _relative_sse(x, y) -> float:
    """Smallest sum of ((y - alpha - beta x) / y)^2 over alpha, beta >= 0: the unconstrained
    least-squares solution when it is non-negative, else the best fit on a boundary (one
    coefficient zero, the other its one-variable optimum clamped at zero)."""
    columns = np.column_stack([1 / y, x / y])  # each row scaled by 1/t
    ones = np.ones_like(y)
    candidates = [np.zeros(2)]
    for j in range(2):
        c = np.zeros(2)
        c[j] = max(0.0, float(columns[:, j] @ ones / (columns[:, j] @ columns[:, j])))
        candidates.append(c)
    both, *_ = np.linalg.lstsq(columns, ones, rcond=None)
    if np.all(both >= 0):
        candidates.append(both)
    return min(float(np.sum((ones - columns @ c) ** 2)) for c in candidates)


def _reference_pieces(n, t, max_pieces=3, min_points=3, resolution=1e-3):
    """The module's documented model choice, re-derived plainly: every split into contiguous
    runs of >= min_points points, each run fitted by non-negative least squares on relative
    error, scored by
    BIC = N log(max(SSE/N, resolution^2)) + (2 per line + 1 per breakpoint) log N; the lowest
    score wins (fewer pieces on ties). Returns the first size of each piece."""
    best = None
    count = len(n)
    for pieces in range(1, max_pieces + 1):
        for cuts in itertools.combinations(range(1, count), pieces - 1):
            bounds = (0, *cuts, count)
            runs = list(zip(bounds[:-1], bounds[1:], strict=True))
            if any(b - a < min_points for a, b in runs):
                continue
            sse = sum(_relative_sse(n[a:b], t[a:b]) for a, b in runs)
            parameters = 2 * pieces + (pieces - 1)
            score = count * math.log(max(sse / count, resolution**2))
            score += parameters * math.log(count)
            if best is None or score < best[0] - 1e-9:
                best = (score, [int(n[a]) for a, _ in runs])
    return best[1]


def test_number_of_pieces_follows_the_documented_criterion():
    # Two protocols whose difference ranges from invisible to obvious under 1 % noise: the
    # choice between one, two or three pieces is close for many of these, so the penalty per
    # line and per breakpoint, the resolution floor and the allowed cuts all decide some.
    rng = np.random.default_rng(11)
    sizes = 2.0 ** np.arange(3, 17)  # 14 sizes
    chosen = []
    for step in np.geomspace(0.002, 0.5, 24):
        alpha, beta = 2e-6, 1 / 5e9
        t = alpha + beta * sizes
        t = np.where(sizes >= 2048, t * (1 + step), t) * (1 + rng.normal(0, 0.01, sizes.size))
        pieces = fit_piecewise(sizes, t)
        chosen.append(len(pieces))
        assert [p.from_bytes for p in pieces] == _reference_pieces(sizes, t), step
    assert len(set(chosen)) > 1, chosen  # the data do exercise the choice


def test_r2_is_the_documented_weighted_one_by_hand():
    # Four sizes, times off a line by +-2 %: alpha, beta from the weighted normal equations
    # solved here (rows scaled by 1/t), then R^2 = 1 - sum(w r^2) / sum(w (t - m)^2) with
    # w = 1/t^2 and m the w-weighted mean of t (module docstring), all written out.
    n = np.array([8.0, 1024.0, 65536.0, 1048576.0])
    t = (1e-6 + n * 1e-10) * np.array([1.02, 0.98, 1.02, 0.98])
    a = np.column_stack([1 / t, n / t])
    (alpha, beta), *_ = np.linalg.lstsq(a, np.ones(4), rcond=None)
    assert alpha > 0 and beta > 0  # the non-negativity bound is not active
    w = 1 / t**2
    residual = t - (alpha + beta * n)
    mean = (w * t).sum() / w.sum()
    r2 = 1 - (w * residual**2).sum() / (w * (t - mean) ** 2).sum()
    fit = fit_line(n, t)
    assert (fit.alpha, fit.beta) == pytest.approx((alpha, beta), rel=1e-9)
    assert fit.r2 == pytest.approx(r2, rel=1e-9)
    assert fit.weighted_sse == pytest.approx((w * residual**2).sum(), rel=1e-9)
    assert 0.9 < r2 < 0.9999  # a figure the noise shows in, not 1


def test_bandwidth_is_one_over_beta():
    fit = fit_line([8, 1024, 65536], [1e-6 + n / 4e9 for n in (8, 1024, 65536)])
    assert fit.bandwidth == pytest.approx(4e9, rel=1e-9)
    # A zero per-byte time (latency only) is an unbounded bandwidth, not a division error.
    assert dataclasses.replace(_line((8, 64)), beta=0.0).bandwidth == math.inf


def test_sizes_in_any_order():
    # fit_line's range is the smallest and largest size, not the first and last given; and
    # fit_piecewise sorts the points before it cuts them into runs: the breakpoint test's
    # data shuffled give the same pieces.
    sizes = np.array([4096.0, 8, 1 << 20, 64])
    fit = fit_line(sizes, 1e-6 + sizes / 5e9)
    assert (fit.from_bytes, fit.to_bytes, fit.points) == (8, 1 << 20, 4)
    low, high = (0.5e-6, 1 / 2.0e9), (8.0e-6, 1 / 10.0e9)
    t = np.where(SIZES < 8192, *(a + b * SIZES for a, b in (low, high)))
    shuffle = np.random.default_rng(1).permutation(SIZES.size)
    pieces = fit_piecewise(SIZES[shuffle], t[shuffle], max_pieces=2)
    assert [(p.from_bytes, p.to_bytes) for p in pieces] == [(8, 4096), (8192, 1 << 26)]


def test_two_pieces_of_exactly_min_points_each():
    # Six points, min_points 3: the only two-piece split is 3 + 3 and it must be tried.
    # Exact lines 1 us + n / 1 GB/s below 1 KiB and 20 us + n / 10 GB/s from 1 KiB: no line
    # through all six comes close (relative errors of tens of percent), the two pieces are
    # exact.
    sizes = np.array([8.0, 64, 512, 1024, 8192, 65536])
    t = np.where(sizes < 1024, 1e-6 + sizes / 1e9, 20e-6 + sizes / 10e9)
    pieces = fit_piecewise(sizes, t, max_pieces=2)
    assert [(p.from_bytes, p.to_bytes, p.points) for p in pieces] == [(8, 512, 3), (1024, 65536, 3)]
    assert pieces[1].alpha == pytest.approx(20e-6, rel=1e-6)


def test_max_pieces_below_one_is_refused():
    with pytest.raises(PetacommError, match="max_pieces: must be at least 1, got 0"):
        fit_piecewise(SIZES, 1e-6 + SIZES / 5e9, max_pieces=0)


def test_equal_times_are_a_perfect_fit():
    # Every size takes the same time (a latency-bound piece, a timer's quantum): alpha = t,
    # beta = 0, no residual, and no variance to explain, so R^2 = 1. The weighted variance
    # of equal times is rounding noise (~1e-32, not 0): R^2 came out 0.5, 0.4 or 0.0 here.
    for t in (5e-6, 1.2e-6, 3e-7):
        fit = fit_line([8, 16, 32, 64, 128], [t] * 5)
        assert fit.alpha == pytest.approx(t, rel=1e-9) and fit.beta == pytest.approx(0, abs=1e-20)
        assert fit.r2 == 1.0, t
    # A flat eager piece (1.5 us up to 128 B) then 1.5 us + n / 5 GB/s: both pieces exact.
    sizes = np.array([8.0, 16, 32, 64, 128, 256, 1024, 4096, 16384, 65536])
    pieces = fit_piecewise(sizes, np.where(sizes <= 128, 1.5e-6, 1.5e-6 + sizes / 5e9))
    assert [(p.from_bytes, p.r2) for p in pieces] == [(8, 1.0), (256, 1.0)]
    # Times that do vary, if only by 1e-9 of themselves, are not taken for equal ones.
    varied = fit_line([8, 16, 32, 64], 1e-6 * (1 + 1e-9 * np.array([1.0, -1, 1, -1])))
    assert varied.r2 < 0.5
