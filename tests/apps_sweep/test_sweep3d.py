"""petacomm-sweep3d: the scalar flux of every Px x Py decomposition and every transport (flat
MPI blocking and non-blocking, node-aware at virtual node sizes) equals a plain serial sweep
(sweep3d_reference.py) to 1e-12; message counts, faces sent within a node, the pipeline model
and its fill-stage count are checked against independent computations; bad parameters are
refused on every rank with one line naming the argument."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
import sweep3d_reference as reference
from sweep_apps_harness import expect_app_error, run_app

SWEEP = "petacomm-sweep3d"
# A thick problem (sigma_t 4 per cell of 1 cm): about one cell-direction in eight needs the
# fixup, so both kernel paths are compared.
PROBLEM = dict(grid=(9, 8, 6), mk=2, angles=4, mmi=2, sigma_t=4.0, iterations=3)
# Two pieces so that small and large faces are costed by different pieces.
MESSAGE_COST = "0:2e-6:1e-9,100:5e-6:2e-10"
# Virtual node sizes of the node-aware transport: the whole machine, one rank per node (every
# face through two gateways), and 3 (uneven nodes, some faces inside, some between).
NODE_SIZES = (0, 1, 3)
TRANSPORTS = (("blocking", -1), ("nonblocking", -1), *(("node", k) for k in NODE_SIZES))


@cache
def reference_solution(grid, angles, sigma_t, fixup, iterations, tolerance=0.0):
    return reference.solve(
        grid, angles, sigma_t=sigma_t, fixup=fixup, iterations=iterations, tolerance=tolerance
    )


def factorisations(p, grid):
    return [
        (a, p // a) for a in range(1, p + 1) if p % a == 0 and a <= grid[0] and p // a <= grid[1]
    ]


def relative_difference(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def messages_in_node(px, py, blocks, node_size):
    """Faces sent per iteration between ranks of one virtual node: rank r (= x + Px y) is on
    node r // node_size of the one machine (0: all on one node)."""
    if node_size == 0:
        return blocks * 8 * ((px - 1) * py + px * (py - 1))
    count = 0
    for di, dj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        for x in range(px):
            for y in range(py):
                r = x + px * y
                if 0 <= x + di < px and (x + di + px * y) // node_size == r // node_size:
                    count += 2 * blocks  # two octants per (i, j) quadrant
                if 0 <= y + dj < py and (x + px * (y + dj)) // node_size == r // node_size:
                    count += 2 * blocks
    return count


def expected_traffic(grid, px, py, mk, angles, mmi):
    """Messages and bytes all ranks send per iteration: in each octant and block, every rank
    with a downstream neighbour along x (y) sends it one face of mk x ny (nx) x mmi values."""
    blocks = 8 * (grid[2] // mk) * (angles // mmi)
    messages = blocks * ((px - 1) * py + px * (py - 1))
    values = blocks * mk * mmi * ((px - 1) * grid[1] + (py - 1) * grid[0])
    return messages, 8 * values


def longest_path_stages(procs, octant_order, k_blocks, angle_blocks):
    """Stages of one iteration by brute force: block s of rank (x, y) starts after the
    rank's block s-1 and its upstream neighbours' block s (every rank follows the same
    block order); each block takes one stage."""
    px_count, py_count = procs
    finish = np.zeros((px_count, py_count))
    for di, dj, _dk in octant_order:
        for _ in range(angle_blocks * k_blocks):
            xs = range(px_count) if di > 0 else range(px_count - 1, -1, -1)
            ys = range(py_count) if dj > 0 else range(py_count - 1, -1, -1)
            new = finish.copy()
            for x in xs:
                for y in ys:
                    start = finish[x, y]
                    if 0 <= x - di < px_count:
                        start = max(start, new[x - di, y])
                    if 0 <= y - dj < py_count:
                        start = max(start, new[x, y - dj])
                    new[x, y] = start + 1
            finish = new
    return int(finish.max())


def sweep_args(tmp_path, problem, extra=()):
    grid = "x".join(map(str, problem["grid"]))
    return [
        "--grid", grid, "--mk", problem["mk"], "--angles", problem["angles"],
        "--mmi", problem["mmi"], "--sigma-t", problem["sigma_t"],
        "--iterations", problem["iterations"], "--fixup", "--procs", "all",
        "--transport", "all", "--node-size", ",".join(map(str, NODE_SIZES)),
        "--flux", tmp_path / "flux-{case}.npy",
        "--json", tmp_path / "run.json", *extra,
    ]  # fmt: skip


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 6, 7, 8])
def test_every_decomposition_and_transport_equals_the_serial_sweep(ranks, tmp_path):
    p = PROBLEM
    done = run_app(SWEEP, ranks, *sweep_args(tmp_path, p, ["--message-cost", MESSAGE_COST]))
    doc = json.loads((tmp_path / "run.json").read_text())
    phi, _, change, fixups = reference_solution(
        p["grid"], p["angles"], p["sigma_t"], True, p["iterations"]
    )
    assert fixups > 0  # the problem exercises the fixup
    cases = {(tuple(c["procs"]), c["transport"], c["node_size"]): c for c in doc["cases"]}
    assert sorted(cases) == sorted(
        (f, *t) for f in factorisations(ranks, p["grid"]) for t in TRANSPORTS
    )
    blocks = (p["grid"][2] // p["mk"]) * (p["angles"] // p["mmi"])
    for (procs, transport, node_size), case in cases.items():
        flux = np.load(case["flux_file"])
        assert flux.shape == p["grid"]
        assert relative_difference(flux, phi) <= 1e-12, (procs, transport)
        assert case["fixups_per_iteration"] == fixups
        assert case["iterations"] == p["iterations"]
        assert case["flux_change"] == pytest.approx(change, rel=1e-12)
        messages, nbytes = expected_traffic(p["grid"], *procs, p["mk"], p["angles"], p["mmi"])
        assert case["messages_per_iteration"] == messages
        assert case["bytes_per_iteration"] == nbytes
        in_node = -1 if node_size < 0 else messages_in_node(*procs, blocks, node_size)
        assert case["messages_in_node_per_iteration"] == in_node
    # The table prints one row per case in each of its two tables.
    for procs, transport, node_size in cases:
        name = f"{procs[0]}x{procs[1]}"
        label = transport + (str(node_size) if node_size > 0 else "")
        rows = [ln for ln in done.stdout.splitlines() if ln.split()[:2] == [name, label]]
        assert len(rows) == 2, done.stdout
    check_pipeline_model(doc, p)


def piece_time(nbytes):
    pieces = [(float(a), float(b), float(c)) for a, b, c in
              (item.split(":") for item in MESSAGE_COST.split(","))]  # fmt: skip
    start, alpha, beta = max(piece for piece in pieces if piece[0] <= nbytes)
    return alpha + beta * nbytes


def check_pipeline_model(doc, p):
    """The model figures against the formulas and a brute-force pipeline."""
    k_blocks, angle_blocks = p["grid"][2] // p["mk"], p["angles"] // p["mmi"]
    for case in doc["cases"]:
        px, py = case["procs"]
        m = case["model"]
        steady = 8 * k_blocks * angle_blocks
        assert m["steady_stages"] == steady
        assert m["fill_stages"] == 2 * (px - 1) + 4 * (py - 1)
        stages = longest_path_stages((px, py), doc["octant_order"], k_blocks, angle_blocks)
        assert m["steady_stages"] + m["fill_stages"] == stages
        nx, ny = -(-p["grid"][0] // px), -(-p["grid"][1] // py)  # the largest subdomain
        x_bytes, y_bytes = 8 * p["mk"] * ny * p["mmi"], 8 * p["mk"] * nx * p["mmi"]
        assert (m["x_face_bytes"], m["y_face_bytes"]) == (x_bytes, y_bytes)
        message_x = piece_time(x_bytes) if px > 1 else 0.0
        message_y = piece_time(y_bytes) if py > 1 else 0.0
        stage = m["block_compute_s"] + message_x + message_y
        assert m["block_compute_s"] > 0
        assert m["stage_s"] == pytest.approx(stage, rel=1e-12)
        assert m["predicted_s"] == pytest.approx(stages * stage, rel=1e-12)
        assert m["predicted_no_network_s"] == pytest.approx(
            stages * m["block_compute_s"], rel=1e-12
        )
        assert m["sweep3d_pipeline_efficiency"] == pytest.approx(
            8
            * angle_blocks
            * k_blocks
            / (8 * angle_blocks * k_blocks + 2 * (px - 1) + 4 * (py - 1))
        )
        measured = case["time_per_iteration_s"]
        assert m["measured_over_predicted"] == pytest.approx(measured / m["predicted_s"])
        assert m["efficiency_infinite_network"] == pytest.approx(
            m["predicted_no_network_s"] / measured
        )
        cell_directions = np.prod(p["grid"]) * 8 * p["angles"]
        assert case["grind_ns"] == pytest.approx(1e9 * measured / cell_directions)


@pytest.mark.mpi
def test_tolerance_uneven_subdomains_and_one_k_block(tmp_path):
    grid, angles = (7, 5, 4), 3
    args = [
        "--grid", "7x5x4", "--mk", "4", "--angles", angles, "--mmi", "1",
        "--tolerance", "1e-6", "--procs", "4x1,1x4,2x2", "--transport", "all",
        "--flux", tmp_path / "flux-{case}.npy", "--json", tmp_path / "run.json", "--quiet",
    ]  # fmt: skip
    run_app(SWEEP, 4, *args)
    doc = json.loads((tmp_path / "run.json").read_text())
    phi, iterations, change, _ = reference_solution(grid, angles, 1.0, False, 0, 1e-6)
    assert len(doc["cases"]) == 3 * 3  # three grids x blocking, nonblocking, node
    for case in doc["cases"]:
        assert case["converged"] is True
        assert case["iterations"] == iterations
        assert case["flux_change"] < 1e-6
        assert case["fixups_per_iteration"] == 0
        assert relative_difference(np.load(case["flux_file"]), phi) <= 1e-12


BAD_ARGUMENTS = [
    (["--grid", "9x8x6", "--mk", "4"], ("--mk", "4", "K = 6")),
    (["--procs", "2x2"], ("--procs", "2x2", "3")),
    (["--angles", "4", "--mmi", "3"], ("--mmi", "3", "4")),
    (["--grid", "2x8x6", "--mk", "2", "--procs", "3x1"], ("--procs", "3x1", "I = 2")),
    (["--transport", "bogus"], ("--transport", "bogus")),
    (["--procs", "all", "--flux", "out.npy"], ("--flux", "{case}")),
    (["--message-cost", "5:1e-6:1e-9"], ("--message-cost",)),
    (["--transport", "node", "--node-size", "2,-1"], ("--node-size", "-1")),
    (["--flux", "/nonexistent-dir/flux.npy"], ("--flux", "/nonexistent-dir")),
]


@pytest.mark.mpi
@pytest.mark.parametrize(
    "args,texts", BAD_ARGUMENTS, ids=[t[0] + "-" + a[-1] for a, t in BAD_ARGUMENTS]
)
def test_bad_parameters_are_refused_on_every_rank(args, texts, tmp_path):
    previous = tmp_path / "previous.json"
    previous.write_text("{}\n")
    done = run_app(SWEEP, 3, *args, "--json", previous, check=False, timeout=60)
    expect_app_error(done, SWEEP, *texts)
    assert previous.read_text() == "{}\n"


@pytest.mark.mpi
def test_help_lists_the_options():
    done = run_app(SWEEP, 1, "--help")
    for option in ("--grid", "--procs", "--mk", "--mmi", "--angles", "--iterations",
                   "--transport", "--flux", "--fixup", "--message-cost", "--json"):  # fmt: skip
        assert option in done.stdout
