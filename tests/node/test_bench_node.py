"""``petacomm bench node``: runs, prints its tables with units, counts every inter-node
message at the gateways exactly, writes versioned JSON, and refuses bad input cleanly."""

from __future__ import annotations

import json

import pytest
from node_support import QUIET

from cli_harness import expect_clean_error, run_cli


@pytest.mark.mpi
@pytest.mark.parametrize(("ranks", "node_size"), [(4, 2), (3, 1)])
def test_bench_counts_every_message_per_gateway(tmp_path, ranks, node_size):
    out = tmp_path / "node.json"
    result = run_cli(
        "bench", "node", "--ranks", ranks, "--sizes", "1:16KiB", "--reps", "1",
        "--iterations", "5", "--window", "4", "--inter-node-size", node_size, "--json", out,
        env=QUIET, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    for header in ("latency one way (us)", "bandwidth (MB/s", "lat layer", "memcpy", "16 KiB"):
        assert header in result.stdout, header
    assert max(len(line) for line in result.stdout.splitlines()) <= 100
    data = json.loads(out.read_text())
    assert (data["schema"], data["schema_version"]) == ("petacomm-bench-node", 1)
    assert [r["bytes"] for r in data["intra"]["rows"]] == [1 << i for i in range(15)]
    for row in data["intra"]["rows"]:
        for name in ("layer_latency", "mpi_latency", "layer_bw_window", "mpi_bw", "memcpy_bw"):
            assert row[name] > 0, (name, row)
    inter = data["inter"]
    ranks_info = inter["ranks"]
    # The pair's messages, counted by the bench from its own loop, all crossed the gateways.
    iterations, window, rounds = 5, 4, 8
    expected = sum(2 * (iterations + 1) + (max(2, rounds) + 1) * (window + 1) for _ in range(15))
    assert inter["pair_messages"] == expected
    assert inter["gateway_forwarded_messages"] == expected
    delivered = sum(r["delivered_messages"] for r in ranks_info if r["gateway"])
    assert delivered == expected
    # Each gateway forwarded exactly what the ranks of its node sent to other nodes.
    for gateway in (r for r in ranks_info if r["gateway"]):
        sent = sum(r["remote_messages"] for r in ranks_info if r["node"] == gateway["node"])
        sent_bytes = sum(r["remote_bytes"] for r in ranks_info if r["node"] == gateway["node"])
        assert (gateway["forwarded_messages"], gateway["forwarded_bytes"]) == (sent, sent_bytes)
    assert all(r["forwarded_messages"] == 0 for r in ranks_info if not r["gateway"])
    # Per-rank memory: the same for every non-leader, independent of the job size.
    segments = {m["segment_bytes"] for m in data["memory"] if m["local_rank"] != 0}
    assert len(segments) <= 1


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("--ranks", "1"), "--ranks"),
        (("--sizes", "0:8"), "--sizes"),
        (("--sizes", "1:2GiB"), "--sizes"),
        (("--reps", "0"), "--reps"),
        (("--window", "-2"), "--window"),
    ],
)
def test_bench_refuses_bad_input(args, names):
    expect_clean_error("bench", "node", *args, names=names)


def test_bench_help_names_the_targets():
    result = run_cli("bench", "node", "--help")
    assert result.returncode == 0
    assert "70 %" in result.stdout and "1.5x" in result.stdout


@pytest.mark.mpi
def test_the_program_refuses_one_virtual_node_for_the_inter_node_phase(tmp_path):
    """With every rank on one virtual node, the inter-node phase measured a pair inside it
    and its table said 'forwarded 0'."""
    from mpi_harness import mpirun
    from petacomm.native import program_path

    program = str(program_path("petacomm-node-bench"))
    argv = [program, "--inter-node-size", "3", "--json", str(tmp_path / "raw.json")]
    bad = mpirun(3, argv, check=False)
    assert bad.returncode != 0 and not (tmp_path / "raw.json").exists()
    assert "--inter-node-size: 3 ranks per node leave all 3 ranks on one node" in bad.stderr
