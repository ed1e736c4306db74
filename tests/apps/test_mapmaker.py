"""petacomm-mapmaker end to end: exact recovery without noise, a chi^2 test with white noise,
the same map for every reduction strategy and 1, 2, 3, 4, 7, 8 ranks, the profiler's view
of its phases, `petacomm bench mapmaker`, and clean refusals of bad parameters. Expected
values come from the input sky and from numpy computations on the app's pointing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from apps_harness import UNSEEN, expect_app_error, mapmaker, run_mapmaker

from cli_harness import expect_clean_error
from mpi_harness import RANK_COUNTS, mpi_test_env, mpiexec_argv

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--nside=16", "--samples=20000", "--detectors=4", "--seed=3"]
STRATEGIES = ("dense-allreduce", "allgather", "directory", "owner", "hub-split")


def random_sky(nside: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1, (3, 12 * nside**2)) * np.array([[50.0], [5.0], [5.0]]) + [
        [20],
        [0],
        [0],
    ]


def white_blocks(pointing: np.ndarray, npix: int, sigma: float):
    """Hit counts and M_p = sum over samples of w w^T / sigma^2, w = (1, cos 2psi, sin 2psi)."""
    pix = pointing[:, :, 0].astype(np.int64).ravel()
    psi = pointing[:, :, 1].ravel()
    w = np.stack([np.ones_like(psi), np.cos(2 * psi), np.sin(2 * psi)])
    blocks = np.zeros((npix, 3, 3))
    for r in range(3):
        for c in range(3):
            blocks[:, r, c] = np.bincount(pix, w[r] * w[c], minlength=npix) / sigma**2
    return np.bincount(pix, minlength=npix), blocks


def well_conditioned(hits: np.ndarray, blocks: np.ndarray, rcond_min=1e-3, min_hits=3):
    seen = hits > 0
    eig = np.linalg.eigvalsh(blocks[seen])
    good = np.zeros(hits.size, bool)
    good[np.flatnonzero(seen)] = (eig[:, 0] > 0) & (eig[:, 0] >= rcond_min * eig[:, -1])
    return good & (hits >= min_hits)


def fits_recipe(docs: Path) -> str:
    """The FITS -> .npy snippet of docs/mapmaker.md (run as the docs show it)."""
    text = docs.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    recipe = [b for b in blocks if "read_map" in b]
    assert recipe, "docs/mapmaker.md has no FITS -> .npy recipe"
    return recipe[0]


def test_no_noise_recovers_the_input_map_from_fits_via_the_docs_recipe(tmp_path, monkeypatch):
    import healpy

    sky = random_sky(16, 1)
    healpy.write_map(str(tmp_path / "sky.fits"), sky, dtype=np.float64, overwrite=True)
    monkeypatch.chdir(tmp_path)
    exec(fits_recipe(ROOT / "docs" / "mapmaker.md"), {})  # writes sky.npy
    assert np.array_equal(np.load(tmp_path / "sky.npy"), sky)
    # 1/f weighting: PCG iterates (the white block preconditioner is not exact here).
    run_mapmaker(
        3,
        *SMALL,
        f"--sky={tmp_path / 'sky.npy'}",
        "--noise=none",
        "--weighting=1/f",
        "--tol=1e-12",
        f"--output={tmp_path / 'map.npy'}",
        f"--save-pointing={tmp_path / 'pointing.npy'}",
        f"--json={tmp_path / 'run.json'}",
        "--quiet",
    )
    solved = np.load(tmp_path / "map.npy")
    hits, blocks = white_blocks(np.load(tmp_path / "pointing.npy"), sky.shape[1], 100.0)
    good = well_conditioned(hits, blocks)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["runs"][0]["iterations"] > 3
    # The flagged pixels are exactly the ill-conditioned ones: unsolved = UNSEEN.
    assert np.array_equal(solved[0] != UNSEEN, good)
    assert run["pixels"]["solved"] == good.sum() and run["pixels"]["observed"] == (hits > 0).sum()
    assert 0.7 * (hits > 0).sum() < good.sum() < (hits > 0).sum()  # some are flagged
    for c in range(3):
        error = np.abs(solved[c, good] - sky[c, good]).max() / np.abs(sky[c, good]).max()
        assert error <= 1e-8, (c, error)
    assert run["verification"]["pass"] and run["verification"]["value"] <= 1e-8
    # A FITS path is refused with the way out.
    done = run_mapmaker(1, "--sky=" + str(tmp_path / "sky.fits"), check=False)
    expect_app_error(done, "petacomm-mapmaker", "--sky", "sky.fits", "docs/mapmaker.md")


def test_white_noise_residual_chi2_is_consistent_with_the_noise_level(tmp_path):
    sigma = 30.0
    sky = random_sky(16, 2)
    np.save(tmp_path / "sky.npy", sky)
    run_mapmaker(
        2,
        *SMALL,
        f"--sky={tmp_path / 'sky.npy'}",
        "--noise=white",
        f"--sigma={sigma}",
        f"--output={tmp_path / 'map.npy'}",
        f"--save-pointing={tmp_path / 'pointing.npy'}",
        f"--json={tmp_path / 'run.json'}",
        "--quiet",
    )
    solved = np.load(tmp_path / "map.npy")
    hits, blocks = white_blocks(np.load(tmp_path / "pointing.npy"), sky.shape[1], sigma)
    good = solved[0] != UNSEEN
    assert np.array_equal(good, well_conditioned(hits, blocks))
    # With white noise the GLS map error e = m - s of pixel p is N(0, M_p^-1): e^T M_p e is
    # chi^2 with 3 degrees of freedom, independently per pixel. The sum over N pixels has
    # mean 3N and standard deviation sqrt(6N); 5 standard deviations (seed fixed) separates
    # a correct noise weighting from one off by even 10% (a shift of 0.1 * 3N >> 5 sqrt(6N)).
    e = (solved[:, good] - sky[:, good]).T
    chi2 = np.einsum("pi,pij,pj->p", e, blocks[good], e)
    n = good.sum()
    assert abs(chi2.sum() - 3 * n) <= 5 * np.sqrt(6 * n), (chi2.sum(), 3 * n)
    # The tail too: the fraction above chi^2_3's 99th percentile (11.345) is 1%, within five
    # binomial standard deviations.
    tail = np.mean(chi2 > 11.345)
    assert abs(tail - 0.01) <= 5 * np.sqrt(0.01 * 0.99 / n)
    run = json.loads((tmp_path / "run.json").read_text())
    # White weighting: the block-Jacobi preconditioner is the exact inverse, one iteration.
    assert run["runs"][0]["iterations"] == 1 and run["runs"][0]["final_residual"] < 1e-12
    assert run["verification"]["pass"]


@pytest.fixture(scope="module")
def one_over_f_runs(tmp_path_factory):
    """The same 1/f problem solved with every strategy at every rank count."""
    out = tmp_path_factory.mktemp("ranks")
    runs = {}
    for ranks in RANK_COUNTS:
        run_mapmaker(
            ranks,
            *SMALL,
            "--noise=1/f",
            "--interval=1000",
            f"--strategy={','.join(STRATEGIES)}",
            f"--output={out / f'map{ranks}.npy'}",
            f"--json={out / f'run{ranks}.json'}",
            "--quiet",
        )
        runs[ranks] = (
            np.load(out / f"map{ranks}.npy"),
            json.loads((out / f"run{ranks}.json").read_text()),
        )
    return runs


def test_every_strategy_and_rank_count_gives_the_same_map(one_over_f_runs):
    reference_map, reference = one_over_f_runs[1]
    seen = reference_map[0] != UNSEEN
    assert reference["runs"][0]["iterations"] > 5
    for ranks, (solved, run) in one_over_f_runs.items():
        assert [r["strategy"] for r in run["runs"]] == list(STRATEGIES)
        assert run["strategies_agree_to"] <= 1e-12, ranks
        assert {r["iterations"] for r in run["runs"]} == {reference["runs"][0]["iterations"]}
        assert np.array_equal(solved[0] != UNSEEN, seen), ranks
        for c in range(3):
            diff = np.abs(solved[c, seen] - reference_map[c, seen]).max()
            assert diff <= 1e-9 * np.abs(reference_map[c, seen]).max(), (ranks, c, diff)
        assert run["pixels"] == reference["pixels"]
        # Whole stationary intervals per rank (20 intervals of 1000 samples).
        per_rank = run["samples_per_rank"]
        assert per_rank["min"] % 1000 == 0 and per_rank["max"] - per_rank["min"] <= 1000


def test_reduction_traffic_figures(one_over_f_runs):
    for ranks, (_, run) in one_over_f_runs.items():
        by = {r["strategy"]: r for r in run["runs"]}
        if ranks == 1:
            assert all(r["bytes_per_execute"]["max"] == 0 for r in run["runs"])
            continue
        # Dense allreduce sends the whole touched range; the sparse exchanges only the shared
        # pixels' values, fewer bytes (the study's point); owner sends each value twice at most.
        assert (
            by["directory"]["bytes_per_execute"]["max"]
            < by["dense-allreduce"]["bytes_per_execute"]["max"]
        )
        assert by["directory"]["bytes_per_execute"] == by["allgather"]["bytes_per_execute"]
        assert by["directory"]["messages_per_execute"]["max"] <= ranks - 1


def test_profiled_run_shows_the_phases_and_the_solve_communication(tmp_path):
    from petacomm.profile import analysis, load

    log = tmp_path / "run.prof.json"
    argv = [sys.executable, "-m", "petacomm.cli", "profile", "-o", str(log), "--no-banner", "--"]
    argv += mpiexec_argv(3) + [str(mapmaker()), *SMALL, "--strategy=directory", "--quiet"]
    argv += [f"--json={tmp_path / 'run.json'}"]
    done = subprocess.run(argv, capture_output=True, text=True, env=mpi_test_env(), check=False)
    assert done.returncode == 0, done.stderr
    profile = load(log)
    iterations = json.loads((tmp_path / "run.json").read_text())["runs"][0]["iterations"]
    regions = {r.name: r for r in analysis.regions(profile)}
    assert {"scan", "setup", "solve", "reduce", "output"} <= set(regions)
    assert regions["reduce"].parent == "solve"
    # Per rank: the right-hand side's reduction and first dot products, then per iteration
    # one reduction of A p and two dot-product allreduces. Each of the 1 + iterations
    # executions of the plan also starts with its argument check, one MPI_Iallreduce on more
    # than one rank (docs/sparse-reduce.md).
    assert regions["reduce"].entries == 3 * (2 + 3 * iterations)
    calls = {c.call: c for c in analysis.calls(profile, region="reduce")}
    assert calls["MPI_Allreduce"].count == 3 * (1 + 2 * iterations)
    assert calls["MPI_Iallreduce"].count == 3 * (1 + iterations)
    assert (
        regions["reduce"].mpi_mean > 0 and regions["solve"].mpi_mean >= regions["reduce"].mpi_mean
    )


def test_bench_mapmaker_prints_strategies_side_by_side(tmp_path):
    out = tmp_path / "bench.json"
    argv = [sys.executable, "-m", "petacomm.cli", "bench", "mapmaker", "--ranks=2,3"]
    argv += ["--nside=8", "--samples=4000", "--iterations=3", "--rounds=1"]
    argv += ["--strategies=dense-allreduce,directory", f"--json={out}"]
    done = subprocess.run(argv, capture_output=True, text=True, env=mpi_test_env(), check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert "iter ms" in lines[2] and "KiB/exec" in lines[2]
    rows = [line.split() for line in lines if re.match(r"\s+[23]\s+\S", line)]
    assert [(r[0], r[1]) for r in rows] == [
        ("2", "dense-allreduce"),
        ("2", "directory"),
        ("3", "dense-allreduce"),
        ("3", "directory"),
    ]
    data = json.loads(out.read_text())
    assert data["schema"] == "petacomm-bench-mapmaker"
    run_json = data["runs"][0]
    assert run_json["ranks"] == 2
    for run in data["runs"]:
        dense, directory = run["strategies"]
        assert dense["iterations"] == directory["iterations"] == 3
        assert dense["comm_speedup"] == 1.0
        assert directory["bytes_per_execute"] < dense["bytes_per_execute"]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--nside=100"], ("--nside", "100")),
        (["--noise=pink"], ("--noise", "pink")),
        (["--strategy=nope"], ("--strategy", "nope")),
        (["--samples=100", "--interval=200"], ("--interval", "200")),
        (["--output=/nonexistent/dir/map.npy"], ("--output", "/nonexistent/dir")),
    ],
)
def test_bad_parameters_are_named(args, names):
    done = run_mapmaker(1, *args, check=False)
    expect_app_error(done, "petacomm-mapmaker", *names)


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--strategies=dense-allreduce,nope"], ("--strategies", "nope")),
        (["--ranks=0"], ("--ranks", "0")),
        (["--iterations=0"], ("--iterations", "0")),
        (["--noise=pink"], ("--noise", "pink")),
    ],
)
def test_bench_refuses_bad_parameters(args, names):
    expect_clean_error("bench", "mapmaker", *args, names=names)


def test_bad_sky_file_stops_every_rank_together(tmp_path):
    np.save(tmp_path / "sky.npy", np.zeros((3, 100)))
    done = run_mapmaker(3, f"--sky={tmp_path / 'sky.npy'}", check=False, timeout=60)
    expect_app_error(done, "petacomm-mapmaker", "--sky", "12 nside^2")
    np.save(tmp_path / "sky32.npy", np.zeros((3, 12 * 4**2), dtype=np.float32))
    done = run_mapmaker(1, f"--sky={tmp_path / 'sky32.npy'}", check=False, timeout=60)
    expect_app_error(done, "petacomm-mapmaker", "--sky", "<f4", "float64")


def test_help_lists_every_option():
    done = subprocess.run(
        [str(mapmaker()), "--help"], capture_output=True, text=True, env=mpi_test_env()
    )
    assert done.returncode == 0
    for option in (
        "--nside",
        "--samples",
        "--detectors",
        "--sky",
        "--noise",
        "--fknee",
        "--strategy",
        "--output",
        "--json",
        "--seed",
    ):
        assert option in done.stdout
    # The strategies it offers are the library's registry, every one and nothing else.
    from petacomm.xchg import strategy_names

    text = done.stdout.split("--strategy")[1].split("\n  --")[0]
    offered = re.findall(r"[a-z][a-z-]*[a-z]", text.split("(default auto):")[1])
    assert offered == list(strategy_names()), text
