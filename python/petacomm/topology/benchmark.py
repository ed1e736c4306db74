"""Scale benchmark of the mapping engine: one mapping, then a full permutation search.

Default case (the issue's target): a 3-D 26-neighbour halo of 131,072 ranks (64x64x32 periodic
grid, 1 MiB messages) on a 32x32x32 torus with 4 cores per node, adaptive routing. Run it with
``petacomm map --benchmark`` (or ``petacomm bench map`` where the bench registry lists this
module). Every figure is a measured wall-clock time in seconds.
"""

from __future__ import annotations

import time

from petacomm.errors import PetacommError
from petacomm.topology.mapping import all_permutations, permutation_mapping
from petacomm.topology.metrics import evaluate_mapping
from petacomm.topology.network import TorusNetwork, parse_network
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.ranking import format_table, rank_mappings
from petacomm.topology.routing import parse_routing

DEFAULT_NETWORK = "torus:32x32x32"
DEFAULT_CORES = 4
DEFAULT_PATTERN = "grid3d 64x64x32 periodic box 1MiB"
DEFAULT_MAPPING = "TXYZ"


def run_map_benchmark(
    network_text: str = DEFAULT_NETWORK,
    cores_per_node: int | None = DEFAULT_CORES,
    pattern_text: str = DEFAULT_PATTERN,
    routing_text: str | None = None,
    mapping_text: str = DEFAULT_MAPPING,
    cost=None,
    search: bool = True,
    top: int = 5,
    out=print,
) -> dict:
    """Run the benchmark, print figures with units through ``out``; return the timings."""
    try:
        network = parse_network(network_text)
        if cores_per_node:
            network = network.with_cores(cores_per_node)
        if not isinstance(network, TorusNetwork):
            raise ValueError(f"benchmark network {network_text!r}: must be a torus or mesh")
        routing = parse_routing(routing_text, network)
    except ValueError as err:
        raise PetacommError(str(err)) from None
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        pattern = parse_pattern(pattern_text)
    except ValueError as err:
        raise PetacommError(f"--pattern: {err}") from None
    timings["pattern_s"] = time.perf_counter() - t0
    msgs = pattern.num_messages
    out(
        f"case: {network.to_text()}, routing {routing.describe(network)}, pattern "
        f"'{pattern_text}': {pattern.nranks} ranks, {msgs} messages"
    )
    out(f"build pattern:                 {timings['pattern_s']:8.3f} s")
    t0 = time.perf_counter()
    try:
        mapping = permutation_mapping(mapping_text, network, pattern.nranks)
    except ValueError as err:
        raise PetacommError(str(err)) from None
    metrics = evaluate_mapping(network, routing, pattern, mapping, cost=cost)
    timings["one_mapping_s"] = time.perf_counter() - t0
    out(
        f"evaluate one mapping ({mapping.name}):   {timings['one_mapping_s']:8.3f} s  "
        f"(max contention {metrics.max_contention_flows:.2f} flows, "
        f"avg {metrics.avg_contention_flows:.2f} flows)"
    )
    if search:
        perms = all_permutations(network)
        t0 = time.perf_counter()
        mappings = [permutation_mapping(p, network, pattern.nranks) for p in perms]
        ranked = rank_mappings(
            network,
            routing,
            pattern,
            mappings,
            cost,
            rank_by="time" if cost is not None else "max-contention",
        )
        timings["search_s"] = time.perf_counter() - t0
        timings["candidates"] = len(perms)
        out(
            f"full permutation search ({len(perms)} mappings): {timings['search_s']:8.3f} s "
            f"({timings['search_s'] / len(perms):.3f} s per mapping)"
        )
        out(format_table(ranked[:top], "time" if cost is not None else "max-contention"))
    return timings


def run_benchmark_from_args(args) -> int:
    from petacomm.topology.cli import build_cost

    pattern_text = args.pattern or DEFAULT_PATTERN
    network_text = args.network or DEFAULT_NETWORK
    cores = args.cores_per_node or (DEFAULT_CORES if not args.network else None)
    cost = build_cost(args, None)
    run_map_benchmark(
        network_text,
        cores,
        pattern_text,
        args.routing,
        DEFAULT_MAPPING,
        cost,
        top=args.top or 5,
    )
    return 0


def register(subparsers) -> None:
    """``petacomm bench map`` for the benchmark registry (petacomm.bench.cli)."""
    from petacomm.topology.cli import add_arguments, run

    parser = subparsers.add_parser(
        "map",
        help="time the topology mapping engine at scale (one mapping, all permutations)",
        description=__doc__,
    )
    add_arguments(parser)
    parser.set_defaults(func=run, benchmark=True)
