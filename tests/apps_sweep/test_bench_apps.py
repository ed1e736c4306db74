"""``petacomm bench sweep3d`` and ``petacomm bench halo``: the tables hold what the apps
measured, the model uses the machine model given (not the defaults), bad input is refused
before anything runs."""

from __future__ import annotations

import json

import pytest

from cli_harness import expect_clean_error, run_cli


def write_model(path):
    """A machine model with two point-to-point pieces and round numbers."""
    from petacomm.model.machine import MachineModel, OperationModel, Piece, save

    pieces = [Piece(0, 255, 3e-6, 2e-9, 1.0, 4), Piece(256, 1 << 30, 7e-6, 5e-10, 1.0, 4)]
    save(MachineModel({"pingpong": OperationModel("pingpong", 2, pieces)}, source="test"), path)
    return MachineModel({"pingpong": OperationModel("pingpong", 2, pieces)})


@pytest.mark.mpi
def test_bench_sweep3d_over_block_sizes_uses_the_machine_model(tmp_path):
    model = write_model(tmp_path / "model.json")
    done = run_cli(
        "bench", "sweep3d", "-n", "2", "--grid", "8x6x4", "--mk", "1,2,4", "--iterations", "1",
        "--rounds", "1", "--node-sizes", "0,1", "--model", tmp_path / "model.json",
        "--json", tmp_path / "bench.json",
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert [(r["mk"], r["transport"]) for r in doc["rows"]] == [
        (mk, t) for mk in (1, 2, 4) for t in ("blocking", "nonblocking")
    ]
    for run in doc["runs"]:
        for case in run["cases"]:
            m = case["model"]
            px, py = case["procs"]
            assert m["message_x_s"] == (model.message_time(m["x_face_bytes"]) if px > 1 else 0)
            assert m["message_y_s"] == (model.message_time(m["y_face_bytes"]) if py > 1 else 0)
    # One table row per (mk, transport), with the app's figures.
    lines = done.stdout.splitlines()
    for row in doc["rows"]:
        cells = [ln.split() for ln in lines if ln.split()[:1] == [str(row["mk"])]]
        match = [c for c in cells if c[2] == row["transport"]]
        assert len(match) == 1
        assert float(match[0][3]) == pytest.approx(1e3 * row["time_per_iteration_s"], abs=6e-4)
        assert int(match[0][7]) == row["messages_per_iteration"]
    assert "best mk:" in done.stdout
    # Flat against node-aware at the fastest mk: the whole machine is one node (every face
    # inside it), nodes of one rank (none inside).
    rows = doc["node_rows"]
    assert [(r["transport"], r["node_size"]) for r in rows] == [
        ("blocking", None), ("nonblocking", None), ("node", 0), ("node", 1),
    ]  # fmt: skip
    assert rows[2]["messages_in_node_per_iteration"] == rows[2]["messages_per_iteration"] > 0
    assert rows[3]["messages_in_node_per_iteration"] == 0
    for row in rows:
        assert row["speedup"] == pytest.approx(
            rows[0]["time_per_iteration_s"] / row["time_per_iteration_s"]
        )


@pytest.mark.mpi
def test_bench_halo_compares_the_strategies(tmp_path):
    done = run_cli(
        "bench", "halo", "--ranks", "1,3", "--dims", "2", "--stencil", "star", "-m", "8:16",
        "-i", "2", "-x", "0", "--periodic", "no", "--node-sizes", "0,1",
        "--json", tmp_path / "bench.json",
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert [(r["ranks"], r["bytes"]) for r in doc["rows"]] == [(1, 8), (1, 16), (3, 8), (3, 16)]
    for row in doc["rows"]:
        assert set(row["avg_us"]) == {
            "sendrecv", "nonblocking", "neighbor-cart", "neighbor-graph", "persistent",
            "node", "node1",
        }  # fmt: skip
        assert row["best"] == min(row["avg_us"], key=row["avg_us"].get)
        assert row["speedup_over_sendrecv"] == pytest.approx(
            row["avg_us"]["sendrecv"] / row["avg_us"][row["best"]]
        )
    # Two blocks of columns (5 strategies, then 2 with the best), 4 rows each, within 100
    # columns; the app's figures in the cells.
    lines = done.stdout.splitlines()
    table = [ln for ln in lines if ln.split()[:1] in (["1"], ["3"]) and "ranks," not in ln]
    assert len(table) == 8 and max(map(len, lines)) <= 100
    for row, line in zip(doc["rows"], table[4:], strict=True):
        cells = line.split()
        assert [float(c) for c in cells[4:6]] == [
            pytest.approx(row["avg_us"][v], abs=5e-3) for v in ("node", "node1")
        ]
    # A 3x1 open grid sends 4 faces per exchange: all inside the one machine, none inside
    # nodes of one rank.
    assert "3 ranks, 3x1 star: messages in node per exchange (of 4): node 4, node1 0" in map(
        str.strip, lines
    )


def test_bench_refusals_name_the_argument(tmp_path):
    expect_clean_error("bench", "sweep3d", "--grid", "8x8x6", "--mk", "4", names=("--mk", "4"))
    expect_clean_error("bench", "sweep3d", "--grid", "8x8", names=("--grid", "8x8"))
    # '²' passes str.isdigit(); int() then refused it with a traceback.
    expect_clean_error("bench", "sweep3d", "--grid", "²x2x2", names=("--grid", "²x2x2"))
    mapping = tmp_path / "map.csv"
    mapping.write_text("rank,node,core\n0,0,0\n")
    expect_clean_error(
        "bench", "halo", "--ranks", "1,2", "--mapping", mapping, names="--mapping",
        inputs=[mapping],
    )  # fmt: skip

    expect_clean_error("bench", "halo", "--node-sizes", "2,-1", names=("--node-sizes", "-1"))
    expect_clean_error(
        "bench", "halo", "--node-sizes", "none", "--variants", "node", names="--node-sizes"
    )


@pytest.mark.mpi
def test_bench_halo_passes_on_the_apps_refusal():
    # --quiet: no progress line next to the error when the launch takes over a second.
    expect_clean_error(
        "bench", "halo", "--ranks", "3", "--variants", "bogus", "--quiet",
        names=("--variants", "bogus"),
    )  # fmt: skip
