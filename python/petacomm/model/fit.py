"""Least-squares fits of the Hockney model ``t = alpha + n * beta``, piecewise where the
protocol changes (eager vs rendezvous), with breakpoints found from the data.

Fits minimise the *relative* error (weights 1/t^2): measured times span several decades,
and an unweighted fit would let the largest messages decide everything. Coefficients are
constrained to be non-negative (a negative latency or per-byte time is not physical).
R^2 is reported in the same weighted sense: 1 - sum(w r^2) / sum(w (t - mean_w t)^2).
The number of pieces (1 to ``max_pieces``) is chosen by the Bayesian information
criterion, so a breakpoint is only kept when the data clearly ask for it. Relative errors
below ``RESOLUTION`` (0.1 %) count as that much: timers do not resolve better, and without
this floor nearly exact data (a simulator's) would be split at the first ns of difference.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from petacomm.errors import PetacommError

RESOLUTION = 1e-3  # relative timing error the fit's model choice does not try to explain


@dataclass(frozen=True)
class LineFit:
    alpha: float  # seconds
    beta: float  # seconds per byte
    r2: float
    from_bytes: int
    to_bytes: int
    points: int
    weighted_sse: float

    @property
    def bandwidth(self) -> float:
        """1/beta in bytes per second (inf when beta is 0)."""
        return math.inf if self.beta <= 0 else 1.0 / self.beta


def fit_line(nbytes, seconds) -> LineFit:
    n = np.asarray(nbytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if n.shape != t.shape or n.ndim != 1:
        raise PetacommError("fit: nbytes and seconds must be 1-D arrays of the same length")
    if len(n) < 2:
        raise PetacommError(f"fit: need at least 2 points, got {len(n)}")
    if np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise PetacommError("fit: times must be positive and finite")
    # scipy is imported here, not at module level: every `petacomm` command imports this
    # module (through the machine model) and scipy.optimize alone costs ~0.4 s to import.
    from scipy.optimize import nnls

    w = 1.0 / t  # square root of the weights 1/t^2
    design = np.column_stack([w, n * w])
    coef, _ = nnls(design, t * w)
    alpha, beta = float(coef[0]), float(coef[1])
    residual = (t - (alpha + beta * n)) * w
    sse = float(residual @ residual)
    weights = w * w
    mean = float(weights @ t / weights.sum())
    total = float(weights @ (t - mean) ** 2)
    # Equal times leave a weighted variance of rounding noise (about 1e-32 per point, not 0),
    # which made R^2 of an exact flat fit 0.0-0.5: below this there is nothing to explain.
    rounding = len(n) * (16 * np.finfo(float).eps) ** 2
    r2 = 1.0 - sse / total if total > rounding else 1.0
    return LineFit(alpha, beta, r2, int(n.min()), int(n.max()), len(n), sse)


def fit_piecewise(nbytes, seconds, *, max_pieces: int = 3, min_points: int = 3) -> list[LineFit]:
    """Best 1..max_pieces contiguous line fits by BIC; pieces ordered by size."""
    n = np.asarray(nbytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    order = np.argsort(n)
    n, t = n[order], t[order]
    count = len(n)
    if count < 2:
        raise PetacommError(f"fit: need at least 2 points, got {count}")
    if max_pieces < 1:
        raise PetacommError(f"max_pieces: must be at least 1, got {max_pieces}")

    best: tuple[float, list[LineFit]] | None = None
    for pieces in range(1, max_pieces + 1):
        if pieces * min_points > count and pieces > 1:
            break
        for cuts in itertools.combinations(range(min_points, count - min_points + 1), pieces - 1):
            bounds = (0, *cuts, count)
            if any(b - a < min_points for a, b in itertools.pairwise(bounds)) and pieces > 1:
                continue
            fits = [fit_line(n[a:b], t[a:b]) for a, b in itertools.pairwise(bounds)]
            sse = sum(f.weighted_sse for f in fits)
            parameters = 3 * pieces - 1  # two per line plus each breakpoint
            score = count * math.log(max(sse / count, RESOLUTION**2)) + parameters * math.log(count)
            if best is None or score < best[0] - 1e-9:
                best = (score, fits)
    assert best is not None
    return best[1]


def piece_for(pieces: list[LineFit], nbytes: float) -> LineFit:
    """The piece covering ``nbytes``: below the first use the first, above the last the last,
    between two pieces the one whose range starts at or below the size."""
    chosen = pieces[0]
    for piece in pieces:
        if nbytes >= piece.from_bytes:
            chosen = piece
    return chosen
