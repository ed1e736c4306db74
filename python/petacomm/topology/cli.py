"""``petacomm map``: rank candidate mappings of a pattern onto a network, write the best.

Example::

    petacomm map --network torus:8x16x32 --cores-per-node 4 \\
        --pattern 'grid2d 128x128 box 1MiB' --candidates permutations --top 5 \\
        --output map.txt --format rankfile

``--benchmark`` runs the scale benchmark instead (see ``benchmark.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.topology.launcher_files import FORMATS, write_mapping
from petacomm.topology.measured import load_matrix_file, read_profile_log
from petacomm.topology.metrics import cost_parameters_from_model
from petacomm.topology.network import parse_network
from petacomm.topology.node_hierarchy import load_hwloc_xml, parse_synthetic
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.ranking import (
    RANK_KEYS,
    candidate_mappings,
    default_candidates,
    format_table,
    rank_mappings,
)
from petacomm.topology.routing import parse_routing
from petacomm.units import parse_size

JSON_SCHEMA = "petacomm.map/1"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "map",
        help="rank mappings of a communication pattern onto a network and write the best "
        "as a launcher file",
        description="Route every message of a pattern under each candidate mapping, rank the "
        "mappings by predicted time or contention, print the table and optionally write the "
        "chosen mapping in a launcher's format. See docs/topology.md for the pattern "
        "language and network strings.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    net = parser.add_argument_group("machine")
    net.add_argument(
        "--network",
        metavar="TEXT",
        help="network, e.g. torus:8x16x32, mesh:4x4, torus:8x8:wrap=1,0, fattree:2;4,4;1,2;1,2, "
        "dragonfly:9,4,2,2 (append :t=N for N cores per node)",
    )
    net.add_argument(
        "--cores-per-node",
        type=int,
        metavar="N",
        help="processes per node (the T dimension of permutation strings); overrides :t=",
    )
    net.add_argument(
        "--node",
        metavar="LEVELS",
        help="node hierarchy as hwloc-style levels, e.g. 'package:2 numa:2 core:8'; splits "
        "intra-node bytes by level and sets the cores per node",
    )
    net.add_argument(
        "--hwloc", metavar="FILE", help="node hierarchy from an hwloc XML file (lstopo --of xml)"
    )
    net.add_argument(
        "--routing",
        metavar="MODEL",
        help="routing model: dor, dor:ZYX, adaptive, adaptive:paths (torus/mesh; default "
        "adaptive), dmodk, ecmp (fat tree; default dmodk), minimal, valiant (dragonfly; "
        "default minimal)",
    )
    net.add_argument(
        "--model",
        metavar="FILE",
        help="machine model JSON for alpha/beta (default: the model 'petacomm netbench' "
        "measured on this machine, else petacomm's built-in defaults)",
    )
    net.add_argument(
        "--link-bandwidth",
        metavar="BYTES_PER_S",
        help="bandwidth of one network link direction, e.g. 425MB (per second); default: the "
        "model's point-to-point bandwidth",
    )
    pat = parser.add_argument_group("communication pattern (one of)")
    pat.add_argument(
        "--pattern",
        metavar="TEXT",
        help="pattern description, e.g. 'grid2d 128x128 box 1MiB' (';' separates statements)",
    )
    pat.add_argument("--pattern-file", metavar="FILE", help="pattern description in a file")
    pat.add_argument(
        "--matrix", metavar="FILE", help="measured bytes matrix (.csv dense or src,dst,bytes; .npy)"
    )
    pat.add_argument(
        "--from-profile", metavar="LOG", help="communication measured by the profiler (JSON log)"
    )
    search = parser.add_argument_group("candidates and ranking")
    search.add_argument(
        "--candidates",
        metavar="LIST",
        help="comma-separated: permutations, block, cyclic, tiles, greedy, bisection, all, or "
        "permutation strings like TZXY (default: permutations on a torus, otherwise "
        "block,cyclic,greedy,bisection)",
    )
    search.add_argument(
        "--rank-by",
        choices=sorted(RANK_KEYS),
        default="time",
        help="metric that orders the table (default: time = predicted communication time)",
    )
    search.add_argument(
        "--top", type=int, metavar="N", help="show only the N best mappings (default: all)"
    )
    search.add_argument(
        "--time-budget",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="total time for the greedy/bisection optimisers (default: 10)",
    )
    search.add_argument(
        "--seed", type=int, default=0, help="seed of the swap refinement (default: 0)"
    )
    search.add_argument("--json", action="store_true", help="print the ranking as JSON")
    out = parser.add_argument_group("output")
    out.add_argument("--output", metavar="FILE", help="write the chosen mapping to FILE")
    out.add_argument(
        "--format",
        metavar="FORMAT",
        help=f"launcher file format: {', '.join(FORMATS)} (required with --output)",
    )
    out.add_argument(
        "--choose",
        metavar="MAPPING",
        help="write this candidate instead of the best (its name as shown in the table)",
    )
    out.add_argument(
        "--hosts",
        metavar="FILE",
        help="host names, one per line, in node-id order (rankfile and slurm formats)",
    )
    out.add_argument(
        "--host-template",
        default="node{node}",
        metavar="TEMPLATE",
        help="host name of node id {node} when --hosts is not given (default: node{node})",
    )
    bench = parser.add_argument_group("benchmark")
    bench.add_argument(
        "--benchmark",
        action="store_true",
        help="time the engine at scale instead: one mapping and the full permutation search "
        "of a 3-D 26-neighbour halo of 131,072 ranks on torus:32x32x32 with 4 cores per node "
        "(--network, --cores-per-node, --pattern, --routing override the case)",
    )


def _user_error(option, fn, *args, **kwargs):
    """Run a library call, turning ValueError into a one-line PetacommError naming the option
    the bad value came from."""
    try:
        return fn(*args, **kwargs)
    except ValueError as err:
        message = " ".join(str(err).split())
        raise PetacommError(f"{option}: {message}" if option else message) from None


def build_network(args):
    if not args.network:
        raise PetacommError("--network: required (e.g. --network torus:8x16x32)")
    network = _user_error("--network", parse_network, args.network)
    hierarchy = None
    if args.node and args.hwloc:
        raise PetacommError("--node and --hwloc: give only one node hierarchy")
    if args.node:
        hierarchy = _user_error("--node", parse_synthetic, args.node)
    elif args.hwloc:
        hierarchy = _user_error("--hwloc", load_hwloc_xml, args.hwloc)
    cores = args.cores_per_node
    if cores is not None and cores < 1:
        raise PetacommError(f"--cores-per-node: must be a positive integer, got {cores}")
    if hierarchy is not None:
        if args.cores_per_node is not None and args.cores_per_node != hierarchy.cores_per_node:
            raise PetacommError(
                f"--cores-per-node {cores} disagrees with the node hierarchy "
                f"({hierarchy.cores_per_node} cores)"
            )
        cores = hierarchy.cores_per_node
    if cores is not None:
        network = network.with_cores(cores)
    return network, hierarchy


def build_pattern(args, network):
    given = [
        name
        for name in ("pattern", "pattern_file", "matrix", "from_profile")
        if getattr(args, name)
    ]
    if len(given) != 1:
        raise PetacommError(
            "give exactly one of --pattern, --pattern-file, --matrix, --from-profile"
            + (f" (got {', '.join('--' + g.replace('_', '-') for g in given)})" if given else "")
        )
    source = given[0]
    if source == "pattern":
        return _user_error(
            "--pattern", parse_pattern, args.pattern, default_ranks=network.num_slots
        )
    if source == "pattern_file":
        path = Path(args.pattern_file)
        try:
            text = path.read_text()
        except OSError as err:
            raise PetacommError(f"--pattern-file {path}: {err.strerror}") from None
        try:
            return parse_pattern(text, base_dir=path.parent, default_ranks=network.num_slots)
        except ValueError as err:
            raise PetacommError(f"--pattern-file {path}: {err}") from None
    if source == "matrix":
        return _user_error("--matrix", load_matrix_file, args.matrix)
    return _user_error("--from-profile", read_profile_log, args.from_profile)


def build_cost(args, pattern):
    from petacomm.model import load_or_default  # lazy: keeps `import petacomm` light

    model = load_or_default(args.model)
    link_beta = None
    if args.link_bandwidth:
        try:
            bandwidth = parse_size(args.link_bandwidth.removesuffix("/s"))
        except ValueError as err:
            raise PetacommError(f"--link-bandwidth: {err}") from None
        if bandwidth <= 0:
            raise PetacommError(f"--link-bandwidth: must be > 0, got {args.link_bandwidth!r}")
        link_beta = 1.0 / bandwidth
    return _user_error("--model", cost_parameters_from_model, model, link_beta)


def run(args) -> int:
    if args.benchmark:
        from petacomm.topology.benchmark import run_benchmark_from_args

        return run_benchmark_from_args(args)
    if args.output and not args.format:
        raise PetacommError("--format: required with --output (one of " + ", ".join(FORMATS) + ")")
    if args.format and args.format not in FORMATS:
        raise PetacommError(
            f"--format: unknown format {args.format!r} (expected {', '.join(FORMATS)})"
        )
    if args.format and not args.output:
        raise PetacommError("--output: required with --format")
    if args.top is not None and args.top < 1:
        raise PetacommError(f"--top: must be a positive integer, got {args.top}")
    if args.time_budget <= 0:
        raise PetacommError(f"--time-budget: must be > 0 seconds, got {args.time_budget}")
    network, hierarchy = build_network(args)
    routing = _user_error("--routing", parse_routing, args.routing, network)
    pattern = build_pattern(args, network)
    if pattern.nranks > network.num_slots:
        raise PetacommError(
            f"the pattern has {pattern.nranks} ranks but {network.to_text()} offers "
            f"{network.num_nodes} nodes x {network.cores_per_node} cores = {network.num_slots} "
            "slots (use --cores-per-node or a larger network)"
        )
    hosts = None
    if args.hosts:
        try:
            hosts = Path(args.hosts).read_text().split()
        except OSError as err:
            raise PetacommError(f"--hosts {args.hosts}: {err.strerror}") from None
    cost = build_cost(args, pattern)
    spec = args.candidates or default_candidates(network)
    start = time.perf_counter()
    mappings = _user_error(
        "--candidates",
        candidate_mappings,
        spec,
        network,
        pattern,
        time_budget=args.time_budget,
        seed=args.seed,
    )
    ranked = _user_error(
        "", rank_mappings, network, routing, pattern, mappings, cost, args.rank_by, hierarchy
    )
    elapsed = time.perf_counter() - start
    chosen = ranked[0]
    if args.choose:
        matches = [r for r in ranked if r.mapping.name.upper() == args.choose.upper()]
        if not matches:
            raise PetacommError(
                f"--choose: no candidate named {args.choose!r} (candidates: "
                + ", ".join(r.mapping.name for r in ranked[:10])
                + (", ..." if len(ranked) > 10 else "")
                + ")"
            )
        chosen = matches[0]
    if args.output:
        _user_error(
            "--output",
            write_mapping,
            args.output,
            chosen.mapping,
            network,
            args.format,
            hosts,
            args.host_template,
        )
    shown = ranked[: args.top] if args.top else ranked
    if args.json:
        doc = {
            "schema": JSON_SCHEMA,
            "network": network.to_text(),
            "routing": routing.describe(network),
            "pattern": pattern.description,
            "nranks": pattern.nranks,
            "rank_by": args.rank_by,
            "cost": {
                "alpha_s": cost.alpha,
                "beta_s_per_byte": cost.beta,
                "link_beta_s_per_byte": cost.link_beta,
            },
            "candidates_evaluated": len(ranked),
            "elapsed_s": elapsed,
            "ranking": [r.as_dict() for r in shown],
            "chosen": chosen.mapping.name,
            "output": {"path": args.output, "format": args.format} if args.output else None,
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(
        f"network {network.to_text()}  routing {routing.describe(network)}  "
        f"ranks {pattern.nranks}  pattern: {pattern.description}"
    )
    print(
        f"cost: alpha {cost.alpha * 1e6:.3f} us, beta {1 / cost.beta / 1e9 if cost.beta else 0:.3f}"
        f" GB/s per endpoint, link {1 / cost.link_beta / 1e9 if cost.link_beta else 0:.3f} GB/s"
    )
    print(format_table(shown, args.rank_by))
    print(f"{len(ranked)} candidates evaluated in {elapsed:.2f} s; best: {ranked[0].mapping.name}")
    if args.output:
        print(f"wrote {chosen.mapping.name} as {args.format} to {args.output}")
    return 0
