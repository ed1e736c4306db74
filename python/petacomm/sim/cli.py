"""``petacomm simulate``: petacomm's native programs on a SimGrid SMPI machine of thousands
of ranks, built from the same network strings and mappings as ``petacomm map``.

Example::

    petacomm simulate sparse-reduce --ranks 256,1024 --json runs.json
    petacomm simulate transpose --network fattree:2;16,16;1,16;1,1 --cores-per-node 4

Only light modules are imported at the top: ``petacomm simulate --help`` must not load numpy.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

from petacomm.bench import name_list
from petacomm.errors import PetacommError
from petacomm.units import decimal_int

JSON_SCHEMA = "petacomm.simulate/1"
# Simulation wall time per simulated message and per byte of message data (SMPI copies it,
# the ranks compute on it) on one core, fitted to the presets' runs (docs/simulate.md); the
# estimate only decides whether to warn. A message costs more the more ranks run: SimGrid
# shares the links among all flows in progress, so every message start or end re-solves a
# system that grows with the rank count. Sweep3D's --full size took 3.0, 15.1 and 102.9 s at
# 256, 1024 and 4096 ranks (nonblocking; 2026-11-27, the block compute charged, not run), the
# 8192x8192 xor transpose 9.7 and 70.1 s at 256 and 1024: this estimates 3.1, 14.1, 138.4,
# 13.4 and 63.6 s (before, with 724 ranks doubling the cost, fitted to Sweep3D runs that
# timed the host's compute: 710 s at 4096).
# Presets that say how many messages a round puts in flight at once (``Preset.flows``: the
# sparse exchanges, whose ranks all talk to hundreds of partners at once) grow with that
# instead. SimGrid 3.32 walks its list of every detached send in flight at every send's end:
# a message costs in proportion to the flows in flight (owner strategy: 33 s at 128 ranks,
# 443 s at 256). Built with sets (scripts/build-simgrid.sh, --simgrid) the cost per message
# levels off near 100 us (owner: 1.2, 10.8, 58.6 and 193 s at 64, 128, 256 and 512 ranks,
# 37 to 112 us per message; what remains is SimGrid's max-min sharing).
SECONDS_PER_MESSAGE = 20e-6
SECONDS_PER_BYTE = 10e-9
RANKS_DOUBLING_MESSAGE_COST = 2000
FLOWS_DOUBLING_MESSAGE_COST = 1000.0  # SimGrid 3.32 as Debian ships it
FLOWS_HALF_LEVEL = 10_000.0  # the set-based build: growth half-way to its level of 4
# Flows that stay in SimGrid's max-min system together (``Preset.dense_variants``: the blocks
# of MPI_Alltoall's linear algorithm, all in flight at once) are re-shared at every message's
# end, so a message costs more than in proportion to the flows: (flows / 1016) ** 1.5 more,
# fitted to 8192x8192 transposes on torus:4x8x8 with SimGrid 3.32 (one repetition): 10.7 s
# at 64 ranks (4,032 flows of 128 KiB), 52.8 s at 128 (16,256 of 32 KiB), 1133 s at 256
# (65,280 of 8 KiB; the sparse exchanges' growth estimated 14 s, this 1347 s). The directory
# strategy's sparse reductions grow alike (0.38, 2.4 and 180 s at 32, 64 and 128 ranks with
# the set build; estimated 0.31, 5.7 and 169 s; owner's, with the same partners, took 0.3,
# 1.6 and 16.6 s), and so do petacomm-graph's messages, all posted at once (the Delaunay
# graph's 1,490 and 6,058 flows: 0.4 and 7.3 s at 256 and 1024 ranks, estimated 0.2 and 3.8).
DENSE_FLOWS_SCALE = 1016.0
DENSE_FLOWS_EXPONENT = 1.5


def _flow_growth(flows: float, simgrid: str) -> float:
    """How much more than SECONDS_PER_MESSAGE a message costs with ``flows`` in flight."""
    if simgrid == "system":
        return flows / FLOWS_DOUBLING_MESSAGE_COST
    return 4.0 * flows / (flows + FLOWS_HALF_LEVEL)


def estimated_seconds(
    preset, ranks: int, size: dict, variant: str, reps: int, simgrid: str = "system"
) -> float:
    """Seconds the simulation should take here; ``simgrid``: "system" (SimGrid 3.32 as
    Debian ships it) or "activity sets" (--simgrid, built by scripts/build-simgrid.sh)."""
    messages, nbytes = preset.work(ranks, size, variant, reps)
    flows = None if preset.flows is None else preset.flows(ranks, size, variant)
    if flows is None:
        growth = (ranks / RANKS_DOUBLING_MESSAGE_COST) ** 2
    else:
        growth = _flow_growth(flows, simgrid)
        if variant in preset.dense_variants:
            share = 1.0
        else:
            share = preset.overlap(ranks, size, variant) if preset.overlap else 0.0
        if share > 0:
            growth = max(growth, (share * flows / DENSE_FLOWS_SCALE) ** DENSE_FLOWS_EXPONENT)
    per_byte = SECONDS_PER_BYTE if preset.seconds_per_byte is None else preset.seconds_per_byte
    return messages * SECONDS_PER_MESSAGE * (1 + growth) + nbytes * per_byte


def register(subparsers) -> None:
    from petacomm.sim.presets import PRESETS

    parser = subparsers.add_parser(
        "simulate",
        help="run petacomm's kernels on a simulated machine of thousands of ranks (SimGrid SMPI)",
        description="Build a preset's native program with SimGrid's smpicc, generate the "
        "platform from a network string (as petacomm map reads them) and a hostfile from a "
        "mapping, run smpirun for every rank count and mapping, and print one row per "
        "variant. Presets: "
        + "; ".join(f"{p.name}: {p.summary}" for p in PRESETS.values())
        + ". See docs/simulate.md.",
    )
    parser.add_argument("preset", choices=list(PRESETS), help="what to simulate")
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from petacomm.sim.machines import MACHINES
    from petacomm.sim.smpi import NETWORK_MODELS
    from petacomm.topology.arguments import add_quiet_argument, positive_int, positive_seconds

    machine = parser.add_argument_group("simulated machine")
    machine.add_argument(
        "--network",
        metavar="TEXT",
        help="network as petacomm map reads it: torus:AxBxC, fattree:L;D;U;P, "
        "dragonfly:g,a,p,h (default: the preset's)",
    )
    machine.add_argument(
        "--cores-per-node",
        type=positive_int,
        metavar="N",
        help="ranks per node (default 4, or the network's :t=N)",
    )
    machine.add_argument(
        "--machine",
        choices=[*MACHINES, "model"],
        help="link and loopback parameters: "
        + "; ".join(f"{m.name}: {m.summary}" for m in MACHINES.values())
        + "; model: from the netbench machine model (--model FILE or the saved one). "
        "Default: the preset's",
    )
    machine.add_argument(
        "--model", metavar="FILE", help="netbench machine model (implies --machine model)"
    )
    machine.add_argument(
        "--link-bandwidth", metavar="RATE", help="bandwidth of one link direction, e.g. 2GB (per s)"
    )
    machine.add_argument(
        "--link-latency", metavar="SECONDS", help="latency of one link, e.g. 1e-6 (seconds)"
    )
    machine.add_argument("--loopback-bandwidth", metavar="RATE", help="intra-node bandwidth")
    machine.add_argument("--loopback-latency", metavar="SECONDS", help="intra-node latency")
    machine.add_argument(
        "--network-model",
        choices=list(NETWORK_MODELS),
        default="exact",
        help="exact (default): a message of n bytes over h links takes h x latency + n / "
        "bandwidth, computation not simulated; calibrated: SimGrid's default model with "
        "SMPI's correction factors, computation timed at the host speed",
    )
    machine.add_argument(
        "--smpi-option",
        action="append",
        default=[],
        metavar="KEY:VALUE",
        help="another SimGrid/SMPI setting, passed as --cfg=KEY:VALUE (repeatable), e.g. "
        "smpi/allreduce:rdb",
    )
    machine.add_argument(
        "--simgrid",
        metavar="DIR",
        help="the SimGrid installed in DIR (DIR/bin/smpirun) instead of the one on PATH, e.g. "
        "the build of scripts/build-simgrid.sh, which simulates sparse exchanges of "
        "thousands of ranks in minutes where Debian's SimGrid 3.32 takes hours",
    )
    runs = parser.add_argument_group("runs")
    runs.add_argument(
        "--ranks", metavar="LIST", help="comma-separated rank counts (default: the preset's)"
    )
    runs.add_argument(
        "--full",
        action="store_true",
        help="the full experiment: the preset's full rank counts and problem size (long)",
    )
    from petacomm.sim.presets import PRESETS

    runs.add_argument(
        "--size",
        metavar="TEXT",
        help="problem size: "
        + "; ".join(f"{p.name}: {p.size_help} (default {p.size})" for p in PRESETS.values()),
    )
    runs.add_argument(
        "--variants",
        "--strategies",
        dest="variants",
        metavar="LIST",
        help="comma-separated strategies (default: the preset's); sparse-reduce also takes "
        "NAME:wN, the strategy with send_window=N (at most N sends in flight per rank)",
    )
    runs.add_argument(
        "--reps",
        type=positive_int,
        default=1,
        metavar="N",
        help="timed repetitions after a warm-up one; the median is reported (default 1: "
        "under the exact network model simulated times repeat exactly)",
    )
    place = parser.add_argument_group("placement")
    place.add_argument(
        "--mapping",
        metavar="LIST",
        help="comma-separated mappings: block (default), cyclic, permutation strings such as "
        "TXYZ or XYZT, or 'permutations' (every one, on a torus)",
    )
    place.add_argument(
        "--rankfile",
        metavar="FILE",
        help="a rankfile as 'petacomm map --format rankfile' writes it (one rank count)",
    )
    place.add_argument(
        "--host-template",
        default="node{node}",
        metavar="TEMPLATE",
        help="how the rankfile names node {node} (default: node{node}, petacomm map's)",
    )
    model = parser.add_argument_group("prediction")
    model.add_argument(
        "--predict",
        action="store_true",
        help="also predict every run on the same machine and print how prediction and "
        "simulation agree across mappings: rank correlation (times within 0.5 %% tied), the "
        "predicted best mapping's gap to the simulated best. On a torus the flow model "
        "(route latency, then links shared max-min as SimGrid shares them); elsewhere "
        "petacomm map's link loads (link latency per message, busiest link's bytes)",
    )
    model.add_argument(
        "--routing",
        metavar="MODEL",
        help="routing model of the prediction (default: dor-simgrid on a torus, the one SimGrid "
        "routes by; the network's default otherwise)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help=f"write the runs as JSON ({JSON_SCHEMA})")
    out.add_argument(
        "--keep",
        metavar="DIR",
        help="write the platform, hostfiles and inputs into DIR and keep them",
    )
    out.add_argument(
        "--warn-after",
        type=positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="warn before starting when the estimated simulation time exceeds this (default 600)",
    )
    out.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="stop a simulation that runs longer than this",
    )
    add_quiet_argument(out)


# ---- turning options into a machine -------------------------------------------------------
def _rate(text: str, option: str) -> float:
    from petacomm.units import parse_size

    try:
        value = parse_size(text.removesuffix("/s").removesuffix("ps"))
    except ValueError as err:
        raise PetacommError(f"{option}: {err}") from None
    # A subnormal rate (1e-320) crashed SimGrid (abort, exit code 134).
    if not math.isfinite(value) or value < sys.float_info.min:
        raise PetacommError(f"{option}: must be a finite rate > 0, got {text!r}")
    return value


def _seconds(text: str, option: str) -> float:
    """A link latency: seconds from 0 to the machine model's bound on a message's latency."""
    from petacomm.model.machine import MAX_ALPHA_S

    try:
        value = float(text)
    except ValueError:
        raise PetacommError(f"{option}: expected seconds (e.g. 1e-6), got {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_ALPHA_S:
        raise PetacommError(
            f"{option}: must be finite seconds >= 0 and <= {MAX_ALPHA_S:g}, got {text!r}"
        )
    if 0 < value < sys.float_info.min:  # subnormal: SimGrid aborted (exit code 134)
        raise PetacommError(
            f"{option}: expected 0 or seconds >= {sys.float_info.min:.3g}, got {text!r}"
        )
    return value


def build_platform(args, preset):
    from petacomm.sim.machines import MACHINES, from_model
    from petacomm.sim.platform import LinkParameters, Platform
    from petacomm.topology.arguments import user_error
    from petacomm.topology.network import parse_network

    text = args.network or preset.network
    network = user_error("--network", parse_network, text)
    if args.cores_per_node is not None:
        network = network.with_cores(args.cores_per_node)
    elif ":t=" not in text and ":cores=" not in text:
        network = network.with_cores(4)
    name = args.machine or ("model" if args.model else preset.machine)
    if args.model and name != "model":
        raise PetacommError(f"--model: given with --machine {name} (use one of them)")
    if name == "model":
        try:
            profile = from_model(args.model)
        except (PetacommError, ValueError) as err:
            raise PetacommError(f"--model: {err}") from None
    else:
        profile = MACHINES[name]

    def given(default, name: str):
        """--NAME-bandwidth and --NAME-latency over the machine's ``default`` (`is None`: an
        empty value is refused, not taken for the machine's)."""
        bandwidth, latency = getattr(args, f"{name}_bandwidth"), getattr(args, f"{name}_latency")
        return LinkParameters(
            default.bandwidth if bandwidth is None else _rate(bandwidth, f"--{name}-bandwidth"),
            default.latency if latency is None else _seconds(latency, f"--{name}-latency"),
        )

    link, loop = given(profile.link, "link"), given(profile.loopback, "loopback")
    platform = user_error("--network", Platform, network, link, loop)
    return platform, name


def _rank_counts(text: str, network) -> list[int]:
    counts = []
    for item in text.split(","):
        try:
            value = decimal_int(item)
        except ValueError:
            raise PetacommError(f"--ranks: expected integers >= 1, got {item!r}") from None
        if value < 1:
            raise PetacommError(f"--ranks: expected integers >= 1, got {item!r}")
        if value > network.num_slots:
            raise PetacommError(
                f"--ranks: {value} ranks do not fit on {network.to_text()} ({network.num_nodes} "
                f"nodes x {network.cores_per_node} cores = {network.num_slots} slots)"
            )
        counts.append(value)
    return counts


def plan_runs(args, preset, network):
    """[(ranks, mapping)] in the order they run; mappings are petacomm Mapping objects."""
    from petacomm.sim.placement import mapping_names, named_mapping, read_rankfile
    from petacomm.topology.arguments import user_error

    if args.rankfile is not None:
        from petacomm.files import read_text_file

        if args.mapping is not None:
            raise PetacommError("--rankfile: give either --mapping or --rankfile, not both")
        text = read_text_file(args.rankfile, "--rankfile")
        mapping = user_error(
            "--rankfile", read_rankfile, text, network, args.host_template, Path(args.rankfile).name
        )
        if args.ranks is not None and _rank_counts(args.ranks, network) != [mapping.nranks]:
            raise PetacommError(
                f"--ranks: the rankfile places {mapping.nranks} ranks; --ranks says {args.ranks}"
            )
        return [(mapping.nranks, mapping)]
    default = preset.full_ranks if args.full else preset.ranks
    counts = _rank_counts(default if args.ranks is None else args.ranks, network)
    names = user_error("--mapping", mapping_names, args.mapping or "block", network)
    runs = []
    for ranks in counts:
        for name in names:
            runs.append((ranks, user_error("--mapping", named_mapping, name, network, ranks)))
    return runs


# ---- the command ------------------------------------------------------------------------
def run(args) -> int:
    from petacomm.bench import MAX_REPS, bounded_int
    from petacomm.sim.presets import PRESETS, check_variant
    from petacomm.sim.smpi import COMMON_OPTIONS, find_tools

    preset = PRESETS[args.preset]
    for option in args.smpi_option:
        key, sep, value = option.partition(":")
        if not sep or not key.strip() or not value.strip() or " " in option:
            raise PetacommError(f"--smpi-option: expected KEY:VALUE, got {option!r}")
    from petacomm.files import refuse_empty_names

    refuse_empty_names(
        [("--json", args.json), ("--model", args.model), ("--rankfile", args.rankfile)]
    )
    for option, value in (("--network", args.network), ("--mapping", args.mapping)):
        if value is not None and not value.strip():  # was taken for the preset's own
            raise PetacommError(f"{option}: empty value")
    if args.json:
        from petacomm.files import check_output_path

        check_output_path(
            args.json, "--json", [("--rankfile", args.rankfile), ("--model", args.model)]
        )
    keep = _keep_directory(args.keep)
    platform, machine = build_platform(args, preset)
    network = platform.network
    size_text = (preset.full_size if args.full else preset.size) if args.size is None else args.size
    from petacomm.topology.arguments import user_error

    size = user_error("--size", preset.parse_size, size_text)
    variants = preset.variants if args.variants is None else name_list(args.variants, "--variants")
    for variant in variants:
        check_variant(preset, variant)
    # the programs took 99999999999 as garbage; the map-maker counts its warm-up iteration
    bounded_int(args.reps, "--reps", 1, MAX_REPS - 1)
    runs = [(r, m, v) for r, m in plan_runs(args, preset, network) for v in variants]
    if preset.check_size is not None:
        for ranks in sorted({r for r, _, _ in runs}):
            user_error("--size", preset.check_size, size, ranks)
    # After the arguments: a bad argument is named even without SMPI.
    tools = find_tools(args.simgrid)
    simgrid = "system" if args.simgrid is None else "activity sets"
    estimate = sum(estimated_seconds(preset, r, size, v, args.reps, simgrid) for r, _, v in runs)
    if estimate > args.warn_after:
        print(
            f"simulate: warning: {len(runs)} simulations estimated to take {estimate / 60:.0f} "
            "min in all (from the messages and bytes they simulate); fewer or smaller --ranks, "
            "or a smaller --size, run faster",
            file=sys.stderr,
        )
    log = (lambda _m: None) if args.quiet else (lambda m: print(f"simulate: {m}", file=sys.stderr))
    tree = _build(tools, preset, log)
    if keep is not None:
        try:
            keep.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise PetacommError(f"--keep: cannot create '{args.keep}': {err.strerror}") from None
    doc = {
        "schema": JSON_SCHEMA,
        "preset": preset.name,
        "family": preset.family,
        "size": size,
        "reps": args.reps,
        "platform": {
            "network": network.to_text(),
            "machine": machine,
            "link_bandwidth_B_s": platform.link.bandwidth,
            "link_latency_s": platform.link.latency,
            "loopback_bandwidth_B_s": platform.loopback.bandwidth,
            "loopback_latency_s": platform.loopback.latency,
            "network_model": args.network_model,
            "smpi_options": [*COMMON_OPTIONS, *smpi_options(args, preset, platform)],
            "smpirun": tools.smpirun,
        },
        "runs": [],
    }

    def save(records: list[dict], complete: bool) -> None:
        """The JSON so far (after every run: a long sweep stopped midway keeps its runs)."""
        if args.json:
            import json

            from petacomm.files import write_text_atomically

            doc["runs"], doc["complete"] = records, complete
            write_text_atomically(args.json, json.dumps(doc, indent=2) + "\n")

    with tempfile.TemporaryDirectory(prefix="petacomm-simulate-") as scratch:
        work = keep or Path(scratch)
        records, mappings = _simulate(
            args, preset, platform, machine, size, runs, tools, tree, work, log, save
        )
    if args.predict:
        from petacomm.sim.predict import agreement as agree
        from petacomm.sim.predict import predict

        routing, time_model = user_error(
            "--routing", predict, records, mappings, platform, args.routing
        )
        doc["agreement"] = {"routing": routing, "time_model": time_model, "groups": agree(records)}
    save(records, True)
    print(format_table(records))
    if "agreement" in doc:
        from petacomm.sim.predict import format_agreement

        a = doc["agreement"]
        print(f"prediction ({a['time_model']}, routing {a['routing']}):")
        print(format_agreement(doc["agreement"]["groups"]) or "no group of two mappings or more")
    if args.json:
        log(f"wrote {len(records)} records to {args.json}")
    return 0


def _keep_directory(text: str | None) -> Path | None:
    """--keep's directory, absolute: smpirun runs in another directory, where a relative one
    named no platform file ('kdir/platform.xml' does not exist). A file there is refused
    (it was mkdir's FileExistsError traceback), and so is an empty name (it was ignored)."""
    if text is None:
        return None
    if not text.strip():
        raise PetacommError("--keep: empty directory name")
    keep = Path(text).resolve()
    if keep.exists() and not keep.is_dir():
        raise PetacommError(f"--keep: '{text}' exists and is not a directory")
    return keep


def smpi_options(args, preset, platform) -> tuple[str, ...]:
    """The network model's options, the host speed (a compute burst timed on this machine
    counts as that many seconds on the platform's hosts), the preset's own (Sweep3D
    simulates computation whatever the model), then --smpi-option (the last one wins)."""
    from petacomm.sim.smpi import NETWORK_MODELS

    return (
        *NETWORK_MODELS[args.network_model],
        f"--cfg=smpi/host-speed:{float(platform.host_speed)!r}f",
        *preset.smpi_options,
        *(f"--cfg={o}" for o in args.smpi_option),
    )


def _build(tools, preset, log) -> Path:
    from petacomm.sim.smpi import build_programs

    return build_programs(tools, preset.families, (preset.program,), log)


def _simulate(args, preset, platform, machine, size, runs, tools, tree, work, log, save):
    from petacomm.sim.platform import hostfile
    from petacomm.sim.smpi import COMMON_OPTIONS
    from petacomm.sim.smpi import run as smpi_run

    network = platform.network
    options = smpi_options(args, preset, platform)
    platform_file = work / "platform.xml"
    platform_file.write_text(platform.xml())
    records, mappings = [], []
    for index, (ranks, mapping, variant) in enumerate(runs, start=1):
        hosts = work / f"hosts-p{ranks}-{_safe(mapping.name)}"
        hosts.write_text(hostfile(mapping))
        argv = preset.prepare(work, ranks, size, variant, args.reps, platform)
        estimate = estimated_seconds(
            preset,
            ranks,
            size,
            variant,
            args.reps,
            "system" if args.simgrid is None else "activity sets",
        )
        log(
            f"run {index}/{len(runs)}: {preset.name} {variant} on {ranks} ranks, mapping "
            f"{mapping.name}, {network.to_text()} (estimated {estimate:.0f} s)"
        )
        result = smpi_run(
            tools,
            tree,
            ranks,
            platform_file,
            hosts,
            argv,
            options,
            timeout=args.timeout,
        )
        if result.returncode != 0:
            tail = "\n".join(
                line
                for line in (result.stderr + result.stdout).splitlines()
                if "xbt_cfg/INFO" not in line and "smpi_coll/INFO" not in line
            )[-2000:]
            raise PetacommError(
                f"the simulation of {preset.name} {variant} on {ranks} ranks failed (exit "
                f"{result.returncode}):\n{tail}"
            )
        row = preset.parse(result.stdout, work)
        log(
            f"run {index}/{len(runs)} done: {result.wall_s:.1f} s of simulation "
            f"({result.cpu_s:.1f} s CPU)"
        )
        records.append(
            {
                "family": preset.family,
                "preset": preset.name,
                "variant": variant,
                "mapping": mapping.name,
                "ranks": ranks,
                "platform": network.to_text(),
                "machine": machine,
                "simulated_time_s": row.pop("simulated_time_s"),
                "wall_time_s": result.wall_s,
                "cpu_time_s": result.cpu_s,
                **row,
            }
        )
        pattern = records[-1].get("pattern") or preset.pattern(
            ranks, size, variant, (*COMMON_OPTIONS, *options)
        )
        if pattern:
            records[-1]["pattern"] = pattern
        mappings.append(mapping)
        save(records, False)
    return records, mappings


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def format_table(records: list[dict]) -> str:
    """One row per record; 'vs best' compares the variants and mappings of one rank count.
    The predicted column appears with --predict. At most 99 columns."""
    best: dict[int, float] = {}
    for r in records:
        best[r["ranks"]] = min(best.get(r["ranks"], math.inf), r["simulated_time_s"])
    predicted = any("predicted_time_s" in r for r in records)
    head = f"{'ranks':>6} {'mapping':<10} {'variant':<15} {'chosen':<15} {'simulated':>13} "
    head += f"{'predicted':>13} " if predicted else ""
    head += f"{'vs best':>8} {'wall':>8}"
    lines = [head, "-" * len(head)]
    for r in records:
        t = r["simulated_time_s"]
        ratio = t / best[r["ranks"]] if best[r["ranks"]] > 0 else math.nan
        line = (
            f"{r['ranks']:>6} {r['mapping'][:10]:<10} {r['variant'][:15]:<15} "
            f"{str(r.get('chosen', ''))[:15]:<15} {t * 1e3:10.3f} ms "
        )
        if predicted:
            p = r.get("predicted_time_s")
            line += f"{p * 1e3:10.3f} ms " if p is not None else f"{'-':>13} "
        lines.append(line + f"{ratio:7.2f}x {r['wall_time_s']:6.1f} s")
    return "\n".join(lines)
