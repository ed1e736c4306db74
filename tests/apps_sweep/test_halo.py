"""petacomm-halo: every strategy (the node-aware one at virtual node sizes) at 1, 2, 3, 4, 7
and 8 ranks on 1-, 2- and 3-D grids, star and box, open and periodic (the app checks every
received face of every exchange and fails otherwise); the neighbours it exchanged with equal
petacomm's pattern module's, the messages kept within a node an enumeration's; mapping files
written by `petacomm map` are read back in both modes (the node layer's nodes then follow the
mapping); the JSON pattern round-trips through `petacomm map --pattern-file`; bad input is
refused on every rank."""

from __future__ import annotations

import json
import socket
from collections import Counter

import pytest
from sweep_apps_harness import expect_app_error, program, run_app

from cli_harness import run_cli
from mpi_harness import mpi_test_env, mpiexec_argv

HALO = "petacomm-halo"
# Virtual node sizes of the node-aware variant: the whole machine, one rank per node (every
# face between ranks through two gateways) and 3 (uneven nodes, some faces inside).
NODE_SIZES = (0, 1, 3)
VARIANTS = (
    "sendrecv", "nonblocking", "neighbor-cart", "neighbor-graph", "persistent",
    *(f"node{k or ''}" for k in NODE_SIZES),
)  # fmt: skip
SIZES = (1, 8, 100)
WARMUP, ITERATIONS = 1, 2


def pattern_edges(dims, periodic, stencil):
    """(src, dst) of one exchange from petacomm's pattern module (self-messages dropped)."""
    from petacomm.topology.pattern import LogicalGrid
    from petacomm.topology.pattern import stencil as stencil_messages

    src, dst, _ = stencil_messages(LogicalGrid(tuple(dims), tuple(map(bool, periodic))), stencil, 1)
    return Counter(zip(src.tolist(), dst.tolist(), strict=True))


def self_messages(dims, periodic, stencil):
    """Faces a rank sends to itself: offsets that wrap around a periodic dimension of size 1."""
    from petacomm.topology.pattern import stencil_offsets

    count = 0
    for offset in stencil_offsets(len(dims), stencil).tolist():
        moved = [o != 0 for o in offset]
        if all(p and d == 1 for m, p, d in zip(moved, periodic, dims, strict=True) if m):
            count += 1
    ranks = 1
    for d in dims:
        ranks *= d
    return count * ranks


def messages_in_node(edges, selfs, node_size):
    """Messages of one exchange between ranks of one virtual node (self-messages included):
    rank r is on node r // node_size of the one machine (0: all on one node)."""
    inside = sum(
        c for (a, b), c in edges.items() if node_size == 0 or a // node_size == b // node_size
    )
    return inside + selfs


def halo_args(tmp_path, *extra):
    return [
        "--sizes", ",".join(map(str, SIZES)), "-x", WARMUP, "-i", ITERATIONS,
        "--json", tmp_path / "halo.json", *extra,
    ]  # fmt: skip


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 7, 8])
def test_every_strategy_delivers_every_face(ranks, tmp_path):
    from petacomm.topology.pattern_language import parse_pattern

    args = halo_args(tmp_path, "--dims", "1,2,3", "--stencil", "star,box", "--periodic", "no,yes")
    args += ["--node-size", ",".join(map(str, NODE_SIZES))]
    done = run_app(HALO, ranks, *args, "-f")
    doc = json.loads((tmp_path / "halo.json").read_text())
    assert len(doc["configurations"]) == 12
    for config in doc["configurations"]:
        dims, periodic, stencil = config["grid"], config["periodic"], config["stencil"]
        assert sorted(dims, reverse=True) == dims and eval("*".join(map(str, dims))) == ranks
        edges = Counter(map(tuple, config["edges"]))
        assert edges == pattern_edges(dims, periodic, stencil), config["pattern"]
        assert config["messages_per_exchange"] == sum(edges.values())
        selfs = self_messages(dims, periodic, stencil)
        assert config["self_messages_per_exchange"] == selfs
        # The description round-trips through the pattern language.
        src, dst, nbytes = parse_pattern(config["pattern"]).edges()  # duplicates summed
        messages = (nbytes / max(SIZES)).astype(int).tolist()
        assert (
            Counter(dict(zip(zip(src.tolist(), dst.tolist(), strict=True), messages, strict=True)))
            == edges
        )
        run = [v for v in VARIANTS if stencil == "star" or v != "neighbor-cart"]
        assert [s["variant"] for s in config["skipped"]] == [v for v in VARIANTS if v not in run]
        assert [(r["variant"], r["bytes"]) for r in config["results"]] == [
            (v, s) for v in run for s in SIZES
        ]
        for row in config["results"]:
            # Every face sent is received once per exchange, and each was checked.
            assert row["faces_verified"] == (WARMUP + ITERATIONS) * (sum(edges.values()) + selfs)
            assert row["min_us"] <= row["avg_us"] <= row["max_us"]
            if row["variant"].startswith("node"):
                k = row["node_size"]
                assert row["variant"] == f"node{k or ''}"
                assert row["messages_in_node_per_exchange"] == messages_in_node(edges, selfs, k)
            else:
                assert "messages_in_node_per_exchange" not in row
    assert doc["pattern"].startswith("phase c1 ")
    tables = sum(len(c["results"]) for c in doc["configurations"]) // len(SIZES)
    assert done.stdout.count("Avg Latency(us)") == tables  # -f: one table per strategy


def write_map(tmp_path, fmt, network, cores, pattern, *extra):
    target = tmp_path / f"map.{fmt}"
    done = run_cli(
        "map", "--network", network, "--cores-per-node", cores, "--pattern", pattern,
        "--candidates", "XTY" if network.count("x") == 1 else "XYZT", "--output", target,
        "--format", fmt, "--quiet", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.describe()
    return target


def expected_placement(network, cores, ranks):
    """The mapping petacomm map wrote, from the library, nodes renumbered by first use."""
    from petacomm.topology.mapping import permutation_mapping
    from petacomm.topology.network import parse_network

    net = parse_network(f"{network}:t={cores}")
    m = permutation_mapping("XTY" if network.count("x") == 1 else "XYZT", net, ranks)
    first = {}
    for n in m.node.tolist():
        first.setdefault(n, len(first))
    return [first[n] for n in m.node.tolist()], m.core.tolist()


@pytest.mark.mpi
@pytest.mark.parametrize(
    "fmt,network,cores,grid",
    [
        ("rankfile", "torus:2x2", 2, "4x2"),
        ("slurm", "torus:2x2", 2, "4x2"),
        ("csv", "torus:2x2", 2, "4x2"),
        ("cray", "torus:2x2", 2, "4x2"),
        ("bgp", "torus:2x2x2", 1, "4x2"),
    ],
)
def test_mapping_written_by_petacomm_map_places_the_ranks(fmt, network, cores, grid, tmp_path):
    pattern = f"grid2d {grid} star 64"
    mapping = write_map(tmp_path, fmt, network, cores, pattern)
    args = halo_args(tmp_path, "--grid", grid, "--mapping", mapping)
    # Virtual nodes of the file's cores per node: the node layer's nodes are the mapping's.
    args += ["--variants", "nonblocking,node", "--node-size", cores]
    run_app(HALO, 8, *args)
    doc = json.loads((tmp_path / "halo.json").read_text())
    node, core = expected_placement(network, cores, 8)
    placed = doc["mapping"]
    assert placed["format"] == fmt and placed["mode"] == "reorder"
    assert placed["node_of_rank"] == node
    if fmt == "slurm":  # hosts only: the core is the rank's position on its host
        core = [node[:r].count(node[r]) for r in range(8)]
    assert placed["core_of_rank"] == core
    # Launched ranks fill nodes in order: logical ranks of one node run on consecutive ranks.
    launched = placed["launched_rank_of_rank"]
    assert sorted(launched) == list(range(8))
    assert [node[r] for r in sorted(range(8), key=launched.__getitem__)] == sorted(node)
    edges = pattern_edges((4, 2), (0, 0), "star")
    config = doc["configurations"][0]
    between_nodes = sum(c for (a, b), c in edges.items() if node[a] != node[b])
    assert config["internode_messages_per_exchange"] == between_nodes
    for row in config["results"]:
        if row["variant"] == f"node{cores}":
            assert row["messages_in_node_per_exchange"] == sum(edges.values()) - between_nodes
    # The pattern read back by petacomm map is the one measured.
    again = run_cli(
        "map", "--network", network, "--cores-per-node", cores,
        "--pattern-file", tmp_path / "halo.json", "--json",
    )  # fmt: skip
    assert again.returncode == 0, again.describe()
    mapped = json.loads(again.stdout)
    assert mapped["pattern"] == f"grid2d {grid} open star {max(SIZES)}"
    assert mapped["nranks"] == 8


@pytest.mark.mpi
def test_node_layer_nodes_follow_a_mapping_across_the_logical_order(tmp_path):
    # Logical ranks r and r + 4 share a node: no node holds logical neighbours of a 4x2 open
    # star grid (ranks 2x + y), while nodes of consecutive logical ranks would hold 8 faces.
    node = [r % 4 for r in range(8)]
    mapping = tmp_path / "map.csv"
    mapping.write_text("rank,node,core\n" + "".join(f"{r},{node[r]},{r // 4}\n" for r in range(8)))
    args = halo_args(tmp_path, "--grid", "4x2", "--mapping", mapping, "--variants", "node")
    run_app(HALO, 8, *args, "--node-size", "2,4")
    config = json.loads((tmp_path / "halo.json").read_text())["configurations"][0]
    edges = pattern_edges((4, 2), (0, 0), "star")
    inside = {2: sum(c for (a, b), c in edges.items() if node[a] == node[b])}
    # Nodes of 4 launched ranks hold two of the file's nodes: logical ranks {0, 1, 4, 5} etc.
    inside[4] = sum(c for (a, b), c in edges.items() if node[a] // 2 == node[b] // 2)
    assert (inside[2], inside[4]) == (0, 8)
    assert config["internode_messages_per_exchange"] == sum(edges.values())
    found = {r["node_size"]: r["messages_in_node_per_exchange"] for r in config["results"]}
    assert found == inside


@pytest.mark.mpi
def test_launched_with_a_rankfile_petacomm_map_wrote(tmp_path):
    import subprocess

    from petacomm.launch import find_mpiexec

    launcher = find_mpiexec()
    if launcher.vendor != "openmpi" or " 5." not in launcher.version_text:
        pytest.skip("needs Open MPI 5's --map-by rankfile:file=")
    hosts = tmp_path / "hosts"
    hosts.write_text(f"{socket.gethostname()}\n" * 4)
    rankfile = write_map(
        tmp_path, "rankfile", "torus:2x2", 2, "grid2d 4x2 star 64", "--hosts", hosts
    )
    argv = [*mpiexec_argv(8)[:3], "--map-by", f"rankfile:file={rankfile}:oversubscribe"]
    argv += [program(HALO), "--grid", "4x2", "--mapping", str(rankfile), "--mapping-mode"]
    argv += ["launched", *map(str, halo_args(tmp_path))]
    done = subprocess.run(argv, capture_output=True, text=True, env=mpi_test_env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    placed = json.loads((tmp_path / "halo.json").read_text())["mapping"]
    assert placed["mode"] == "launched" and placed["launched_rank_of_rank"] == list(range(8))
    assert "every rank runs on the host it names" in placed["note"]
    # The same file without launching with it: rank 0 is not on 'node0'.
    other = write_map(tmp_path, "rankfile", "torus:2x2", 2, "grid2d 4x2 star 64")
    bad = run_app(HALO, 8, "--grid", "4x2", "--mapping", other, "--mapping-mode", "launched",
                  check=False)  # fmt: skip
    expect_app_error(bad, HALO, "--mapping", "node0", "runs on host")


BAD_ARGUMENTS = [
    (["--grid", "2x2"], ("--grid", "2x2", "4", "3")),
    (["-m", "64:8"], ("-m", "64:8")),
    (["--variants", "sendrecv,bogus"], ("--variants", "bogus")),
    (["--dims", "2", "--periodic", "101"], ("--periodic", "101")),
    (["--mapping", "/nonexistent/map.csv"], ("--mapping", "/nonexistent/map.csv")),
    (["-m", "8", "--sizes", "8,16"], ("--sizes", "-m")),
    (["--variants", "sendrecv", "--node-size", "2"], ("--node-size", "node")),
    (["--node-size", "2,-1"], ("--node-size", "-1")),
]


@pytest.mark.mpi
@pytest.mark.parametrize("args,texts", BAD_ARGUMENTS, ids=[a[0] for a, _ in BAD_ARGUMENTS])
def test_bad_input_is_refused_on_every_rank(args, texts, tmp_path):
    done = run_app(HALO, 3, *args, "--json", tmp_path / "h.json", check=False, timeout=60)
    expect_app_error(done, HALO, *texts)
    assert not (tmp_path / "h.json").exists()


@pytest.mark.mpi
def test_a_mapping_for_another_rank_count_is_refused(tmp_path):
    mapping = write_map(tmp_path, "csv", "torus:2x2", 2, "grid2d 4x2 star 64")
    done = run_app(HALO, 3, "--mapping", mapping, check=False, timeout=60)
    expect_app_error(done, HALO, "--mapping", "map.csv", "line")
