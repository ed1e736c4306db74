"""The registries of network kinds and routing models, and the recipe "add a network kind"
(docs/topology.md) followed once: a crossbar (every node linked to one switch) with its own
routing model, registered from outside the package and mapped onto by ``petacomm map``."""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from cli_harness import python_output
from petacomm.cli import main
from petacomm.topology.network import (
    NETWORK_KINDS,
    NetworkKind,
    parse_network,
    register_network_kind,
)
from petacomm.topology.routing import ROUTING_KINDS, RoutingKind, register_routing, routings_for

DOCS = Path(__file__).resolve().parents[2] / "docs" / "topology.md"


# ---- the recipe, step 1: the network class ---------------------------------------------------
@dataclass(frozen=True)
class CrossbarNetwork:
    """``nodes`` nodes, each with one link up to a central switch (id = node) and one down
    from it (id = nodes + node)."""

    nodes: int
    cores_per_node: int = 1
    kind = "crossbar"
    default_routing = "switch"

    @property
    def num_nodes(self) -> int:
        return self.nodes

    @property
    def num_slots(self) -> int:
        return self.nodes * self.cores_per_node

    @property
    def num_links(self) -> int:
        return 2 * self.nodes

    def hop_distance(self, src, dst):
        return np.where(np.asarray(src) == np.asarray(dst), 0, 2)

    def link_exists(self):
        return np.ones(self.num_links, dtype=bool)

    def link_name(self, link: int) -> str:
        return f"node {link % self.nodes} {'up' if link < self.nodes else 'down'}"

    def to_text(self) -> str:
        return f"crossbar:{self.nodes}" + (
            f":t={self.cores_per_node}" if self.cores_per_node != 1 else ""
        )

    def with_cores(self, cores_per_node: int):
        return CrossbarNetwork(self.nodes, cores_per_node)

    def split_coordinates(self, nodes):
        return np.asarray(nodes, dtype=np.int64)[:, None]


def parse_crossbar(kind, shape, options, text):
    if not shape.isdigit() or int(shape) < 1:
        raise ValueError(f"network {text!r}: crossbar expects a node count, e.g. crossbar:8")
    return CrossbarNetwork(int(shape))


# ---- step 2: the routing model ----------------------------------------------------------------
@dataclass(frozen=True)
class SwitchRouting:
    name = "switch"

    def describe(self, network) -> str:
        return "switch"

    def route(self, network, src, dst, weights):
        w = np.atleast_2d(np.asarray(weights, dtype=float))
        loads = np.zeros((w.shape[0], network.num_links))
        for row in range(w.shape[0]):
            np.add.at(loads[row], np.asarray(src), w[row])
            np.add.at(loads[row], network.nodes + np.asarray(dst), w[row])
        return loads

    def expected_hops(self, network, src, dst):
        return np.full(np.asarray(src).size, 2.0)


def build_switch(arg, network):
    if arg:
        raise ValueError(f"routing 'switch:{arg}': switch takes no ':' argument")
    return SwitchRouting()


# ---- step 3: one registry line each ------------------------------------------------------------
@pytest.fixture
def crossbar():
    register_network_kind(NetworkKind("crossbar", parse_crossbar, "crossbar:8", "one switch"))
    register_routing(RoutingKind("switch", ("crossbar",), build_switch, "switch", "up, down"))
    yield
    del NETWORK_KINDS["crossbar"], ROUTING_KINDS["switch"]


def test_map_onto_a_registered_kind(crossbar, capsys):
    # 16 ranks in a ring on 8 nodes x 2 cores. block: ranks 2i, 2i+1 share node i, so the
    # 8 messages 2i+1 -> 2i+2 (and 15 -> 0) leave their node: every up and down link carries
    # one flow. cyclic: rank r on node r % 8, all 16 messages cross the switch, two per
    # node: two flows on every link. Every inter-node message takes 2 hops.
    argv = ["map", "--network", "crossbar:8:t=2", "--pattern", "ranks 16; ring 1KiB"]
    assert main([*argv, "--rank-by", "max-contention", "--time-budget", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["network"] == "crossbar:8:t=2" and doc["routing"] == "switch"
    by_name = {r["mapping"].split(" ")[0]: r for r in doc["ranking"]}
    assert set(by_name) == {"block", "cyclic", "greedy+swaps", "bisection+swaps", "multilevel"}
    # A ring of 16 on 8 nodes of 2 cores leaves at least 8 messages crossing the switch
    # (each node holds at most 2 ranks of the ring): the multilevel mapper reaches that.
    assert by_name["multilevel"]["hop_bytes"] == 8 * 1024 * 2
    block, cyclic = by_name["block"], by_name["cyclic"]
    assert block["max_contention_flows"] == 1 and block["used_links"] == 16
    assert block["inter_node_bytes"] == 8 * 1024 and block["hop_bytes"] == 8 * 1024 * 2
    assert cyclic["max_contention_flows"] == 2 and cyclic["hop_bytes"] == 16 * 1024 * 2
    assert doc["ranking"][0]["max_contention_flows"] == 1
    assert routings_for("crossbar") == ["switch"]
    assert main([*argv, "--routing", "dor"]) == 2
    assert "does not apply to a crossbar network (expected one of switch)" in (
        capsys.readouterr().err
    )


def _doc_table(heading: str) -> list[list[str]]:
    """Rows (cells without backticks) of the first Markdown table after ``heading``."""
    text = DOCS.read_text()
    section = text[text.index(heading) :]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("|"):
            rows.append([c.strip().replace("`", "") for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # header and separator


def test_docs_tables_list_exactly_the_registered_kinds():
    kinds = {row[0]: row for row in _doc_table("### Network kinds")}
    assert set(kinds) == set(NETWORK_KINDS)
    for name, row in kinds.items():
        assert row[1] == NETWORK_KINDS[name].example
        assert row[2] == NETWORK_KINDS[name].default_candidates
        assert row[3] == parse_network(row[1]).default_routing
    routings = {row[0]: row[1] for row in _doc_table("## Routing models")}
    assert set(routings) == set(ROUTING_KINDS)
    for name, networks in routings.items():
        assert sorted(networks.split("/")) == sorted(ROUTING_KINDS[name].networks), name


def test_benchmark_and_command_modules_do_not_import_each_other():
    code = (
        "import sys\n"
        "import petacomm.topology.benchmark\n"
        "assert 'petacomm.topology.cli' not in sys.modules\n"
        "del sys.modules['petacomm.topology.benchmark']\n"
        "import petacomm.topology.cli\n"
        "assert 'petacomm.topology.benchmark' not in sys.modules\n"
    )
    python_output(code)
