"""The benchmark graphs (random geometric, partitioned Delaunay, CMB partners), their file
form, and ``petacomm bench map --peers scotch`` that maps them with Scotch and petacomm."""

import json

import numpy as np
import pytest

from petacomm.cli import main
from petacomm.datasets import make
from petacomm.topology import irregular_graphs as ig
from petacomm.topology import peer_benchmark, scotch
from petacomm.topology.measured import load_matrix_file


def pairs_of(pattern) -> dict:
    src, dst, nbytes = pattern.edges()
    return {(s, d): b for s, d, b in zip(src.tolist(), dst.tolist(), nbytes.tolist(), strict=True)}


@pytest.mark.parametrize("name", ["rgg", "delaunay", "cmb"])
def test_graphs_are_symmetric_deterministic_and_seeded(name):
    a = ig.make_graph(name, 48, seed=1)
    b = ig.make_graph(name, 48, seed=1)
    c = ig.make_graph(name, 48, seed=2)
    assert a.nranks == 48 and len(a.phases) == 1
    edges = pairs_of(a)
    assert edges == pairs_of(b) and edges != pairs_of(c)
    assert all(edges[(d, s)] == nb for (s, d), nb in edges.items())  # both ways, same bytes
    assert all(s != d for s, d in edges)


def test_random_geometric_graph_links_points_closer_than_the_radius():
    pattern = ig.make_graph("rgg", 400, seed=0)
    rng = np.random.default_rng([0, 1])
    points = rng.random((400, 2))
    points = points[ig._morton_order(points)]
    radius = np.sqrt(ig.RGG_DEGREE / (np.pi * 400))
    close = {
        (i, j)
        for i in range(400)
        for j in range(400)
        if i != j and np.hypot(*(points[i] - points[j])) < radius
    }
    edges = pairs_of(pattern)
    assert set(edges) == close
    assert set(edges.values()) == {ig.RGG_MESSAGE_BYTES}
    assert 9 < len(close) / 400 < 15  # ~12 neighbours on average (fewer at the border)


def test_coordinate_bisection_makes_equal_parts():
    points = np.random.default_rng(3).random((1000, 2)) ** 2
    part = ig.coordinate_bisection(points, 7)
    counts = np.bincount(part, minlength=7)
    assert counts.sum() == 1000 and counts.max() - counts.min() <= 1


def test_cmb_partners_exchange_24_bytes_per_shared_pixel():
    pattern = ig.make_graph("cmb", 6, seed=0)
    scan = make("cmb", 6, nside=ig.CMB_NSIDE, samples_per_rank=ig.CMB_SAMPLES_PER_RANK)
    pixels = [set(scan.keys(r).tolist()) for r in range(6)]
    expected = {
        (a, b): 24.0 * len(pixels[a] & pixels[b])
        for a in range(6)
        for b in range(6)
        if a != b and pixels[a] & pixels[b]
    }
    assert pairs_of(pattern) == expected


def test_graph_file_round_trip_and_errors(tmp_path):
    path = tmp_path / "g.csv"
    assert ig.main(["delaunay", "--ranks", "32", "--output", str(path)]) == 0
    back = load_matrix_file(path)
    assert pairs_of(back) == pairs_of(ig.make_graph("delaunay", 32))
    with pytest.raises(ValueError, match="unknown graph 'ring'"):
        ig.make_graph("ring", 8)
    with pytest.raises(ValueError, match="ranks: expected an integer >= 2"):
        ig.make_graph("rgg", 1)


def test_pattern_language_names_the_graphs():
    from petacomm.topology.pattern_language import PatternSyntaxError, parse_pattern

    # `graph NAME [seed=N]` is the generator's graph over the pattern's ranks.
    assert pairs_of(parse_pattern("ranks 32; graph delaunay")) == pairs_of(
        ig.make_graph("delaunay", 32)
    )
    seeded = parse_pattern("ranks 16\ngraph rgg seed=4")
    assert pairs_of(seeded) == pairs_of(ig.make_graph("rgg", 16, seed=4))
    assert pairs_of(seeded) != pairs_of(ig.make_graph("rgg", 16))
    assert parse_pattern("graph cmb", default_ranks=6).nranks == 6
    for text, expected in (
        ("ranks 8; graph ring", "line 1, column 16: expected a graph name (rgg, delaunay, cmb)"),
        ("ranks 8; graph rgg seed=-1", "column 20: expected seed=N"),
        ("graph rgg", "expected a 'grid' or 'ranks' statement before 'graph'"),
        ("ranks 1; graph rgg", "ranks: expected an integer >= 2"),
    ):
        with pytest.raises(
            PatternSyntaxError, match=expected.replace("(", r"\(").replace(")", r"\)")
        ):
            parse_pattern(text)


@pytest.mark.skipif(not scotch.scotch_available(), reason="Scotch is not installed")
def test_bench_map_peers_scotch_prints_and_writes_the_comparison(capsys, tmp_path):
    out = tmp_path / "peers.json"
    args = ["bench", "map", "--peers", "scotch", "--graphs", "rgg,cmb", "--ranks", "64"]
    args += ["--network", "torus:2x4x2", "--cores-per-node", "4", "--json", str(out), "-q"]
    assert main(args) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert "(MiB*hop)" in text and "(/scotch)" in text
    doc = json.loads(out.read_text())
    assert doc["schema"] == "petacomm.bench-map-peers/1" and doc["ranks"] == 64
    assert doc["pair_link_matrix_s"] > 0 and "pair-link matrix" in text
    assert text.count("matrix already built: scotch+petacomm") == 2
    assert [g["graph"] for g in doc["graphs"]] == ["rgg", "cmb"]
    for graph in doc["graphs"]:
        rows = {r["mapper"]: r for r in graph["mappers"]}
        assert set(rows) == {"scotch", "scotch quality", "multilevel", "scotch+petacomm"}
        base = rows["scotch"]
        for r in rows.values():
            assert r["hop_bytes_ratio"] == pytest.approx(r["hop_bytes"] / base["hop_bytes"])
            assert r["seconds"] > 0 and r["cpu_seconds"] >= 0
        # Scotch refined by petacomm never loses to Scotch on either figure.
        assert rows["scotch+petacomm"]["hop_bytes"] <= base["hop_bytes"] * (1 + 1e-12)
        assert rows["scotch+petacomm"]["max_link_bytes"] <= base["max_link_bytes"] * (1 + 1e-12)
        assert rows["scotch+petacomm"]["seconds_matrix_built"] > 0
        if scotch.gmap_command() is not None:
            assert graph["commands"]["gmap_s"] > 0 and graph["commands"]["petacomm_map_s"] > 0
            assert graph["commands"]["runs"] == peer_benchmark.COMMAND_RUNS


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--peers", "metis"], "--peers: unknown peer 'metis'"),
        (["--peers", "scotch", "--graphs", "grid"], "--graphs: unknown graph 'grid'"),
        (["--peers", "scotch", "--pattern", "ranks 4"], "--pattern: not used with --peers"),
        (["--ranks", "64"], "--ranks: only used with --peers"),
        (["--peers", "scotch", "--network", "dragonfly:5,2,2,2"], "no Scotch target"),
    ],
)
def test_bench_map_peers_bad_input(capsys, extra, message):
    assert main(["bench", "map", *extra]) == 2
    assert message in capsys.readouterr().err
