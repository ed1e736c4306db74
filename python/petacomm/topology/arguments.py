"""The options ``petacomm map`` and ``petacomm bench map`` share, and what they become.

``add_machine_arguments`` and ``add_search_arguments`` add the option groups (their help
lists the registered network kinds and routing models); ``build_network``,
``build_routing`` and ``build_cost`` turn parsed options into objects. Every problem is a
:class:`PetacommError` naming the option. Only light modules are imported here: building
the parser (every petacomm command's start) must not load numpy.
"""

from __future__ import annotations

import argparse
import math

from petacomm.errors import PetacommError
from petacomm.files import refuse_empty_names
from petacomm.units import decimal_int

RANK_KEYS = ("time", "max-contention", "avg-contention", "max-link-bytes", "hop-bytes")
# Permutation candidates evaluated at most when --max-candidates is not given: all (d+1)!
# of them up to 4-D tori (5! = 120), a seeded sample beyond (a 7-D torus has 40,320 and one
# evaluation of a 512-rank halo on it takes ~50 ms: all of them would take half an hour).
DEFAULT_MAX_CANDIDATES = 120


def user_error(option: str, fn, *args, **kwargs):
    """Runs a library call, turning ValueError into a one-line PetacommError naming the option
    the bad value came from."""
    try:
        return fn(*args, **kwargs)
    except ValueError as err:
        message = " ".join(str(err).split())
        raise PetacommError(f"{option}: {message}" if option else message) from None


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse names the option in its error)."""
    try:
        value = decimal_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


# Scotch takes its random seed as a C int: larger seeds reached it wrapped (2^32 gave seed
# 0's mapping).
MAX_SEED = (1 << 31) - 1


def seed_value(text: str) -> int:
    """argparse type: a random seed, an integer from 0 to MAX_SEED."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be an integer from 0 to {MAX_SEED}, got {text!r}"
        ) from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {MAX_SEED}, got {text!r}")
    return value


# Durations at most (about 31 years): a timer beyond overflows the system's waits (1e308 s
# ended a simulate --timeout and a profile --timeout in an OverflowError traceback).
MAX_SECONDS = 1e9


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 and at most MAX_SECONDS."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a finite number of seconds > 0 and <= {MAX_SECONDS:g}, got {text!r}"
        )
    return value


class DeferredHelp:
    """A help text built only when argparse prints it (argparse formats help with ``%``).
    The texts below list the registered network kinds and routing models: building them when
    the parser is made would load numpy at the start of every petacomm command."""

    def __init__(self, make):
        self.make = make

    def __mod__(self, params) -> str:
        return self.make() % params

    def __str__(self) -> str:
        return self.make()

    def strip(self) -> str:
        return str(self).strip()


def _network_help() -> str:
    from petacomm.topology.network import NETWORK_KINDS

    examples = ", ".join(kind.example for kind in NETWORK_KINDS.values())
    return f"network, e.g. {examples} (append :t=N for N cores per node)"


def _routing_help() -> str:
    from petacomm.topology.routing import ROUTING_KINDS

    return "routing model: " + "; ".join(
        f"{kind.syntax} ({'/'.join(kind.networks)})" for kind in ROUTING_KINDS.values()
    )


def add_machine_arguments(parser: argparse.ArgumentParser, node_hierarchy: bool = True) -> None:
    net = parser.add_argument_group("machine")
    net.add_argument("--network", metavar="TEXT", help=DeferredHelp(_network_help))
    net.add_argument(
        "--cores-per-node",
        type=positive_int,
        metavar="N",
        help="processes per node (the T dimension of permutation strings); overrides :t=",
    )
    if node_hierarchy:
        net.add_argument(
            "--node",
            metavar="LEVELS",
            help="node hierarchy as hwloc-style levels, e.g. 'package:2 numa:2 core:8'; splits "
            "intra-node bytes by level and sets the cores per node",
        )
        net.add_argument(
            "--hwloc",
            metavar="FILE",
            help="node hierarchy from an hwloc XML file (lstopo --of xml)",
        )
    net.add_argument("--routing", metavar="MODEL", help=DeferredHelp(_routing_help))
    net.add_argument(
        "--model",
        metavar="FILE",
        help="machine model JSON for alpha/beta per message size (default: the model "
        "'petacomm netbench' measured on this machine, else petacomm's built-in defaults)",
    )
    net.add_argument(
        "--link-bandwidth",
        metavar="BYTES_PER_S",
        help="bandwidth of one network link direction, e.g. 425MB (per second); default: the "
        "model's point-to-point bandwidth for large messages",
    )
    net.add_argument(
        "--time-model",
        choices=("links", "flows"),
        default="links",
        help="predicted time: links = busiest sender's alpha-beta time + busiest link's bytes "
        "(default); flows = every message waits its route's latency, then shares its links "
        "max-min with the messages in flight, as SimGrid does (torus: dor routings; fat "
        "tree: dmodk)",
    )
    net.add_argument(
        "--link-latency",
        metavar="SECONDS",
        help="latency of one link for --time-model flows (a route of h links pays h); "
        "default: the model's 8 B point-to-point latency",
    )


def add_search_arguments(parser: argparse.ArgumentParser, group=None) -> None:
    search = group or parser.add_argument_group("candidates and ranking")
    search.add_argument(
        "--candidates",
        metavar="LIST",
        help="comma-separated: permutations, block, cyclic, tiles, greedy, bisection, "
        "multilevel, scotch (Scotch's mapping refined by petacomm; needs libscotch), all, or "
        "permutation strings like TZXY (default: permutations on a torus, otherwise "
        "block,cyclic,greedy,bisection,multilevel)",
    )
    search.add_argument(
        "--max-candidates",
        type=positive_int,
        default=DEFAULT_MAX_CANDIDATES,
        metavar="N",
        help="evaluate at most N permutation strings: a torus of d dimensions has (d+1)! of "
        f"them; beyond N a seeded sample is taken and the output says so (default "
        f"{DEFAULT_MAX_CANDIDATES})",
    )
    search.add_argument(
        "--rank-by",
        choices=RANK_KEYS,
        default="time",
        help="metric that orders the table (default: time = predicted communication time)",
    )
    search.add_argument(
        "--top", type=positive_int, metavar="N", help="show only the N best mappings"
    )
    search.add_argument(
        "--time-budget",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="total time for the greedy, bisection, multilevel and scotch optimisers, shared "
        "between those asked for (default: 10)",
    )
    search.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="evaluate the candidates in N processes (default: every core available when "
        "the search routes 20 million messages or more, else 1)",
    )
    search.add_argument(
        "--seed",
        type=seed_value,
        default=0,
        help="seed of the swap refinement and of permutation sampling (default: 0)",
    )


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress display on standard error"
    )


def build_network(args):
    """(network, node hierarchy or None) from --network, --cores-per-node, --node, --hwloc."""
    from petacomm.files import read_bytes_file
    from petacomm.topology.network import MAX_CORES_PER_NODE, parse_network
    from petacomm.topology.node_hierarchy import hwloc_from_xml, parse_synthetic

    if not args.network:
        raise PetacommError("--network: required (e.g. --network torus:8x16x32)")
    network = user_error("--network", parse_network, args.network)
    hierarchy = None
    node, hwloc = getattr(args, "node", None), getattr(args, "hwloc", None)
    if node is not None and hwloc is not None:
        raise PetacommError("--node and --hwloc: give only one node hierarchy")
    if node is not None:
        hierarchy = user_error("--node", parse_synthetic, node)
    elif hwloc is not None:
        data = read_bytes_file(hwloc, "--hwloc")
        hierarchy = user_error("--hwloc", hwloc_from_xml, data, hwloc)
    cores = args.cores_per_node
    if cores is not None and cores > MAX_CORES_PER_NODE:
        raise PetacommError(
            f"--cores-per-node: {cores:,} exceeds the limit of {MAX_CORES_PER_NODE:,}"
        )
    if hierarchy is not None:
        if cores is not None and cores != hierarchy.cores_per_node:
            raise PetacommError(
                f"--cores-per-node {cores} disagrees with the node hierarchy "
                f"({hierarchy.cores_per_node} cores)"
            )
        cores = hierarchy.cores_per_node
    if cores is not None:
        network = network.with_cores(cores)
    return network, hierarchy


def build_routing(args, network):
    from petacomm.topology.routing import parse_routing

    return user_error("--routing", parse_routing, args.routing, network)


def benchmark_network(args, default_network: str, default_cores: int):
    """(network, routing) of a benchmark: --network, or its default network with
    ``default_cores`` per node unless --cores-per-node says otherwise."""
    if args.network is None:
        args.network = default_network
        if args.cores_per_node is None:
            args.cores_per_node = default_cores
    network, _ = build_network(args)
    return network, build_routing(args, network)


def build_cost(args):
    """Cost parameters from --model (size-dependent alpha/beta) and --link-bandwidth."""
    from petacomm.model import load_or_default
    from petacomm.model.machine import MAX_ALPHA_S, model_option_error
    from petacomm.topology.metrics import cost_parameters_from_model
    from petacomm.units import parse_size

    refuse_empty_names([("--model", args.model)])  # '' read the directory '.'
    try:
        model = load_or_default(args.model)
        model.required_point_to_point_operation()  # every cost below is priced by it
    except PetacommError as err:
        raise model_option_error(err, args.model) from None
    link_beta = None
    if args.link_bandwidth is not None:
        try:
            bandwidth = parse_size(args.link_bandwidth.removesuffix("/s"))
        except ValueError as err:
            raise PetacommError(f"--link-bandwidth: {err}") from None
        # 1e-320 B/s (subnormal) made 1/bandwidth infinite, refused later as --model's.
        if not math.isfinite(bandwidth) or bandwidth <= 0 or not math.isfinite(1.0 / bandwidth):
            raise PetacommError(
                f"--link-bandwidth: must be a finite rate > 0, got {args.link_bandwidth!r}"
            )
        link_beta = 1.0 / bandwidth
    cost = user_error("--model", cost_parameters_from_model, model, link_beta)
    if getattr(args, "time_model", "links") != "flows":
        if getattr(args, "link_latency", None) is not None:
            raise PetacommError("--link-latency: applies to --time-model flows only")
        return cost
    from dataclasses import replace

    from petacomm.topology.flow_model import links_from_model

    latency = None
    if args.link_latency is not None:
        try:
            latency = float(args.link_latency)
        except ValueError:
            latency = math.nan
        if not math.isfinite(latency) or not 0 <= latency <= MAX_ALPHA_S:
            raise PetacommError(
                f"--link-latency: expected seconds >= 0 and <= {MAX_ALPHA_S:g} (e.g. 5e-6), "
                f"got {args.link_latency!r}"
            )
    bandwidth = None if link_beta is None else 1.0 / link_beta
    links = user_error("--model", links_from_model, model, bandwidth, latency)
    return replace(cost, flow_links=links)


def check_time_model(cost, routing, network, pattern=None) -> None:
    """--time-model flows needs a routing that lists each message's links, and phases the
    flow model takes (flow_model.check_size: messages in flight at once, messages of a run
    of ordered phases)."""
    from petacomm.topology import flow_model

    if cost.flow_links is None:
        return
    if not flow_model.supports(routing):
        raise PetacommError(
            f"--time-model flows: routing {routing.describe(network)!r} gives link loads "
            "only, not each message's route (use --routing dor or dor-simgrid on a torus, "
            "dmodk on a fat tree)"
        )
    if pattern is None:
        return
    from petacomm.topology.metrics import check_flow_sizes

    try:
        check_flow_sizes(pattern, "use --time-model links")
    except flow_model.TooManyMessages as err:
        raise PetacommError(f"--time-model flows: {err}") from None


def describe_cost(cost, sizes) -> str:
    """One line: the alpha/beta pieces used for the pattern's message sizes, and the link."""
    from petacomm.units import format_bytes

    parts = []
    for low, high, alpha, beta in cost.pieces_for_sizes(sizes):
        span = format_bytes(low) if low == high else f"{format_bytes(low)}-{format_bytes(high)}"
        bandwidth = "inf" if beta <= 0 else f"{1e-9 / beta:.3f}"
        parts.append(f"{span}: alpha {alpha * 1e6:.3f} us, 1/beta {bandwidth} GB/s")
    links = cost.flow_links
    if links is not None:
        return (
            f"time model: flows (link {links.bandwidth * 1e-9:.3f} GB/s, "
            f"{links.latency * 1e6:.3f} us per link; loopback "
            f"{links.loopback_bandwidth * 1e-9:.3f} GB/s, {links.loopback_latency * 1e6:.3f} us)"
        )
    link = "inf" if cost.link_beta <= 0 else f"{1e-9 / cost.link_beta:.3f}"
    return "cost per message (" + "; ".join(parts) + f"); link {link} GB/s"
