"""``petacomm bench map``: the mapping engine at scale - one mapping, then a candidate search.

Default case (the issue's target): a 3-D 26-neighbour halo of 131,072 ranks (64x64x32 periodic
grid, 1 MiB messages) on a 32x32x32 torus with 4 cores per node, adaptive routing; the
search evaluates every permutation string. Every figure is a measured wall-clock time in
seconds, and the table's best predicted time is the search's minimum.
``petacomm map --benchmark`` runs the same with ``petacomm map``'s options (those the
benchmark has no use for are refused there).
"""

from __future__ import annotations

import json
import sys
import time

from petacomm.errors import PetacommError
from petacomm.topology.arguments import (
    DEFAULT_MAX_CANDIDATES,
    add_machine_arguments,
    add_quiet_argument,
    add_search_arguments,
    benchmark_network,
    build_cost,
    check_time_model,
    positive_int,
    user_error,
)
from petacomm.topology.peer_benchmark import DEFAULT_GRAPHS

DEFAULT_NETWORK = "torus:32x32x32"
DEFAULT_CORES = 4
DEFAULT_PATTERN = "grid3d 64x64x32 periodic box 1MiB"
DEFAULT_MAPPING = "block"  # fill node by node: TXYZ on a 3-D torus
JSON_SCHEMA = "petacomm.bench-map/1"
# (option, its default): what --peers does not use.
PEERS_IGNORE = (
    ("--link-bandwidth", None),
    ("--link-latency", None),
    ("--time-model", "links"),
    ("--mapping", DEFAULT_MAPPING),
    ("--max-candidates", DEFAULT_MAX_CANDIDATES),
    ("--rank-by", "time"),
    ("--top", None),
    ("--jobs", None),
)


def register(subparsers) -> None:
    """``petacomm bench map`` for the benchmark registry (petacomm.bench.cli)."""
    import argparse

    parser = subparsers.add_parser(
        "map",
        help="time the topology mapping engine at scale (one mapping, then the candidates)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_machine_arguments(parser, node_hierarchy=False)
    case = parser.add_argument_group("case")
    case.add_argument(
        "--pattern", metavar="TEXT", help=f"pattern description (default '{DEFAULT_PATTERN}')"
    )
    case.add_argument(
        "--mapping",
        metavar="MAPPING",
        default=DEFAULT_MAPPING,
        help="the one mapping timed first: block, cyclic or a permutation string such as "
        f"TXYZ (default {DEFAULT_MAPPING}, TXYZ on a 3-D torus)",
    )
    add_search_arguments(parser)
    peers = parser.add_argument_group("peers (mapping against another tool)")
    peers.add_argument(
        "--peers",
        metavar="LIST",
        help="compare the optimisers with another mapper instead of timing the engine: "
        "'scotch' maps irregular graphs with Scotch and with petacomm side by side and "
        "prints hop-bytes, link loads, times and ratios (default case torus:4x8x8, 4 cores "
        "per node, 1024 ranks)",
    )
    peers.add_argument(
        "--graphs",
        metavar="LIST",
        default=DEFAULT_GRAPHS,
        help="with --peers: the irregular graphs (rgg, delaunay, cmb; default all three; "
        "python -m petacomm.topology.irregular_graphs writes them as files)",
    )
    peers.add_argument(
        "--ranks",
        type=positive_int,
        metavar="N",
        help="with --peers: ranks of each graph (default 1024, at most the network's slots)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help="also write the timings as JSON to FILE")
    add_quiet_argument(out)
    parser.set_defaults(func=lambda args: run_benchmark_from_args(args, json_to_stdout=False))


def run_benchmark_from_args(args, json_to_stdout: bool) -> int:
    """Runs the benchmark for ``bench map`` (``--json FILE``) or ``map --benchmark``
    (``--json`` prints the timings instead of the tables)."""
    from petacomm.files import check_output_path

    # bench map's --json names a file ("" is refused below); map --benchmark's is a flag.
    json_file = args.json if isinstance(args.json, str) and not json_to_stdout else None
    if json_file is not None:
        check_output_path(json_file, "--json", [("--model", args.model)])
    if getattr(args, "peers", None) is not None:
        return _run_peers(args, json_file)
    for option in ("ranks",):
        if getattr(args, option, None) is not None:
            raise PetacommError(f"--{option}: only used with --peers")
    if getattr(args, "graphs", DEFAULT_GRAPHS) != DEFAULT_GRAPHS:
        raise PetacommError("--graphs: only used with --peers")
    network, routing = benchmark_network(args, DEFAULT_NETWORK, DEFAULT_CORES)
    cost = build_cost(args)
    check_time_model(cost, routing, network)
    out = (lambda *a, **k: None) if json_to_stdout and args.json else print
    results = run_map_benchmark(
        network,
        routing,
        args.pattern if args.pattern is not None else DEFAULT_PATTERN,
        getattr(args, "mapping", DEFAULT_MAPPING),
        cost,
        args,
        out=out,
    )
    text = json.dumps(results, indent=1) + "\n"
    if json_file is not None:
        from petacomm.files import write_text_atomically

        write_text_atomically(json_file, text, "--json", [("--model", args.model)])
        print(f"timings written to {json_file}")
    elif json_to_stdout and args.json:
        sys.stdout.write(text)
    return 0


def _run_peers(args, json_file) -> int:
    from petacomm.topology.peer_benchmark import run_peer_benchmark

    if args.pattern is not None or args.candidates is not None:
        option = "--pattern" if args.pattern is not None else "--candidates"
        raise PetacommError(f"{option}: not used with --peers (the graphs come from --graphs)")
    # Options of the engine's timing that the comparison has no use for: refused, not
    # ignored (each holds its default unless given).
    for option, default in PEERS_IGNORE:
        if getattr(args, option.lstrip("-").replace("-", "_")) != default:
            raise PetacommError(f"{option}: not used with --peers")
    results = run_peer_benchmark(args)
    if json_file is not None:
        from petacomm.files import write_text_atomically

        write_text_atomically(
            json_file, json.dumps(results, indent=1) + "\n", "--json", [("--model", args.model)]
        )
        print(f"results written to {json_file}")
    return 0


def run_map_benchmark(network, routing, pattern_text, mapping_text, cost, args, out=print) -> dict:
    """Times building the pattern, evaluating one mapping and the candidate search; prints
    the figures (seconds) through ``out``; returns them with the best predicted mapping."""
    from petacomm.progress import Progress
    from petacomm.topology import mapping as mp
    from petacomm.topology.cli import search
    from petacomm.topology.metrics import evaluate_mapping
    from petacomm.topology.pattern_language import parse_pattern
    from petacomm.topology.ranking import RANK_KEYS, default_candidates, format_table

    timings: dict = {"schema": JSON_SCHEMA, "network": network.to_text()}
    with Progress("bench map", quiet=args.quiet) as progress:
        progress.status("building the pattern")
        t0 = time.perf_counter()
        pattern = user_error(
            "--pattern", parse_pattern, pattern_text, default_ranks=network.num_slots
        )
        timings["pattern_s"] = time.perf_counter() - t0
        if pattern.nranks > network.num_slots:
            raise PetacommError(
                f"--pattern: {pattern.nranks} ranks do not fit on {network.to_text()} "
                f"({network.num_slots} slots; use --cores-per-node or a larger network)"
            )
        out(f"case: {network.to_text()}, routing {routing.describe(network)}")
        out(f"      '{pattern_text}': {pattern.nranks} ranks, {pattern.num_messages} messages")
        out(f"build pattern:               {timings['pattern_s']:9.3f} s")
        timings.update(routing=routing.describe(network), pattern=pattern_text)
        timings.update(ranks=pattern.nranks, messages=pattern.num_messages)
        progress.status(f"evaluating {mapping_text}")
        t0 = time.perf_counter()
        build = {"block": mp.block_mapping, "cyclic": mp.cyclic_mapping}.get(mapping_text.lower())
        if build is not None:
            mapping = user_error("--mapping", build, network, pattern.nranks)
        else:
            mapping = user_error(
                "--mapping", mp.permutation_mapping, mapping_text, network, pattern.nranks
            )
        metrics = evaluate_mapping(network, routing, pattern, mapping, cost=cost)
        timings["one_mapping_s"] = time.perf_counter() - t0
        out(
            f"evaluate one mapping:        {timings['one_mapping_s']:9.3f} s  ({mapping.name}, "
            f"max contention {metrics.max_contention_flows:.2f} flows, "
            f"avg {metrics.avg_contention_flows:.2f} flows)"
        )
    spec = args.candidates if args.candidates is not None else default_candidates(network)
    ranked, notes, search_s = search(args, network, routing, pattern, cost, command="bench map")
    for note in notes:
        out(f"note: {note}")
    out(
        f"search:                      {search_s:9.3f} s  ({len(ranked)} candidates: {spec}; "
        f"{search_s / len(ranked):.3f} s per mapping)"
    )
    out(format_table(ranked[: args.top or 5], args.rank_by))
    best = min(ranked, key=lambda r: getattr(r.metrics, RANK_KEYS[args.rank_by]))
    value = getattr(best.metrics, RANK_KEYS[args.rank_by])
    shown = f"{value * 1e3:.3f} ms" if args.rank_by == "time" else f"{value:.6g}"
    out(f"best by {args.rank_by}: {best.mapping.name} ({shown})")
    timings.update(
        search_s=search_s,
        candidates=len(ranked),
        candidates_spec=spec,
        notes=notes,
        rank_by=args.rank_by,
        best=best.mapping.name,
        ranking=[r.as_dict() for r in ranked],
    )
    return timings
