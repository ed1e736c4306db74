"""A plain serial discrete-ordinates sweep, written from the equations in docs/sweep3d.md
and independent of the C++ code: the reference every decomposition of petacomm-sweep3d
must reproduce.

One energy group, isotropic scattering, vacuum boundaries, diamond differencing with the
optional negative-flux fixup, source iteration. Cells are visited one at a time in each
octant's sweep order; nothing is blocked or decomposed.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def quadrature(angles: int):
    """(mu, eta, xi, weight) of each first-octant direction."""
    out = []
    for m in range(angles):
        xi = (m + 0.5) / angles
        azimuth = (math.pi / 2) * (m + 0.5) / angles
        s = math.sqrt(1.0 - xi * xi)
        out.append((s * math.cos(azimuth), s * math.sin(azimuth), xi, 1.0 / (8 * angles)))
    return out


def materials(shape, sigma_t: float):
    """sigma_t(i,j,k) and the external source q(i,j,k) on the global grid."""
    i, j, k = np.indices(shape)
    total = sigma_t * (1.0 + 0.5 * ((i + j + k) % 2))
    source = 1.0 + 0.25 * ((i + 2 * j + 3 * k) % 5)
    return total, source


def _solve_cell(q, sigma_t, c, incoming, fixup):
    """Diamond difference of one cell and direction: (psi, outgoing fluxes, fixed?)."""
    psi = (q + sum(cd * f for cd, f in zip(c, incoming, strict=True))) / (sigma_t + sum(c))
    out = [2 * psi - f for f in incoming]
    if not fixup or min(out) >= 0:
        return psi, out, False
    fixed = [False, False, False]
    while True:
        numerator, denominator = q, sigma_t
        for d in range(3):
            if fixed[d]:
                numerator += 0.5 * c[d] * incoming[d]  # outgoing 0: balance a (0 - in)
            else:
                numerator += c[d] * incoming[d]
                denominator += c[d]
        psi = numerator / denominator
        out = [0.0 if fixed[d] else 2 * psi - incoming[d] for d in range(3)]
        negative = [d for d in range(3) if not fixed[d] and out[d] < 0]
        if not negative:
            return psi, out, True
        for d in negative:
            fixed[d] = True
            out[d] = 0.0


def sweep_once(total, q_iteration, directions, cell_size, fixup):
    """One transport sweep over all 8 octants: (scalar flux, cell-directions fixed)."""
    nx, ny, nz = total.shape
    phi = np.zeros(total.shape)
    fixups = 0
    for di, dj, dk in itertools.product((1, -1), repeat=3):
        i_order = range(nx) if di > 0 else range(nx - 1, -1, -1)
        j_order = range(ny) if dj > 0 else range(ny - 1, -1, -1)
        k_order = range(nz) if dk > 0 else range(nz - 1, -1, -1)
        for mu, eta, xi, weight in directions:
            c = (2 * mu / cell_size, 2 * eta / cell_size, 2 * xi / cell_size)
            face_x = np.zeros((ny, nz))  # flux entering the next cell along i
            face_y = np.zeros((nx, nz))
            face_z = np.zeros((nx, ny))
            for k in k_order:
                for j in j_order:
                    for i in i_order:
                        incoming = (face_x[j, k], face_y[i, k], face_z[i, j])
                        psi, out, fixed = _solve_cell(
                            q_iteration[i, j, k], total[i, j, k], c, incoming, fixup
                        )
                        fixups += fixed
                        face_x[j, k], face_y[i, k], face_z[i, j] = out
                        phi[i, j, k] += weight * psi
    return phi, fixups


def solve(
    grid,
    angles: int,
    *,
    sigma_t: float = 1.0,
    scattering_ratio: float = 0.5,
    cell_size: float = 1.0,
    fixup: bool = False,
    iterations: int = 10,
    tolerance: float = 0.0,
    max_iterations: int = 100,
):
    """Source iteration; returns (phi of shape grid, iterations done, last relative change,
    fixups in the last iteration)."""
    total, source = materials(tuple(grid), sigma_t)
    directions = quadrature(angles)
    phi_old = np.zeros(total.shape)
    limit = max_iterations if tolerance > 0 else iterations
    iterations_done = 0
    for iterations_done in range(1, limit + 1):  # noqa: B007 (returned)
        q_iteration = source + scattering_ratio * total * phi_old
        phi, fixups = sweep_once(total, q_iteration, directions, cell_size, fixup)
        change = np.abs(phi - phi_old).max() / np.abs(phi).max()
        phi_old = phi
        if tolerance > 0 and change < tolerance:
            break
    return phi, iterations_done, change, fixups
