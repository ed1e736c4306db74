"""Candidate mappings for a network + pattern, evaluated and ranked by one metric.

Candidate specs (comma-separated, ``candidate_mappings``):
``permutations`` (every Blue Gene permutation string; torus/mesh), a permutation string such
as ``TZXY``, ``block``, ``cyclic``, ``tiles`` (every node-shaped tile of the pattern's grid,
tiles in node-id order), ``greedy`` and ``bisection`` (each refined by pairwise swaps),
``all`` (everything applicable).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from petacomm.topology import mapping as mp
from petacomm.topology.mapping_search import (
    bisection_mapping,
    communication_graph,
    greedy_mapping,
    refine_by_swaps,
)
from petacomm.topology.metrics import MappingMetrics, evaluate_mapping
from petacomm.topology.network import TorusNetwork

RANK_KEYS = {
    "time": "predicted_time_s",
    "max-contention": "max_contention_flows",
    "avg-contention": "avg_contention_flows",
    "max-link-bytes": "max_link_bytes",
    "hop-bytes": "hop_bytes",
}
CANDIDATE_WORDS = ("permutations", "block", "cyclic", "tiles", "greedy", "bisection", "all")


@dataclass
class RankedMapping:
    rank: int
    mapping: mp.Mapping
    metrics: MappingMetrics
    ratio_to_best: float

    def as_dict(self) -> dict:
        out = {"rank": self.rank, **self.metrics.as_dict(), "ratio_to_best": self.ratio_to_best}
        return out


def default_candidates(network) -> str:
    return "permutations" if isinstance(network, TorusNetwork) else "block,cyclic,greedy,bisection"


def candidate_mappings(
    spec: str, network, pattern, time_budget: float = 10.0, seed: int = 0
) -> list[mp.Mapping]:
    """Build the candidate mappings named by ``spec`` (module docstring)."""
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items:
        raise ValueError("candidates: empty list (expected e.g. permutations or block,greedy)")
    is_torus = isinstance(network, TorusNetwork)
    tiles_requested = "tiles" in items  # with "all", grids without a fitting tile are skipped
    if "all" in items:
        items = (["permutations"] if is_torus else ["block", "cyclic"]) + [
            "tiles",
            "greedy",
            "bisection",
        ]
    out: list[mp.Mapping] = []
    seen: set[str] = set()
    graph = None
    optimisers = [i for i in items if i in ("greedy", "bisection")]
    per_optimiser = time_budget / max(1, len(optimisers))

    def add(m: mp.Mapping):
        if m.name not in seen:
            seen.add(m.name)
            out.append(m)

    for item in items:
        low = item.lower()
        if low == "permutations":
            if not is_torus:
                raise ValueError(
                    f"candidates: permutations need a torus or mesh network, not {network.kind}"
                )
            for perm in mp.all_permutations(network):
                add(mp.permutation_mapping(perm, network, pattern.nranks))
        elif low == "block":
            add(mp.block_mapping(network, pattern.nranks))
        elif low == "cyclic":
            add(mp.cyclic_mapping(network, pattern.nranks))
        elif low == "tiles":
            if pattern.grid is None:
                if tiles_requested:
                    raise ValueError("candidates: tiles need a pattern with a logical grid")
                continue
            shapes = mp.tile_shapes(pattern.grid, network.cores_per_node)
            if not shapes and tiles_requested:
                raise ValueError(
                    f"candidates: no tile of {network.cores_per_node} ranks divides the grid "
                    f"{pattern.grid.dims}"
                )
            for shape in shapes:
                add(mp.tiled_mapping(pattern.grid, shape, network))
        elif low in ("greedy", "bisection"):
            if graph is None:
                graph = communication_graph(pattern)
            build = greedy_mapping if low == "greedy" else bisection_mapping
            start = time.perf_counter()
            m = build(pattern, network, time_budget=per_optimiser / 2, graph=graph)
            left = max(0.0, per_optimiser - (time.perf_counter() - start))
            add(refine_by_swaps(m, pattern, network, time_budget=left, seed=seed, graph=graph))
        elif is_torus and sorted(item.upper()) == sorted(mp.permutation_letters(network)):
            add(mp.permutation_mapping(item, network, pattern.nranks))
        else:
            extra = f", or a permutation of {mp.permutation_letters(network)}" if is_torus else ""
            raise ValueError(
                f"candidates: unknown candidate {item!r} (expected {', '.join(CANDIDATE_WORDS)}"
                f"{extra})"
            )
    return out


def rank_mappings(
    network, routing, pattern, mappings, cost=None, rank_by: str = "time", hierarchy=None
) -> list[RankedMapping]:
    """Evaluate every mapping and sort by ``rank_by`` (ties: max then average contention,
    hop-bytes, name); ratio_to_best = metric / best metric."""
    if rank_by not in RANK_KEYS:
        raise ValueError(f"rank by {rank_by!r}: expected one of {', '.join(RANK_KEYS)}")
    if rank_by == "time" and cost is None:
        raise ValueError("rank by time needs machine cost parameters")
    key = RANK_KEYS[rank_by]
    evaluated = [
        (m, evaluate_mapping(network, routing, pattern, m, cost=cost, hierarchy=hierarchy))
        for m in mappings
    ]

    def tolerant(value: float) -> float:
        # Fractional routing sums differ in the last bits between equal mappings; compare
        # at 9 significant digits so that ties fall through to the next criterion.
        return float(f"{value:.9g}")

    evaluated.sort(
        key=lambda pair: (
            tolerant(getattr(pair[1], key)),
            tolerant(pair[1].max_contention_flows),
            tolerant(pair[1].avg_contention_flows),
            tolerant(pair[1].hop_bytes),
            pair[0].name,
        )
    )
    best = getattr(evaluated[0][1], key) if evaluated else 0.0
    ranked = []
    for i, (m, met) in enumerate(evaluated, start=1):
        value = getattr(met, key)
        ratio = value / best if best > 0 else (1.0 if value == best else math.inf)
        ranked.append(RankedMapping(i, m, met, ratio))
    return ranked


_MIB = 1024.0**2

TABLE_COLUMNS = (
    # header, unit, getter
    ("max contention", "flows", lambda m: f"{m.max_contention_flows:.2f}"),
    ("avg contention", "flows", lambda m: f"{m.avg_contention_flows:.2f}"),
    ("max link load", "MiB", lambda m: f"{m.max_link_bytes / _MIB:.2f}"),
    ("hop-bytes", "MiB*hop", lambda m: f"{m.hop_bytes / _MIB:.1f}"),
    ("avg dilation", "hops", lambda m: f"{m.avg_dilation_hops:.3f}"),
    ("max dilation", "hops", lambda m: f"{m.max_dilation_hops:.2f}"),
    ("inter-node", "MiB", lambda m: f"{m.inter_node_bytes / _MIB:.1f}"),
    ("intra-node", "MiB", lambda m: f"{m.intra_node_bytes / _MIB:.1f}"),
    (
        "predicted time",
        "ms",
        lambda m: "n/a" if m.predicted_time_s is None else f"{m.predicted_time_s * 1e3:.3f}",
    ),
)


def format_table(ranked: list[RankedMapping], rank_by: str) -> str:
    """Fixed-width table; every figure's unit is in its column header."""
    headers = ["#", "mapping"] + [f"{h} ({u})" for h, u, _ in TABLE_COLUMNS]
    headers.append(f"ratio to best ({rank_by})")
    rows = [
        [str(r.rank), r.mapping.name]
        + [get(r.metrics) for _, _, get in TABLE_COLUMNS]
        + [f"{r.ratio_to_best:.3f}x"]
        for r in ranked
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    lines = [
        "  ".join(
            h.rjust(w) if i != 1 else h.ljust(w)
            for i, (h, w) in enumerate(zip(headers, widths, strict=True))
        )
    ]
    for row in rows:
        lines.append(
            "  ".join(
                c.rjust(w) if i != 1 else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(lines)
