"""``petacomm map``: rank candidate mappings of a pattern onto a network, write the best.

Example::

    petacomm map --network torus:8x16x32 --cores-per-node 4 \\
        --pattern 'grid2d 128x128 box 1MiB' --candidates permutations --top 5 \\
        --output map.txt --format rankfile

``--benchmark`` runs the scale benchmark of ``petacomm bench map`` instead (benchmark.py).
Only light modules are imported at the top: ``petacomm map --help`` must not load numpy.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from petacomm.errors import PetacommError
from petacomm.topology.arguments import (
    add_machine_arguments,
    add_quiet_argument,
    add_search_arguments,
    build_cost,
    build_network,
    build_routing,
    check_time_model,
    describe_cost,
    user_error,
)

JSON_SCHEMA = "petacomm.map/1"
# Launcher file formats (launcher_files.FORMATS; a test keeps the two equal).
FORMATS = ("rankfile", "slurm", "cray", "bgp", "bgq", "csv")

# Options the scale benchmark (``--benchmark``) has no use for, with their defaults: given
# together with --benchmark they are refused rather than silently ignored.
_NOT_FOR_BENCHMARK = {
    "pattern_file": None,
    "matrix": None,
    "from_profile": None,
    "node": None,
    "hwloc": None,
    "output": None,
    "format": None,
    "choose": None,
    "hosts": None,
    "host_template": "node{node}",
}


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
    add_machine_arguments(parser)
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
    add_search_arguments(parser, search)
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
    add_quiet_argument(out)
    bench = parser.add_argument_group("benchmark")
    bench.add_argument(
        "--benchmark",
        action="store_true",
        help="time the engine at scale instead (same as 'petacomm bench map'): one mapping and "
        "the permutation search of a 3-D 26-neighbour halo of 131,072 ranks on torus:32x32x32 "
        "with 4 cores per node; --network, --cores-per-node, --pattern, --routing, --model, "
        "--link-bandwidth and the candidate options change the case, --json prints the "
        "timings as JSON; the other options are refused",
    )


def pattern_inputs(args) -> list[tuple[str, str | None]]:
    """The command's input files as (option, path): an output must not replace them."""
    return [
        ("--pattern-file", args.pattern_file),
        ("--matrix", args.matrix),
        ("--from-profile", args.from_profile),
        ("--hosts", getattr(args, "hosts", None)),
        ("--hwloc", getattr(args, "hwloc", None)),
        ("--model", getattr(args, "model", None)),
    ]


def _slots(network) -> tuple[int, str]:
    """The most ranks a pattern may have on the network, and why."""
    return network.num_slots, (
        f"{network.to_text()} offers {network.num_nodes} nodes x {network.cores_per_node} "
        "cores; use --cores-per-node or a larger network"
    )


def build_pattern(args, network):
    from petacomm.files import read_text_file
    from petacomm.topology.measured import load_matrix_file, read_profile_log
    from petacomm.topology.pattern_language import parse_pattern

    given = [
        name
        for name in ("pattern", "pattern_file", "matrix", "from_profile")
        if getattr(args, name) is not None
    ]
    if len(given) != 1:
        raise PetacommError(
            "give exactly one of --pattern, --pattern-file, --matrix, --from-profile"
            + (f" (got {', '.join('--' + g.replace('_', '-') for g in given)})" if given else "")
        )
    source = given[0]
    if source == "pattern":
        return user_error(
            "--pattern",
            parse_pattern,
            args.pattern,
            default_ranks=network.num_slots,
            max_ranks=_slots(network),
        )
    if source == "pattern_file":
        from pathlib import Path

        # An editor's UTF-8 byte order mark is no statement (the CSV reader skips it too).
        text = read_text_file(args.pattern_file, "--pattern-file").removeprefix("\ufeff")
        path = Path(args.pattern_file)
        text = _description_in(text, path)
        return user_error(
            f"--pattern-file {path}",
            parse_pattern,
            text,
            base_dir=path.parent,
            default_ranks=network.num_slots,
            max_ranks=_slots(network),
        )
    if source == "matrix":
        return user_error("--matrix", load_matrix_file, args.matrix)
    return user_error("--from-profile", read_profile_log, args.from_profile)


def _description_in(text: str, path) -> str:
    """A pattern file is a description, or a JSON document whose "pattern" field holds one
    (the results of petacomm-halo carry what they measured that way)."""
    if not text.lstrip().startswith("{"):
        return text
    from petacomm.files import loads_json

    try:
        document = loads_json(text)
    except json.JSONDecodeError as err:
        raise PetacommError(
            f"--pattern-file: {path} looks like JSON but is not ({err.msg}, line {err.lineno})"
        ) from None
    description = document.get("pattern") if isinstance(document, dict) else None
    if not isinstance(description, str):
        raise PetacommError(
            f"--pattern-file: {path} is JSON without a 'pattern' string (a description in the "
            "pattern language)"
        )
    return description


def _check_output_options(args) -> None:
    from petacomm.files import check_output_path

    if args.output is not None and not args.format:
        raise PetacommError("--format: required with --output (one of " + ", ".join(FORMATS) + ")")
    if args.format is not None and args.format not in FORMATS:
        raise PetacommError(
            f"--format: unknown format {args.format!r} (expected {', '.join(FORMATS)})"
        )
    if args.format is not None and args.output is None:
        raise PetacommError("--output: required with --format")
    if args.output is None:  # they name the hosts of the launcher file --output writes
        for option, given in (
            ("--hosts", args.hosts is not None),
            ("--host-template", args.host_template != _NOT_FOR_BENCHMARK["host_template"]),
        ):
            if given:
                raise PetacommError(f"{option}: only used with --output (the launcher file)")
    if args.output is not None:
        check_output_path(args.output, "--output", pattern_inputs(args))
        from petacomm.topology.launcher_files import check_host_template

        user_error("--host-template", check_host_template, args.host_template)


def _refuse_unused_options(args) -> None:
    for name, default in _NOT_FOR_BENCHMARK.items():
        if getattr(args, name) != default:
            option = "--" + name.replace("_", "-")
            raise PetacommError(
                f"{option}: not used by --benchmark (it times a described pattern; run "
                "'petacomm map' without --benchmark to map this input)"
            )


def run(args) -> int:
    if args.benchmark:
        from petacomm.topology.benchmark import run_benchmark_from_args

        _refuse_unused_options(args)
        return run_benchmark_from_args(args, json_to_stdout=args.json)
    _check_output_options(args)
    network, hierarchy = build_network(args)
    routing = build_routing(args, network)
    hosts = None
    if args.hosts is not None:
        from petacomm.files import read_text_file
        from petacomm.topology.launcher_files import parse_host_file

        text = read_text_file(args.hosts, "--hosts")
        hosts = user_error(f"--hosts: {args.hosts}", parse_host_file, text)
    pattern = build_pattern(args, network)
    if pattern.nranks > network.num_slots:
        raise PetacommError(
            f"the pattern has {pattern.nranks} ranks but {network.to_text()} offers "
            f"{network.num_nodes} nodes x {network.cores_per_node} cores = {network.num_slots} "
            "slots (use --cores-per-node or a larger network)"
        )
    if hosts is not None and len(hosts) < network.num_nodes:
        raise PetacommError(
            f"--hosts: {len(hosts)} host names for {network.num_nodes} nodes (need one per "
            "node, in node-id order)"
        )
    cost = build_cost(args)
    check_time_model(cost, routing, network, pattern)
    ranked, notes, elapsed = search(args, network, routing, pattern, cost, hierarchy)
    chosen = ranked[0]
    if args.choose is not None:
        matches = [r for r in ranked if r.mapping.name.upper() == args.choose.upper()]
        if not matches:
            raise PetacommError(
                f"--choose: no candidate named {args.choose!r} (candidates: "
                + ", ".join(r.mapping.name for r in ranked[:10])
                + (", ..." if len(ranked) > 10 else "")
                + ")"
            )
        chosen = matches[0]
    if args.output is not None:
        from petacomm.topology.launcher_files import write_mapping

        user_error(
            "--output",
            write_mapping,
            args.output,
            chosen.mapping,
            network,
            args.format,
            hosts,
            args.host_template,
            inputs=pattern_inputs(args),
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
                "pieces": [
                    {"from_bytes": f, "alpha_s": a, "beta_s_per_byte": b} for f, a, b in cost.pieces
                ],
                "time_model": "flows" if cost.flow_links is not None else "links",
                "flow_links": None if cost.flow_links is None else vars(cost.flow_links),
            },
            "candidates_evaluated": len(ranked),
            "elapsed_s": elapsed,
            "notes": notes,
            "ranking": [r.as_dict() for r in shown],
            "chosen": chosen.mapping.name,
            "output": {"path": args.output, "format": args.format} if args.output else None,
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from petacomm.topology.ranking import format_table

    print(
        f"network {network.to_text()}  routing {routing.describe(network)}  "
        f"ranks {pattern.nranks}  pattern: {pattern.description}"
    )
    print(describe_cost(cost, pattern.message_sizes()))
    for note in notes:
        print(f"note: {note}")
    print(format_table(shown, args.rank_by))
    print(f"{len(ranked)} candidates evaluated in {elapsed:.2f} s; best: {ranked[0].mapping.name}")
    if args.output is not None:
        print(f"wrote {chosen.mapping.name} as {args.format} to {args.output}")
    return 0


def search(args, network, routing, pattern, cost, hierarchy=None, command="map"):
    """Builds the candidates named by --candidates and ranks them, with progress on stderr
    under the name ``command``. Returns (ranked, notes about what the search left out and
    the pattern's own notes, seconds taken)."""
    from petacomm.progress import Progress
    from petacomm.topology.ranking import candidate_mappings, default_candidates, rank_mappings

    notes: list[str] = list(pattern.notes)
    spec = args.candidates if args.candidates is not None else default_candidates(network)
    start = time.perf_counter()
    with Progress(command, quiet=args.quiet) as progress:
        progress.status("building candidate mappings")
        mappings = user_error(
            "--candidates",
            candidate_mappings,
            spec,
            network,
            pattern,
            time_budget=args.time_budget,
            seed=args.seed,
            max_permutations=args.max_candidates,
            notes=notes,
            routing=routing,
        )
        progress.start(len(mappings), "mappings evaluated")
        ranked = user_error(
            "",
            rank_mappings,
            network,
            routing,
            pattern,
            mappings,
            cost,
            args.rank_by,
            hierarchy,
            progress=progress.advance,
            jobs=args.jobs,
        )
    return ranked, notes, time.perf_counter() - start
