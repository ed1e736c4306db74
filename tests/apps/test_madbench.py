"""petacomm-madbench: at small NPIX the Fisher matrix, dL/dC, the Fisher inverse and the
Newton-Raphson step match a serial numpy computation of the documented math (healpy pixel
centres, scipy's Legendre polynomials: no code of the app); gang mode gives the same result
as no gangs and our remap the same bits as pdgemr2d; the phases carry the profiler's
breakdown; bad parameters are refused on every rank with one line naming them."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from apps_harness import DEBIAN_MPICC, DEBIAN_MPIEXEC, expect_app_error, madbench, run_madbench

from mpi_harness import mpi_test_env
from petacomm.datasets import counter_rng
from prerequisites import require

pytestmark = pytest.mark.mpi

NPIX, NBIN, BSIZE, SEED = 128, 4, 16, 7
# (ranks, NGANG, extra options): 1, 2, 3 (throttled I/O), 4 ranks; gangs of 2 and of 1.
CONFIGS = [
    (1, 1, []),
    (2, 1, []),
    (2, 2, ["--redistribution=both"]),
    (3, 1, ["--rmod=2", "--wmod=3"]),
    (4, 1, []),
    (4, 2, ["--redistribution=both"]),
    (4, 4, ["--redistribution=pdgemr2d"]),
]


def reference(npix: int, nbin: int, seed: int, noise: float = 1.0) -> dict:
    """The quantities of docs/madbench.md computed plainly with numpy."""
    import healpy
    from scipy.special import eval_legendre

    nside = 1
    while 12 * nside**2 < npix:
        nside *= 2
    lmax = 3 * nside - 1
    count = lmax - 1
    edges = [2 + b * count // nbin for b in range(nbin + 1)]
    r = np.array(healpy.pix2vec(nside, np.arange(npix)))
    x = np.clip(r.T @ r, -1, 1)
    ds = [
        sum((2 * ell + 1) / (4 * np.pi) * eval_legendre(ell, x) for ell in range(lo, hi))
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    ]
    centre = [0.5 * (lo + hi - 1) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    c = np.array([2 * np.pi / (lc * (lc + 1)) for lc in centre])
    d_matrix = sum(cb * s for cb, s in zip(c, ds, strict=True)) + noise * np.eye(npix)
    data = counter_rng.normal(
        counter_rng.stream_key(seed, counter_rng.STREAM_MADBENCH_DATA, 0), np.arange(npix)
    )
    w = [np.linalg.solve(d_matrix, s) for s in ds]
    z = np.linalg.solve(d_matrix, data)
    fisher = np.array([[0.5 * np.trace(a @ b) for b in w] for a in w])
    dlnl = np.array([0.5 * (data @ wb @ z - np.trace(wb)) for wb in w])
    inverse = np.linalg.inv(fisher)
    return {
        "fisher": fisher,
        "fisher_inverse": inverse,
        "dlnl_dc": dlnl,
        "c_estimate": c + inverse @ dlnl,
        "c_fiducial": c,
        "edges": edges,
        "lmax": lmax,
    }


@pytest.fixture(scope="module")
def expected():
    return reference(NPIX, NBIN, SEED)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("madbench")
    results = {}
    for ranks, gangs, extra in CONFIGS:
        path = out / f"run-{ranks}-{gangs}.json"
        iodir = out / f"io-{ranks}-{gangs}"
        run_madbench(
            ranks,
            f"--npix={NPIX}",
            f"--nbin={NBIN}",
            f"--bsize={BSIZE}",
            f"--ngang={gangs}",
            f"--seed={SEED}",
            f"--iodir={iodir}",
            f"--json={path}",
            "--quiet",
            *extra,
        )
        assert not list(iodir.iterdir())  # the matrix files are removed at the end
        results[(ranks, gangs)] = json.loads(path.read_text())
    return results


def relative(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_fisher_matrix_matches_numpy_at_every_rank_and_gang_count(runs, expected):
    for key, run in runs.items():
        assert relative(run["fisher"], expected["fisher"]) <= 1e-10, key
        assert relative(run["fisher_inverse"], expected["fisher_inverse"]) <= 1e-10, key
        assert relative(run["dlnl_dc"], expected["dlnl_dc"]) <= 1e-9, key
        assert relative(run["c_estimate"], expected["c_estimate"]) <= 1e-10, key
        bins = run["bins"]
        assert [b["lmin"] for b in bins] == expected["edges"][:-1]
        assert [b["lmax"] + 1 for b in bins] == expected["edges"][1:]
        assert relative([b["c_fiducial"] for b in bins], expected["c_fiducial"]) <= 1e-15
        assert run["verification"]["pass"] and run["verification"]["residual"] < 1e-12


def test_gangs_give_the_result_of_no_gangs(runs):
    for ranks in (2, 4):
        alone = runs[(ranks, 1)]
        for gangs in (2, 4) if ranks == 4 else (2,):
            ganged = runs[(ranks, gangs)]
            assert relative(ganged["fisher"], alone["fisher"]) <= 1e-12, (ranks, gangs)
            assert relative(ganged["dlnl_dc"], alone["dlnl_dc"]) <= 1e-12, (ranks, gangs)


def test_redistribution_moves_every_matrix_once_and_matches_pdgemr2d(runs):
    for (_, gangs), run in runs.items():
        redistribution = run["redistribution"]
        if gangs == 1:
            assert redistribution["count"] == 0 and redistribution["bytes"] == 0
            continue
        # D^-1 to every gang once, then per batch of NGANG bins the dS/dC out and W back.
        batches = -(-NBIN // gangs)
        assert redistribution["count"] == 1 + 2 * batches
        if redistribution["method"] != "pdgemr2d":
            assert redistribution["bytes"] == 8 * NPIX**2 * (gangs + 2 * NBIN)
        if redistribution["method"] == "both":
            assert redistribution["identical"] is True
            assert redistribution["pdgemr2d_s"]["max"] > 0 and redistribution["remap_s"]["max"] > 0


def test_phase_breakdown_and_flop_counts(runs, expected):
    n = float(NPIX)
    multipoles = expected["lmax"] - 1
    flops = {
        "dSdC": n * n * (5 + 5 * NBIN + 6 * multipoles),
        "invD": 2 * n * n * NBIN + n**3 + 2 * n * n,
        "W": NBIN * (2 * n**3 + 5 * n * n) + NBIN * (NBIN + 1) * n * n,
    }
    for key, run in runs.items():
        for phase, figures in run["phases"].items():
            assert figures["flops"] == pytest.approx(flops[phase], rel=1e-12), (key, phase)
            for part in ("calc_s", "mpi_s", "io_s", "lbst_s", "wall_s"):
                s = figures[part]
                assert 0 <= s["min"] <= s["mean"] <= s["max"], (key, phase, part)
            assert figures["gflops"] > 0 and figures["percent_peak"] > 0
        # dSdC writes, invD and W read: I/O time is there; one rank moves no data over MPI
        # in dSdC (no communication in that phase at all).
        assert run["phases"]["dSdC"]["io_s"]["max"] > 0
        assert run["phases"]["invD"]["io_s"]["max"] > 0
        assert run["phases"]["dSdC"]["mpi_s"]["max"] == 0
    written = runs[(1, 1)]["io"]["bytes_written_rank0"]
    # One rank: every dS/dC_b and every W_b^T written once (NPIX^2 doubles each).
    assert written == 2 * NBIN * 8 * NPIX**2


def test_profiled_phases_show_calc_mpi_io_and_lbst(tmp_path):
    require(DEBIAN_MPICC.exists(), "Debian's Open MPI is absent (libopenmpi-dev)")
    program = madbench()
    petacomm = [sys.executable, "-m", "petacomm.cli"]
    env = mpi_test_env()
    built = subprocess.run(
        [*petacomm, "profiler", "build", "--mpicc", str(DEBIAN_MPICC)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    log = tmp_path / "madbench.prof.json"
    argv = [*petacomm, "profile", "-o", str(log), "--no-banner", "--"]
    argv += [str(DEBIAN_MPIEXEC), "-n", "2", "--oversubscribe", str(program)]
    argv += [f"--npix={NPIX}", f"--nbin={NBIN}", f"--bsize={BSIZE}", "--quiet"]
    argv += [f"--iodir={tmp_path}", f"--json={tmp_path / 'run.json'}"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    from petacomm.profile import analysis, load

    profile = load(log)
    regions = {r.name: r for r in analysis.regions(profile)}
    assert {"dSdC", "invD", "W"} <= set(regions)
    for phase in ("dSdC", "invD", "W"):
        calls = {c.call: c for c in analysis.calls(profile, region=phase)}
        # The one barrier closing the phase (per rank) is what LBST measures.
        assert calls["MPI_Barrier"].count == 2, phase
    assert regions["dSdC"].io_mean > 0 and regions["invD"].io_mean > 0
    # ScaLAPACK's own communication inside pdgemm/pdtran is MPI time of the W phase.
    assert regions["W"].mpi_mean > 0
    writes = {c.call: c for c in analysis.calls(profile, region="dSdC")}
    assert writes["write"].bytes == 2 * NBIN * 8 * NPIX**2 // 2  # each rank its half, summed


@pytest.mark.parametrize(
    ("ranks", "args", "names"),
    [
        (2, ["--npix=100"], ("--npix", "100", "--bsize")),
        (2, ["--ngang=3"], ("--ngang", "3")),
        (3, ["--ngang=2"], ("--ngang", "divide", "3")),
        (1, ["--npix=128", "--nbin=50"], ("--nbin", "50")),
        (2, ["--npix=64", "--iodir={file}/sub"], ("--iodir", "Not a directory")),
    ],
)
def test_bad_parameters_are_refused_on_every_rank(tmp_path, ranks, args, names):
    (tmp_path / "file").write_text("x")
    args = [a.format(file=tmp_path / "file") for a in args]
    done = run_madbench(ranks, *args, check=False, timeout=60)
    expect_app_error(done, "petacomm-madbench", *names)


def test_help():
    done = subprocess.run(
        [str(DEBIAN_MPIEXEC), "-n", "1", str(madbench()), "--help"],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
        check=False,
    )
    assert done.returncode == 0
    for option in ("--npix", "--nbin", "--ngang", "--bsize", "--rmod", "--wmod", "--iodir"):
        assert option in done.stdout


def test_an_io_failure_on_one_rank_stops_every_rank_with_its_reason(tmp_path):
    # Rank 1's first matrix file cannot be created (a directory has its name): the write
    # fails on that rank only; all ranks stop together at the end of the phase.
    (tmp_path / "madbench.dSdC.b0.r1.dat").mkdir()
    done = run_madbench(2, "--npix=64", "--nbin=2", f"--iodir={tmp_path}", check=False, timeout=60)
    expect_app_error(done, "petacomm-madbench", "--iodir", "madbench.dSdC.b0.r1.dat", "directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["madbench.dSdC.b0.r1.dat"]
