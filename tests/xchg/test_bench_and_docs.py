"""The benchmark command, the offline model's consistency with plans, and the examples of
docs/sparse-reduce.md (the Python one runs here, the C one is native/tests/xchg/example_xchg.c,
run by ctest; the page must show exactly that file)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env, mpirun_python
from prerequisites import require_program

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DOC = ROOT / "docs" / "sparse-reduce.md"
# A CMB key set small enough for quick benchmark runs in the tests.
SMALL_CMB = ("--samples-per-rank", "2000", "--nside", "32")


def _block(marker: str, language: str) -> str:
    text = DOC.read_text()
    start = text.index(marker)
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start)
    assert match, f"no {language} block after {marker}"
    return match.group(1)


def _petacomm(*args, timeout=300):
    # The petacomm being tested: the installed one, or python/ + PETACOMM_NATIVE_DIR when the
    # caller set them (mpi_test_env passes the caller's environment through).
    env = mpi_test_env()
    return subprocess.run(
        [sys.executable, "-m", "petacomm.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", (1, 3))
def test_python_example_from_docs_runs(ranks, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(_block("<!-- example: python -->", "python"))
    assert len(script.read_text().splitlines()) <= 25
    result = mpirun_python(ranks, str(script), timeout=120)
    assert "bytes per execution" in result.stdout


def test_c_example_in_docs_is_the_tested_file():
    shown = _block("<!-- example: c", "c")
    assert shown == (ROOT / "native/tests/xchg/example_xchg.c").read_text()


@pytest.mark.mpi
def test_c_example_runs_when_built():
    from native_build import build_tree

    program = build_tree() / "bin" / "example_xchg"
    from mpi_harness import mpirun

    result = mpirun(3, [str(program)], timeout=60)
    assert "pixel 7: I = 6 (expect 6)" in result.stdout


@pytest.mark.mpi
@pytest.mark.parametrize("ranks, node_size", [(2, None), (4, 2)])
def test_offline_model_matches_plan(ranks, node_size):
    env = {"PETACOMM_NODE_SIZE": str(node_size)} if node_size else None
    result = mpirun_python(ranks, str(HERE / "consistency_worker.py"), timeout=120, env=env)
    assert result.stdout.count("consistent") == ranks, result.stdout + result.stderr


def _table_rows(block: str, header: str) -> dict[str, list[str]]:
    """The rows of the table under `header` in printed output: strategy -> its cells."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 1 :]:
        cells = line.split()
        if not cells or cells[0] not in _registered():
            break
        rows[cells[0]] = cells[1:]
    return rows


def _registered() -> tuple[str, ...]:
    from petacomm.xchg import strategy_names

    return strategy_names()[1:]


def test_bench_model_only(tmp_path):
    out = tmp_path / "model.json"
    done = _petacomm(
        "bench",
        "sparse-reduce",
        "--model-only",
        "4,32",
        "--total-samples",
        "40000",
        "--nside",
        "64",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["schema_version"] == 1
    assert [e["ranks"] for e in data["model_only"]] == [4, 32]
    header = "strategy          execute us  setup ms  msgs/rank   bytes/rank  speedup"
    blocks = done.stdout.split("\ncmb on ")[1:]
    assert len(blocks) == 2 and all(len(line) <= 100 for line in done.stdout.splitlines())
    for entry, block in zip(data["model_only"], blocks, strict=True):
        predicted = entry["predicted"]
        assert tuple(predicted) == _registered()  # every registered strategy, in order
        rows = _table_rows(block, header)  # the units are in the header
        assert tuple(rows) == _registered()
        for name, cells in rows.items():
            execute = predicted[name]["execute_seconds"]
            assert float(cells[0]) == pytest.approx(execute * 1e6, abs=0.051)  # printed in us
            dense = predicted["dense-allreduce"]["execute_seconds"]
            assert float(cells[4].rstrip("x")) == pytest.approx(dense / execute, abs=0.051)
        # The headline: the cheapest of auto's candidates, as printed and as in the JSON.
        best = re.search(r"^best predicted: (\S+)\n  \(auto's candidates: ([^)]*)\)$", block, re.M)
        candidates = best.group(2).split(", ")
        assert "allgather" not in candidates and set(candidates) <= set(rows)
        cheapest = min(candidates, key=lambda n: (float(rows[n][0]), candidates.index(n)))
        assert best.group(1) == entry["planner"]["choice"] == cheapest
        assert entry["candidates"] == candidates


@pytest.mark.mpi
def test_bench_measured_run(tmp_path):
    out = tmp_path / "bench.json"
    done = _petacomm(
        "bench",
        "sparse-reduce",
        "--ranks",
        "2",
        "--reps",
        "2",
        *SMALL_CMB,
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr + done.stdout
    run = json.loads(out.read_text())["runs"][0]
    assert all(row["agrees_with_first"] for row in run["strategies"])
    dense = run["strategies"][0]
    assert dense["strategy"] == "dense-allreduce"
    assert [r["strategy"] for r in run["strategies"]] == list(_registered())
    assert all(
        r["bytes_per_rank"]["max"] < dense["bytes_per_rank"]["max"] for r in run["strategies"][1:]
    )
    # The printed figures: units in the header, each row's cells from the JSON (setup in ms,
    # execute in us, memory in KiB), speedup = dense's execute time / the row's.
    from petacomm.bench.sparse_reduce import RUN_HEADER

    assert RUN_HEADER.split()[1:] == [
        "setup", "ms", "cpu", "ms", "exec", "us", "msgs", "bytes", "mem", "KiB", "speedup",
        "pred", "us",
    ]  # fmt: skip
    assert all(len(line) <= 100 for line in done.stdout.splitlines())
    rows = _table_rows(done.stdout, RUN_HEADER)
    assert tuple(rows) == _registered()
    for row in run["strategies"]:
        cells = rows[row["strategy"]]
        assert float(cells[0]) == pytest.approx(row["setup_seconds"] * 1e3, abs=0.0051)
        assert float(cells[2]) == pytest.approx(row["execute_seconds"] * 1e6, abs=0.051)
        assert float(cells[4]) == row["bytes_per_rank"]["max"]
        assert float(cells[5]) == pytest.approx(row["memory_bytes"]["max"] / 1024, abs=0.051)
        speedup = dense["execute_seconds"] / row["execute_seconds"]
        assert float(cells[6].rstrip("x")) == pytest.approx(speedup, abs=0.051)
    chose = re.search(r"^planner \(auto\) chose (\S+): ", done.stdout, re.M)
    assert chose.group(1) == run["planner"]["choice"]
    predicted, candidates = run["planner"]["predicted"], run["planner"]["candidates"]
    assert "allgather" not in candidates
    assert chose.group(1) == min(candidates, key=lambda n: (predicted[n], candidates.index(n)))
    for row in run["strategies"]:  # the "predicted us" column is the planner's figure
        assert float(rows[row["strategy"]][7]) == pytest.approx(
            predicted[row["strategy"]] * 1e6, abs=0.051
        )


def test_bench_errors_are_one_line():
    done = _petacomm("bench", "sparse-reduce", "--generator", "spiral")
    assert done.returncode == 2
    assert "--generator: unknown spiral" in done.stderr and "Traceback" not in done.stderr


def test_model_local_work_terms():
    """With only local work priced (gamma per byte), the predictions are the documented
    element counts: 2(n+u) for combine/scatter, 3u + 4V pairwise, 3u + 2s + 2r and 2(s+r)
    for the owner's rounds; every term the maximum over ranks."""
    import numpy as np

    from petacomm.xchg import _capi, offline

    keysets = [np.array([1, 2, 3, 3, 9]), np.array([2, 3, 4]), np.array([3, 9, 10, 11]), []]
    stats = offline.statistics([np.asarray(k, dtype=np.int64) for k in keysets])
    cost = _capi.default_options().cost
    for name, _ in cost._fields_:
        setattr(cost, name, 0.0)
    gamma, eb = 1e-9, 24
    cost.local_beta = gamma
    predicted = offline.predict(stats, cost, elem_bytes=eb)

    def field(name):
        return stats.field(name).astype(float)

    n, u, v = field("n_local"), field("n_unique"), field("pair_values")
    s, r = field("owner_send_values"), field("owner_recv_values")
    common = (2 * (n + u)).max()
    assert predicted["directory"]["execute_seconds"] == pytest.approx(
        (common + (3 * u + 4 * v).max()) * eb * gamma
    )
    owner = common + (3 * u + 2 * s + 2 * r).max() + (2 * (s + r)).max()
    assert predicted["owner"]["execute_seconds"] == pytest.approx(owner * eb * gamma)
    assert predicted["allgather"]["execute_seconds"] == pytest.approx(
        predicted["directory"]["execute_seconds"]
    )


# The peers run petacomm built against Debian's Open MPI once; keep that build with the tree.
PEERS_CACHE = {"PETACOMM_BUILD_CACHE": str(ROOT / "build" / "bench-cache")}


def _petscsf_available() -> bool:
    if not (shutil.which("mpicc.openmpi") and shutil.which("mpiexec.openmpi")):
        return False
    probe = ["/usr/bin/python3", "-c", "import mpi4py.MPI, petsc4py"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.mark.mpi
@pytest.mark.skipif(not _petscsf_available(), reason="Debian Open MPI or petsc4py absent")
def test_bench_peers_petscsf(tmp_path):
    import numpy as np

    out = tmp_path / "peers.json"
    env = dict(mpi_test_env(), **PEERS_CACHE)
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "bench", "sparse-reduce", "--peers", "petscsf"]
        + ["--ranks", "1,3", "--generator", "zipf", "--keys-per-rank", "300", "--reps", "2"]
        + ["--setup-reps", "1", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    runs = json.loads(out.read_text())["peers"]["runs"]
    assert [r["ranks"] for r in runs] == [1, 3]
    names = {f"petacomm:{n}" for n in ("auto", *_registered())}
    names |= {"petscsf-range", "petscsf-holder"}
    for run in runs:
        rows = {c["name"]: c for c in run["contenders"]}
        assert set(rows) == names
        # PETSc's star forests and every petacomm strategy give the same sums.
        assert all(c["agrees"] for c in run["contenders"]), run["contenders"]
        assert all(len(c["execute_seconds"]) == 2 for c in run["contenders"])
        for stat, pick in (("median", np.median), ("best", np.min)):
            sf = ("petscsf-range", "petscsf-holder")
            faster = min(pick(rows[n]["execute_seconds"]) for n in sf)
            auto = pick(rows["petacomm:auto"]["execute_seconds"])
            assert run["ratios"][stat]["execute_vs_faster_sf"] == pytest.approx(auto / faster)
            # The decision: auto's choice timed by name over the fastest of its candidates.
            candidates = [f"petacomm:{n}" for n in run["auto"]["candidates"]]
            fastest = min(pick(rows[n]["execute_seconds"]) for n in candidates)
            chosen = pick(rows[f"petacomm:{run['auto']['choice']}"]["execute_seconds"])
            assert run["ratios"][stat]["choice_vs_fastest_candidate"] == pytest.approx(
                chosen / fastest
            )
        # The SF setups less their numpy work: never above the setups, so the ratio of auto's
        # setup to them is never below the plain one.
        for n in ("petscsf-range", "petscsf-holder"):
            c = rows[n]
            assert len(c["setup_without_glue_seconds"]) == len(c["setup_seconds"]) == 1
            assert 0 < c["setup_without_glue_seconds"][0] <= c["setup_seconds"][0]
        best = run["ratios"]["best"]
        assert best["setup_vs_faster_sf_without_glue"] >= best["setup_vs_faster_sf"]
    table = [ln for ln in done.stdout.splitlines() if not ln.startswith(("building", "built"))]
    assert max(len(line) for line in table) <= 100
    assert "auto vs the faster PetscSF variant" in done.stdout
    assert "without the SF's numpy work" in done.stdout


def test_peers_reference_is_numpys_sum_per_key():
    """The race's reference: each key's values summed over every rank holding it (here two
    ranks' keys, gathered by a stand-in communicator)."""
    import numpy as np

    from petacomm.bench.sparse_reduce_peers import reference_sums

    mine, theirs = np.array([2, 5, 9]), np.array([5, 7, 9, 11])
    values = {2: 1.0, 5: 2.0, 9: 3.0}
    other = {5: 10.0, 7: 20.0, 9: 30.0, 11: 40.0}

    class TwoRanks:
        def allgather(self, x):
            peer = theirs if x.ndim == 1 else np.array([[other[k], -other[k]] for k in theirs])
            return [x, peer]

    got = reference_sums(TwoRanks(), mine, np.array([[values[k], -values[k]] for k in mine]))
    assert got.tolist() == [[1.0, -1.0], [12.0, -12.0], [33.0, -33.0]]


def test_range_sf_zeroes_only_the_roots_its_leaves_reference(monkeypatch):
    """petscsf-range's dense root block (key range / P x k) was zeroed whole on every
    execute; only the roots a leaf points at are read back, so only those are zeroed (found
    once, at setup). A stand-in for petsc4py's SF on one rank: the sums stay right, and a
    root no leaf references keeps whatever it held."""
    import types

    import numpy as np

    from petacomm.bench import sparse_reduce_peers as peers

    degrees = []

    class SF:
        def create(self, comm):
            return self

        def setFromOptions(self):
            pass

        def setGraph(self, nroots, local, remote):
            self.nroots, self.remote = nroots, np.asarray(remote)

        def setUp(self):
            pass

        def computeDegree(self):
            degrees.append(1)
            return np.bincount(self.remote[:, 1], minlength=self.nroots)

        def reduceBegin(self, unit, leaves, roots, op):
            k = leaves.size // len(self.remote)
            np.add.at(roots.reshape(-1, k), self.remote[:, 1], leaves.reshape(-1, k))

        def bcastBegin(self, unit, roots, leaves, op):
            k = leaves.size // len(self.remote)
            leaves.reshape(-1, k)[...] = roots.reshape(-1, k)[self.remote[:, 1]]

        def reduceEnd(self, *args):
            pass

        bcastEnd = destroy = reduceEnd

    PETSc = types.SimpleNamespace(SF=SF, IntType=np.int64)
    mpi = types.SimpleNamespace(SUM="sum", REPLACE="replace")
    monkeypatch.setitem(sys.modules, "mpi4py", types.SimpleNamespace(MPI=mpi))
    comm = types.SimpleNamespace(size=1, rank=0)
    keys = np.array([1, 4, 5, 9])  # of the key range 0..11: roots 1, 4, 5 and 9 referenced
    sf = peers.build_range_sf(PETSc, comm, keys, 12, unit=None)
    assert degrees == []  # not in the setup: at the first execute, which is never timed
    values0 = np.arange(8.0).reshape(4, 2) + 1
    values = values0.copy()
    sf.execute(values)
    assert np.array_equal(values, values0)  # one rank holds each key: its sum is its value
    unreferenced = [0, 2, 3, 6, 7, 8, 10, 11]
    sf._roots[unreferenced] = np.nan  # whatever they hold is never read
    for _ in range(3):
        values = values0.copy()
        sf.execute(values)
        assert np.array_equal(values, values0)  # the referenced roots were zeroed
    assert np.isnan(sf._roots[unreferenced]).all() and degrees == [1]


def test_contenders_that_disagree_are_left_out_of_the_ratios():
    from petacomm.bench.sparse_reduce import _summarise_peers_run

    def row(name, setup, execute, agrees=True):
        return {"name": name, "setup_seconds": [setup], "execute_seconds": [execute],
                "agrees": agrees}  # fmt: skip

    run = {
        "contenders": [
            row("petacomm:auto", 2.0, 1.0),
            row("petacomm:directory", 2.0, 0.5, agrees=False),  # fast but wrong
            row("petacomm:owner", 2.0, 1.0),
            row("petscsf-range", 1.0, 4.0),
            row("petscsf-holder", 4.0, 0.25, agrees=False),
        ],
        "auto": {"choice": "owner", "candidates": ["directory", "owner"]},
    }
    _summarise_peers_run(run)
    best = run["ratios"]["best"]
    assert best["execute_vs_faster_sf"] == 0.25  # against the range SF alone
    assert best["setup_vs_faster_sf"] == 2.0
    assert best["fastest_candidate"] == "owner" and best["auto_vs_fastest_candidate"] == 1.0


def test_bench_peers_skip_note_without_the_default_toolchain(tmp_path):
    """Without Debian's mpicc.openmpi (a PATH without it) and no --mpicc named, the peers are
    skipped with a note; a --python named that does not exist is an error naming it (it was
    a skip note and exit status 0 too)."""
    peers = [sys.executable, "-m", "petacomm.cli", "bench", "sparse-reduce", "--peers", "petscsf"]
    peers += ["--ranks", "2", "--generator", "uniform", "--keys-per-rank", "100"]
    env = mpi_test_env({"PATH": str(tmp_path)})
    done = subprocess.run(peers, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "--peers petscsf: skipped, mpicc.openmpi not found" in done.stdout
    named = peers + ["--python", "/nonexistent/python3"]
    done = subprocess.run(named, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 2 and "--python: '/nonexistent/python3' not found" in done.stderr
    # A --mpiexec named is checked too, skip or not (it was ignored here: exit status 0).
    # (Not named mpiexec: the tests' guard would take the command for an MPI launch.)
    named = peers + ["--mpiexec", "/nonexistent/launcher"]
    done = subprocess.run(named, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 2 and "--mpiexec: '/nonexistent/launcher' not found" in done.stderr
    bad = _petacomm("bench", "sparse-reduce", "--peers", "slepc")
    assert bad.returncode == 2 and "--peers: unknown slepc" in bad.stderr


def test_the_peers_launcher_is_the_one_beside_the_compiler(tmp_path):
    """mpicc.X runs with mpiexec.X beside it, a compiler without 'mpicc' in its name with the
    mpiexec beside it; none there is an error naming --mpicc (it named --mpiexec, which was
    not given, and took the compiler itself as the launcher)."""
    from petacomm.bench.transpose import mpi_toolchain
    from petacomm.errors import PetacommError

    for name in ("mpicc.x", "mpiexec.x", "cc", "mpiexec"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    assert mpi_toolchain(str(tmp_path / "mpicc.x"), None) == (
        str(tmp_path / "mpicc.x"),
        str(tmp_path / "mpiexec.x"),
    )
    assert mpi_toolchain(str(tmp_path / "cc"), None)[1] == str(tmp_path / "mpiexec")
    (tmp_path / "mpiexec").unlink()
    with pytest.raises(PetacommError, match="^--mpicc: no MPI launcher beside '.*/cc'"):
        mpi_toolchain(str(tmp_path / "cc"), None)
    with pytest.raises(PetacommError, match="^--mpiexec: empty program name ''$"):
        mpi_toolchain(str(tmp_path / "cc"), "")


def test_offline_partners_both_ways_equal_brute_force():
    """Partners per rank at every hub threshold: from the pair list and from the bit matrix,
    both against sets built key by key."""
    import numpy as np

    from petacomm.xchg import offline

    rng = np.random.default_rng(5)
    p = 11
    keysets = [rng.integers(5, 65, rng.integers(0, 25)) for _ in range(p)]
    keysets[3] = np.arange(5, 65)  # one rank holding every key
    keysets[7] = np.zeros(0, dtype=np.int64)
    holders = {}
    for r, keys in enumerate(keysets):
        for key in set(keys.tolist()):
            holders.setdefault(key, set()).add(r)
    expected = {}
    for b in range(offline.HUB_LEVELS):
        partners = [set() for _ in range(p)]
        for hs in holders.values():
            if len(hs) <= 1 << b:
                for r in hs:
                    partners[r] |= hs - {r}
        expected[f"hub_pair_partners[{b}]"] = [len(x) for x in partners]
    everyone = [set() for _ in range(p)]
    for hs in holders.values():
        for r in hs:
            everyone[r] |= hs - {r}
    expected["pair_partners"] = [len(x) for x in everyone]
    # Chunks of 8 keys aligned on multiples of 8, per rank and over all ranks.
    expected["dense_chunks"] = [len({k // 8 for k in keys.tolist()}) for keys in keysets]
    for budget in (offline.PAIR_BUDGET, 0):  # pair list, then bit matrix
        stats = offline.statistics(keysets, pair_budget=budget, chunk_keys=8)
        for name, values in expected.items():
            assert stats.field(name).tolist() == values, (budget, name)
        assert stats.global_stats.dense_chunks == len({k // 8 for k in holders})


def test_offline_owners_hubs_and_multiplicities_against_loops():
    """Owner messages, keys above each hub threshold and the multiplicity histogram, against
    loops over each key's holders (owners hashed by the reference's own splitmix64)."""
    import numpy as np
    from traffic_reference import OWNER_SALT, holders, splitmix64

    from petacomm.xchg import offline

    rng = np.random.default_rng(9)
    p = 9
    keysets = [rng.integers(0, 40, rng.integers(0, 30)) for _ in range(p)]
    keysets[4] = np.arange(0, 40, 2)  # a rank holding every even key
    stats = offline.statistics(keysets)
    by_key = holders(keysets)
    sends = [set() for _ in range(p)]  # the owners each rank sends its shared values to
    for key, ranks in by_key.items():
        owner = ranks[splitmix64(key ^ OWNER_SALT) % len(ranks)]
        for r in ranks:
            if len(ranks) >= 2 and r != owner:
                sends[r].add(owner)
    assert stats.field("owner_sends").tolist() == [len(s) for s in sends]
    assert stats.field("owner_recvs").tolist() == [sum(o in s for s in sends) for o in range(p)]
    for b in range(6):
        want = [sum(r in rs and len(rs) > 1 << b for rs in by_key.values()) for r in range(p)]
        assert stats.field(f"hub_keys[{b}]").tolist() == want, b
    # Keys by multiplicity class: d = 1, 2, 3-4, 5-8, ... (class ceil(log2 d)).
    classes = [0] * (offline.HUB_LEVELS + 1)
    for ranks in by_key.values():
        classes[(len(ranks) - 1).bit_length()] += 1
    assert list(stats.global_stats.multiplicity) == classes
    assert classes[2] > 0 and classes[3] > 0  # some keys of 3 and of 5 or more ranks


def test_offline_dense_chunks_beyond_the_fused_ones_are_counted():
    import numpy as np

    from petacomm.xchg import offline

    # Chunks of 2 keys: keys 10000, 10001 and 10004 touch chunks 5000 and 5002 (beyond the
    # 4096 the fused reduction knows, but spanning few: counted exactly, 2, not estimated as
    # min(chunks spanned, keys) = 3).
    keys = [np.array([10000, 10004]), np.array([10001])]
    stats = offline.statistics(keys, chunk_keys=2)
    assert stats.global_stats.dense_chunks == 2
    assert stats.field("dense_chunks").tolist() == [2, 1]


@pytest.mark.mpi
def test_bench_setup_scaling(tmp_path):
    out = tmp_path / "setup.json"
    done = _petacomm(
        "bench",
        "sparse-reduce",
        "--setup-scaling",
        "1,2",
        "--setup-reps",
        "1",
        *SMALL_CMB,
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "compute ms" in done.stdout and "2/1" in done.stdout and "wall ms" in done.stdout
    entry = json.loads(out.read_text())["setup_scaling"][0]
    assert [run["ranks"] for run in entry["runs"]] == [1, 2]
    names = set(_registered())
    assert set(entry["ratios"]) == names
    for run in entry["runs"]:
        assert {row["strategy"] for row in run["strategies"]} == names
        for row in run["strategies"]:
            assert row["compute_seconds"] >= 0 and row["wall_seconds"] > 0
            assert len(row["samples"]) == 1


def test_bench_setup_reps_must_be_positive():
    done = _petacomm("bench", "sparse-reduce", "--setup-scaling", "2", "--setup-reps", "0")
    assert done.returncode != 0 and "--setup-reps" in done.stderr


def test_bench_smpi_needs_an_smpi_build(tmp_path):
    done = _petacomm(
        "bench", "sparse-reduce", "--setup-scaling", "2", "--smpi", str(tmp_path / "none")
    )
    assert done.returncode != 0 and "no SMPI build of libpetacomm" in done.stderr


@pytest.mark.mpi
def test_bench_smpi_setup_scaling(tmp_path, smpi_build):
    build = str(smpi_build)
    out = tmp_path / "smpi.json"
    done = _petacomm(
        "bench",
        "sparse-reduce",
        "--setup-scaling",
        "1,3",
        "--setup-reps",
        "1",
        "--smpi",
        build,
        *SMALL_CMB,
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "SMPI simulated time" in done.stdout and "3/1" in done.stdout
    entry = json.loads(out.read_text())["setup_scaling_smpi"][0]
    assert [r["ranks"] for r in entry["runs"]] == [1, 3]
    assert all(row["simulated_seconds"] > 0 for r in entry["runs"] for row in r["strategies"])


@pytest.mark.mpi
def test_smpi_ranks_as_threads_of_one_process_keep_their_own_setup_state(tmp_path, smpi_build):
    """SMPI runs every rank as a user-level thread of one process and switches ranks inside
    MPI calls. Plan setup once kept its clock in thread-local state: another rank's clock,
    then a pointer into a finished rank's stack, which smashed it in about half of the
    3-rank runs. Twelve runs at 3 and 4 ranks (70 ms each) catch that almost surely."""
    import numpy as np

    smpirun = require_program("smpirun", "SimGrid SMPI: apt-get install libsimgrid-dev")
    driver = Path(smpi_build) / "bin" / "petacomm-xchg-setup-bench"
    platform = tmp_path / "platform.xml"
    platform.write_text(
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1"><zone id="w" routing="Full">'
        '<cluster id="c" prefix="h" suffix="" radical="0-3" speed="1Gf" bw="10GBps" lat="1us"/>'
        "</zone></platform>\n"
    )
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"h{i}\n" for i in range(4)))
    rng = np.random.default_rng(7)
    for ranks in (3, 4):
        for r in range(ranks):  # overlapping key sets: every strategy has partners
            keys = np.unique(rng.integers(0, 3000, size=1500)).astype(np.int64)
            keys.tofile(tmp_path / f"p{ranks}_r{r}.bin")
    for run in range(12):
        ranks = 3 + run % 2
        done = subprocess.run(
            [smpirun, "-np", str(ranks), "-platform", str(platform), "-hostfile", str(hosts)]
            + ["--cfg=smpi/host-speed:1Gf", "--cfg=smpi/display-timing:no"]
            + [str(driver), str(tmp_path), "1", "owner,directory"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, (run, ranks, done.stderr[-1500:])
        rows = [json.loads(x[9:]) for x in done.stdout.splitlines() if x.startswith("XCHGSMPI ")]
        assert [row["strategy"] for row in rows] == ["owner", "directory"], done.stdout


def test_bench_model_only_shows_progress_unless_quiet(monkeypatch):
    # PETACOMM_PROGRESS=always: progress from the first step (a short run would show none).
    monkeypatch.setenv("PETACOMM_PROGRESS", "always")
    args = ("bench", "sparse-reduce", "--model-only", "5", "--keys-per-rank", "50")
    args += ("--generator", "uniform")
    done = _petacomm(*args)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()  # plain lines: standard error is not a terminal
    assert any(x.startswith("bench sparse-reduce: uniform key sets of 5 ranks") for x in lines)
    assert any(" 5/5 " in x for x in lines), lines  # every rank's key set counted
    assert any("sharing statistics and predictions" in x for x in lines), lines
    assert "bench sparse-reduce:" not in done.stdout  # the table stays clean
    quiet = _petacomm(*args, "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert quiet.stdout == done.stdout


@pytest.mark.mpi
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_stopping_the_bench_stops_its_ranks(how):
    """SIGTERM to the command (as `timeout` sends) or SIGINT to its process group (Ctrl-C):
    the ranks it launched stop too (killing only mpiexec left them running at 100 % CPU)."""
    import signal
    import time

    seed = str(700_000 + os.getpid() % 100_000)  # marks this run's ranks
    argv = [sys.executable, "-m", "petacomm.cli", "bench", "sparse-reduce", "--ranks", "2"]
    # the most repetitions the bench takes, of 20,000 keys: about 4 minutes here (10^4 took
    # 2.4 s), long after the signal, even on a machine several times faster
    argv += ["--generator", "uniform", "--keys-per-rank", "20000", "--reps", "1000000"]
    argv += ["--seed", seed, "--strategies", "directory"]
    # SIGINT as a terminal's Ctrl-C delivers it: a suite started in the background (as CI
    # does) inherits SIGINT ignored, and so would the command.
    command = subprocess.Popen(
        argv, env=mpi_test_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip

    def ranks() -> list[str]:
        found = subprocess.run(["pgrep", "-f", f'"seed": {seed}'], capture_output=True, text=True)
        return found.stdout.split()

    try:
        deadline = time.monotonic() + 60
        while len(ranks()) < 2:
            assert command.poll() is None and time.monotonic() < deadline, "ranks never ran"
            time.sleep(0.2)
        if how == "SIGTERM":
            command.send_signal(signal.SIGTERM)
        else:
            os.killpg(command.pid, signal.SIGINT)
        assert command.wait(timeout=30) != 0
        deadline = time.monotonic() + 10
        while ranks() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not ranks(), "ranks left running"
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
        for pid in ranks():
            os.kill(int(pid), signal.SIGKILL)
