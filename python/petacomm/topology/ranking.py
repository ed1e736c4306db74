"""Candidate mappings for a network + pattern, evaluated and ranked by one metric.

Candidate specs (comma-separated, ``candidate_mappings``):
``permutations`` (every Blue Gene permutation string; torus/mesh), a permutation string such
as ``TZXY``, ``block``, ``cyclic``, ``tiles`` (every node-shaped tile of the pattern's grid,
tiles in node-id order), ``greedy`` and ``bisection`` (each refined by pairwise swaps),
``multilevel`` (``multilevel.py``, then contention refinement), ``scotch`` (Scotch's
mapping refined by petacomm, ``scotch.py``; needs libscotch), ``all`` (everything
applicable; ``scotch`` when Scotch is installed and has a target for the network).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from petacomm.topology import mapping as mp
from petacomm.topology.metrics import MappingMetrics
from petacomm.topology.network import NETWORK_KINDS, TorusNetwork

# Metric names of --rank-by and the MappingMetrics attribute each orders by.
RANK_KEYS = {
    "time": "predicted_time_s",
    "max-contention": "max_contention_flows",
    "avg-contention": "avg_contention_flows",
    "max-link-bytes": "max_link_bytes",
    "hop-bytes": "hop_bytes",
}
CANDIDATE_WORDS = (
    "permutations",
    "block",
    "cyclic",
    "tiles",
    "greedy",
    "bisection",
    "multilevel",
    "scotch",
    "all",
)
OPTIMISERS = ("greedy", "bisection", "multilevel", "scotch")


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
    """The candidate list used when none is given: the network kind's registry entry."""
    return NETWORK_KINDS[network.kind].default_candidates


def permutation_candidates(network, limit: int, seed: int = 0) -> tuple[list[str], int]:
    """At most ``limit`` permutation strings and how many exist ((d+1)! on a d-D torus).

    All of them, in lexicographic order, when they fit; otherwise the two launchers'
    defaults (T first, then the dimensions in order; the reverse) and a sample drawn with
    ``seed``, so a 7-D torus (40,320 strings) costs ``limit`` evaluations, not all."""
    letters = mp.permutation_letters(network)
    total = math.factorial(len(letters))
    if total <= limit:
        return mp.all_permutations(network), total
    chosen = dict.fromkeys([letters, letters[1:] + "T"][:limit])
    rng = np.random.default_rng(seed)
    while len(chosen) < limit:
        chosen["".join(letters[i] for i in rng.permutation(len(letters)))] = None
    return list(chosen), total


def candidate_mappings(
    spec: str,
    network,
    pattern,
    time_budget: float = 10.0,
    seed: int = 0,
    max_permutations: int | None = None,
    notes: list[str] | None = None,
    routing=None,
) -> list[mp.Mapping]:
    """Build the candidate mappings named by ``spec`` (module docstring). ``permutations``
    yields at most ``max_permutations`` strings (all when None); when it samples, a line
    saying so is appended to ``notes``. The optimisers share ``time_budget`` seconds;
    ``routing`` (the model the candidates are ranked under) lets ``multilevel`` and
    ``scotch`` relieve the busiest link."""
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
            "multilevel",
        ]
        if _scotch_applies(network, notes):
            items.append("scotch")
    out: list[mp.Mapping] = []
    seen: set[str] = set()
    graph = None
    optimisers = [i for i in items if i.lower() in OPTIMISERS]
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
            limit = max_permutations if max_permutations is not None else math.inf
            perms, total = permutation_candidates(network, limit, seed)
            if len(perms) < total and notes is not None:
                notes.append(
                    f"permutations: {len(perms):,} of the {total:,} permutation strings "
                    f"evaluated (T{network.letters}, {network.letters}T and a sample drawn with "
                    "--seed; --max-candidates sets how many)"
                )
            for perm in perms:
                add(mp.PermutationCandidate(perm, network, pattern.nranks))
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
            # scipy (sparse graphs) is loaded only when an optimiser is asked for.
            from petacomm.topology.mapping_search import (
                bisection_mapping,
                communication_graph,
                greedy_mapping,
                refine_by_swaps,
            )

            if graph is None:
                graph = communication_graph(pattern)
            build = greedy_mapping if low == "greedy" else bisection_mapping
            start = time.perf_counter()
            m = build(pattern, network, time_budget=per_optimiser / 2, graph=graph)
            left = max(0.0, per_optimiser - (time.perf_counter() - start))
            add(refine_by_swaps(m, pattern, network, time_budget=left, seed=seed, graph=graph))
        elif low in ("multilevel", "scotch"):
            from petacomm.topology.mapping_search import communication_graph
            from petacomm.topology.multilevel import multilevel_mapping
            from petacomm.topology.scotch import ScotchError, scotch_mapping, target_description

            if graph is None:
                graph = communication_graph(pattern)
            build = multilevel_mapping if low == "multilevel" else scotch_mapping
            try:
                if low == "scotch":
                    target_description(network)
                m = build(pattern, network, per_optimiser, graph=graph, seed=seed, routing=routing)
            except (ValueError, ScotchError) as err:
                raise ValueError(str(err)) from None
            add(m)
        elif is_torus and sorted(item.upper()) == sorted(mp.permutation_letters(network)):
            add(mp.PermutationCandidate(item, network, pattern.nranks))
        else:
            extra = f", or a permutation of {mp.permutation_letters(network)}" if is_torus else ""
            raise ValueError(
                f"candidates: unknown candidate {item!r} (expected {', '.join(CANDIDATE_WORDS)}"
                f"{extra})"
            )
    return out


def _scotch_applies(network, notes) -> bool:
    """Whether ``all`` includes ``scotch``: Scotch is installed and has a target for the
    network; otherwise a note says why it was left out."""
    from petacomm.topology.scotch import scotch_available, target_description

    reason = None
    if not scotch_available():
        reason = "Scotch (libscotch) is not installed"
    else:
        try:
            target_description(network)
        except ValueError as err:
            reason = str(err).removeprefix("scotch: ")
    if reason is not None and notes is not None:
        notes.append(f"all: scotch left out ({reason})")
    return reason is None


def rank_mappings(
    network,
    routing,
    pattern,
    mappings,
    cost=None,
    rank_by: str = "time",
    hierarchy=None,
    progress=None,
    jobs: int | None = None,
) -> list[RankedMapping]:
    """Evaluate every mapping and sort by ``rank_by`` (ties: max then average contention,
    hop-bytes, name); ratio_to_best = metric / best metric. ``progress(detail=name)`` is
    called after each evaluation; ``jobs`` processes evaluate (``evaluation_pool``; None:
    several for large searches)."""
    if rank_by not in RANK_KEYS:
        raise ValueError(f"rank by {rank_by!r}: expected one of {', '.join(RANK_KEYS)}")
    if rank_by == "time" and cost is None:
        raise ValueError("rank by time needs machine cost parameters")
    key = RANK_KEYS[rank_by]
    from petacomm.topology.evaluation_pool import evaluate_many

    mappings = list(mappings)
    metrics = evaluate_many(network, routing, pattern, mappings, cost, hierarchy, jobs, progress)
    evaluated = list(zip(mappings, metrics, strict=True))

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


def _time_ms(m) -> str:
    return "n/a" if m.predicted_time_s is None else f"{m.predicted_time_s * 1e3:.3f}"


# Terminal columns (name, unit, value); the JSON form has every metric. Intra-node bytes
# are total minus inter-node; the mapping's name comes last so that a long one (an
# optimiser's) does not widen the figures.
TABLE_COLUMNS = (
    ("max cont.", "flows", lambda m: f"{m.max_contention_flows:.2f}"),
    ("avg cont.", "flows", lambda m: f"{m.avg_contention_flows:.2f}"),
    ("max link", "MiB", lambda m: f"{m.max_link_bytes / _MIB:.2f}"),
    ("hop-bytes", "MiB*hop", lambda m: f"{m.hop_bytes / _MIB:.1f}"),
    ("dil. avg/max", "hops", lambda m: f"{m.avg_dilation_hops:.2f}/{m.max_dilation_hops:.2f}"),
    ("inter-node", "MiB", lambda m: f"{m.inter_node_bytes / _MIB:.1f}"),
    ("predicted", "ms", _time_ms),
)


def format_table(ranked: list[RankedMapping], rank_by: str) -> str:
    """Fixed-width table, two header lines: names, then units (every figure's unit is in its
    column's second header line). Fits 100 columns for mapping names up to 10 characters."""
    names = ["#"] + [h for h, _, _ in TABLE_COLUMNS] + ["ratio", "mapping"]
    units = [""] + [f"({u})" for _, u, _ in TABLE_COLUMNS] + [f"({rank_by})", ""]
    rows = [
        [str(r.rank)]
        + [get(r.metrics) for _, _, get in TABLE_COLUMNS]
        + [f"{r.ratio_to_best:.3f}x", r.mapping.name]
        for r in ranked
    ]
    last = len(names) - 1
    widths = [
        max(len(n), len(u), *(len(row[i]) for row in rows))
        for i, (n, u) in enumerate(zip(names, units, strict=True))
    ]

    def line(cells) -> str:
        return "  ".join(
            c.ljust(w) if i == last else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(names), line(units)] + [line(row) for row in rows])
