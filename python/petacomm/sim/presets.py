"""What ``petacomm simulate`` can run: one preset per family, each a native program built
with SMPI, its inputs at a rank count, and how to read its results.

A preset names its program and families, default network, machine profile, rank counts
and variants (strategies), a default problem size and a full size (the study's), and three
functions: ``prepare`` (writes the inputs of one run into a work directory, returns the
program's argv; it is given the simulated platform), ``parse`` (the program's output -> the
run's result) and ``work`` (how many messages and bytes one run simulates: the wall-time
estimate is linear in both, since SMPI copies every message's data and the ranks really
compute on it).

One run simulates one variant, so every variant's simulation wall time is its own and a
failing variant names itself. The programs run as SMPI actors, threads of one process:
they keep no state in the C library between calls (strtok_r, not strtok).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from petacomm.bench.halo import MAX_MESSAGE as HALO_MAX_MESSAGE
from petacomm.bench.mapmaker import BOUNDS, MAX_NSIDE
from petacomm.bench.sweep3d import TRANSPORTS as SWEEP3D_TRANSPORTS
from petacomm.errors import PetacommError
from petacomm.sim.smpi_selection import (
    smpi_allreduce_algorithm,
    smpi_alltoall_algorithm,
    smpi_barrier_algorithm,
)
from petacomm.units import decimal_int, is_whole_number


@dataclass(frozen=True)
class Preset:
    name: str
    family: str
    summary: str
    families: tuple[str, ...]
    program: str
    network: str
    machine: str
    ranks: str
    full_ranks: str
    variants: tuple[str, ...]
    size: str
    full_size: str
    size_help: str
    parse_size: Callable[[str], dict]
    prepare: Callable[[Path, int, dict, str, int, object], list[str]]
    parse: Callable[[str, Path], dict]
    work: Callable[[int, dict, str, int], tuple[float, float]]
    # The run's communication in petacomm map's pattern language, for --predict (or None).
    # Its arguments: ranks, size, variant and the run's SMPI options ("--cfg=KEY:VALUE").
    pattern: Callable[[int, dict, str, tuple[str, ...]], str | None] = (
        lambda ranks, size, variant, options: None
    )
    # ValueError when the size does not fit a rank count (called for each, before any build).
    check_size: Callable[[dict, int], None] | None = None
    # The variants its program takes under SMPI (strategy or transport names), for --variants.
    variant_names: Callable[[], tuple[str, ...]] | None = None
    # The name in variant_names of a variant written with options (a PetacommError naming
    # --variants when they are malformed), and the form of those options for the message.
    variant_name: Callable[[str], str] = lambda variant: variant
    variant_form: str = ""
    # SMPI options of its own, after the network model's (and before --smpi-option).
    smpi_options: tuple[str, ...] = ()
    # Messages one round of the run puts in flight at once, when that (not the rank count)
    # sets a simulated message's cost (see petacomm.sim.cli.estimated_seconds); None from
    # the function: the rank count sets it for that variant.
    flows: Callable[[int, dict, str], float | None] | None = None
    # Variants whose flows stay in SimGrid's max-min system together (an all-to-all's blocks
    # all in flight), so that every message's end re-solves their sharing, rather than
    # ending about as they start (see petacomm.sim.cli.DENSE_FLOWS_SCALE).
    dense_variants: tuple[str, ...] = ()
    # For the other variants: the share of a round's flows that stay in the system together
    # that way (0 or None: none; see _sparse_overlap).
    overlap: Callable[[int, dict, str], float] | None = None
    # Wall seconds of simulation per byte sent (None: petacomm.sim.cli.SECONDS_PER_BYTE, fitted
    # to programs that also pack and transpose what they send).
    seconds_per_byte: float | None = None


def check_variant(preset: Preset, variant: str) -> None:
    """PetacommError naming --variants when ``preset``'s program does not take ``variant``:
    the program failed once simulated, and simulate said only that no result line came."""
    if preset.variant_names is None:  # the program's own refusal is all there is
        return
    names = preset.variant_names()
    if preset.variant_name(variant) not in names:
        form = f"; {preset.variant_form}" if preset.variant_form else ""
        raise PetacommError(
            f"--variants: {preset.program} does not take {variant!r} (expected "
            f"{', '.join(names)}{form})"
        )


def _xchg_variants() -> tuple[str, ...]:
    from petacomm.xchg import strategy_names

    return tuple(strategy_names())  # "auto" first


def _transpose_variants() -> tuple[str, ...]:
    from petacomm.transpose import strategies

    # petacomm-transpose-bench gives no mask: a strategy that needs one fails
    return ("auto", *(s.name for s in strategies() if not s.needs_mask))


def _result_line(stdout: str, mark: str) -> dict:
    """The program's one result line ``MARK {json}``."""
    rows = [line for line in stdout.splitlines() if line.startswith(mark + " ")]
    if len(rows) != 1:
        raise PetacommError(f"expected one '{mark}' result line, got {len(rows)}")
    try:
        return json.loads(rows[0][len(mark) + 1 :])
    except json.JSONDecodeError as err:
        raise PetacommError(f"unreadable result line {rows[0]!r}: {err}") from None


# ---- sparse reduction: strategies on the CMB-like keys (study 1) -------------------------
def _nside_and_count(text: str, count: str, example: str) -> dict:
    """``NSIDE:N`` (HEALPix nside, a power of two, and a positive count) as
    ``{"nside": ..., count: ...}``; ValueError naming the form and ``example`` otherwise."""
    nside, sep, number = text.partition(":")
    try:
        values = {"nside": int(nside), count: int(number)} if sep else None
    except ValueError:
        values = None
    if not values or values["nside"] < 1 or values[count] < 1:
        raise ValueError(f"expected NSIDE:{count.upper()}, e.g. {example}, got {text!r}")
    if values["nside"] & (values["nside"] - 1):
        raise ValueError(f"NSIDE must be a power of two, got {values['nside']}")
    if values["nside"] > MAX_NSIDE:
        raise ValueError(f"NSIDE: at most {MAX_NSIDE}, got {values['nside']}")
    return values


def _sparse_size(text: str) -> dict:
    return _nside_and_count(text, "total_samples", "128:2097152")


def _sparse_keys_fit(size: dict, ranks: int) -> None:
    """ValueError when the scan's samples per rank are more than the key generator takes
    (found, before, only while writing the keys, after the build: a traceback)."""
    from petacomm.datasets import make

    make("cmb", ranks, **size)


def _sparse_variant(variant: str) -> tuple[str, int]:
    """(strategy, send_window) of a variant: a strategy name, or NAME:wN for the plan option
    send_window=N (at most N sends in flight per rank and round)."""
    name, sep, window = variant.partition(":w")
    if not sep:
        return variant, 0
    if not is_whole_number(window) or not 1 <= int(window) < 2**31:
        raise PetacommError(
            f"--variants: {variant!r}: expected NAME or NAME:wN with N from 1 to "
            f"{2**31 - 1} sends in flight"
        )
    return name, int(window)


def _sparse_prepare(
    work: Path, ranks: int, size: dict, variant: str, reps: int, platform=None
) -> list[str]:
    import numpy as np

    from petacomm.datasets import make

    strategy, window = _sparse_variant(variant)
    keys_dir = work / f"keys-p{ranks}"
    if not keys_dir.is_dir():
        keys_dir.mkdir()
        generator = make("cmb", ranks, **size)
        for r in range(ranks):
            np.unique(generator.keys(r)).astype(np.int64).tofile(keys_dir / f"p{ranks}_r{r}.bin")
    command = ["petacomm-xchg-setup-bench", str(keys_dir), str(reps), strategy]
    return command + (["p2p", str(window)] if window else [])


def _sparse_parse(stdout: str, work: Path) -> dict:
    row = _result_line(stdout, "XCHGSMPI")
    return {
        "chosen": row["chosen"],
        "simulated_time_s": row["execute_seconds"],
        "setup_time_s": row["simulated_seconds"],
        "keys_rank0": row["keys"],
    }


def _sparse_partners(ranks: int, size: dict) -> int:
    """Partners of a rank (the mean) in a sparse exchange of the CMB scan: every rank holds
    a piece of the scan that crosses the whole sky, so up to 1024 ranks each shares pixels
    with nearly every other; beyond, its n samples' pixels are each held by a few other
    ranks: up to 4, fewer when the map has more pixels than the scan has samples to revisit
    them (h = samples per pixel). petacomm.xchg.offline counts, at 4096 ranks: 570 for n = 256
    samples of the 64:1048576 scan (h = 21; this gives 1024), 1,877 for 512 of 128:2097152
    (2,048), 1,357 for 1024 of 512:4194304 (h = 1.3; 1,365, where 4 n gave 4,095); 998-1,012
    at 1024 ranks for every size tried (1,023)."""
    samples_per_rank = size["total_samples"] / ranks
    per_sample = min(4.0, size["total_samples"] / (12 * size["nside"] ** 2))
    return int(min(ranks - 1, per_sample * samples_per_rank))


def _sparse_flows(ranks: int, size: dict, variant: str) -> float:
    """Messages of one round: the dense reduction's rounds and the butterfly's steps pair
    every rank once; a sparse round sends to every partner (with a send window fewer are in
    flight at once, _sparse_overlap, but as many are polled for)."""
    if _sparse_variant(variant)[0] in ("dense-allreduce", "butterfly"):
        return ranks
    return ranks * max(1, _sparse_partners(ranks, size))


# A sparse round's messages overlap in SimGrid's max-min system once they are large enough to
# outlast the latency: measured with the set build, the wall time per simulated message is
# about the same (83-112 us) for the owner strategy's 0.1-0.5 KB messages with 16k-262k flows
# per round, but 92, 260 and 1850 us for auto's 2 KB messages at 128 ranks with 2k, 4k and
# 16k flows in flight (send_window 16, 32 and none: 12.0, 33.7 and 240 s). Priced as an
# all-to-all's blocks (DENSE_FLOWS_SCALE) for messages of 2 KB and up from 128 ranks, less
# below (by (size / 2 KB)^(4/3) and (ranks / 128)^2: the 64-rank runs grew little); fitted
# to the runs in tests/sim/test_simulate.py's estimate test.
SPARSE_OVERLAP = 1.0
SPARSE_OVERLAP_BYTES = 2048.0
SPARSE_OVERLAP_RANKS = 128.0


def _sparse_overlap(ranks: int, size: dict, variant: str) -> float:
    """Share of a sparse round's flows that overlap (see SPARSE_OVERLAP); with a send window
    of w sends, at most w of a rank's partners."""
    strategy, window = _sparse_variant(variant)
    if strategy in ("dense-allreduce", "butterfly"):
        return 0.0
    messages, nbytes = _sparse_work(ranks, size, variant, 1)
    per_message = nbytes / max(1.0, messages)
    partners = max(1, _sparse_partners(ranks, size))
    return (
        SPARSE_OVERLAP
        * min(1.0, per_message / SPARSE_OVERLAP_BYTES) ** (4 / 3)
        * min(1.0, ranks / SPARSE_OVERLAP_RANKS) ** 2
        * (min(1.0, window / partners) if window else 1.0)
    )


def _butterfly_steps(ranks: int) -> int:
    """Steps of the butterfly: log2 of the largest power of two <= ranks, one more if ranks
    is not a power of two."""
    width = 1 << (max(1, ranks).bit_length() - 1)
    return (width.bit_length() - 1) + (width < ranks)


def _sparse_work(ranks: int, size: dict, variant: str, reps: int) -> tuple[float, float]:
    """(messages, bytes) of one run: every build and execution (warm-ups too)."""
    variant = _sparse_variant(variant)[0]
    runs = reps + 1
    log_p = max(1.0, math.log2(ranks))
    dense_keys = 12 * size["nside"] ** 2
    chunks = math.ceil(dense_keys / 65536)
    samples = size["total_samples"]
    if variant == "dense-allreduce":  # reduce-scatter + allgather of the dense map per execution
        return 2 * runs * ranks * 2 * log_p * chunks, 2 * runs * 2 * 8 * ranks * dense_keys
    if variant == "butterfly":  # per build and execution: s steps (count and keys), s out, s back
        steps = _butterfly_steps(ranks)
        # Each step passes on about half of a rank's keys: 16 B (key, rank) at setup, 8 B
        # values each way per execution. Its messages of a few KB cost SMPI about a third of
        # the per-byte time fitted on the other presets' (3.3, 7.7 and 25.4 s measured at
        # 256, 1024 and 4096 ranks of the 512:4194304 scan).
        return runs * ranks * 4 * steps, runs * steps * (16 + 16) * samples / 2 / 3
    # Discovery and build (about four rounds; allgather's ring gathers every rank's keys),
    # then two rounds per execution (to the owners and back), each to every partner.
    rounds = 4 + 2 * runs
    messages = rounds * ranks * max(1, _sparse_partners(ranks, size))
    nbytes = 4 * 8 * samples * runs
    if variant == "allgather":
        messages += ranks * (ranks - 1)
        nbytes += 8 * ranks * samples
    return messages, nbytes


# ---- the map-maker: PCG iterations of petacomm-mapmaker (study 1) -------------------------
_MAPMAKER_JSON = "mapmaker.json"


def _mapmaker_size(text: str) -> dict:
    size = _nside_and_count(text, "samples", "32:200000")
    if size["samples"] > BOUNDS["samples"]:  # petacomm-mapmaker's --samples
        raise ValueError(f"SAMPLES: at most {BOUNDS['samples']}, got {size['samples']}")
    return size


def _mapmaker_prepare(
    work: Path, ranks: int, size: dict, variant: str, reps: int, platform=None
) -> list[str]:
    (work / _MAPMAKER_JSON).unlink(missing_ok=True)
    # --tol 0: exactly reps + 1 iterations, the first a warm-up (as every preset's reps).
    return [
        "petacomm-mapmaker",
        "--nside",
        str(size["nside"]),
        "--samples",
        str(size["samples"]),
        "--strategy",
        variant,
        "--tol",
        "0",
        "--max-iter",
        str(reps + 1),
        "--json",
        str(work / _MAPMAKER_JSON),
        "--quiet",
    ]


def _mapmaker_parse(stdout: str, work: Path) -> dict:
    try:
        doc = json.loads((work / _MAPMAKER_JSON).read_text())
        (run,) = doc["runs"]
        iterations = sorted(run["iteration_s"][1:])
        comm = sorted(run["comm_s"][1:])
    except (OSError, ValueError, KeyError) as err:
        raise PetacommError(f"petacomm-mapmaker wrote no usable {_MAPMAKER_JSON}: {err}") from None
    if not iterations:
        raise PetacommError("petacomm-mapmaker ran no iteration after the warm-up")
    return {
        "chosen": run["strategy"],
        # One PCG iteration of the slowest rank (median after the warm-up iteration).
        "simulated_time_s": iterations[len(iterations) // 2],
        "comm_time_s": comm[len(comm) // 2],
        "setup_time_s": run["setup_s"],
        "bytes_per_execute_max": run["bytes_per_execute"]["max"],
        "messages_per_execute_max": run["messages_per_execute"]["max"],
        "pixels_observed": doc["pixels"]["observed"],
    }


def _mapmaker_work(ranks: int, size: dict, variant: str, reps: int) -> tuple[float, float]:
    """(messages, bytes): the plan's builds (owners, preconditioner, solve) and one
    execution per iteration, like the sparse-reduce preset's, with 3 values per key."""
    as_sparse = {"nside": size["nside"], "total_samples": 4 * size["samples"]}
    messages, nbytes = _sparse_work(ranks, as_sparse, variant, reps)
    return messages, 3 * nbytes


# ---- transposes: strategies on an N0 x N1 float64 slab (study 4) --------------------------
def _transpose_size(text: str) -> dict:
    import os

    from petacomm.bench.transpose import shape_option

    n0, n1 = shape_option(text, "--size")
    # The simulated ranks are processes of this machine: the whole array is in its memory
    # twice (in and out). 10^11 x 10^11 was simulated, and failed with no word on the size.
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if 16 * n0 * n1 > memory:
        raise PetacommError(
            f"--size: {text} float64 elements, in and out, take {16 * n0 * n1 / 2**30:.3g} GiB, "
            f"more than this machine's {memory / 2**30:.3g} GiB"
        )
    return {"n0": n0, "n1": n1}


def _transpose_prepare(
    work: Path, ranks: int, size: dict, variant: str, reps: int, platform=None
) -> list[str]:
    return ["petacomm-transpose-bench", str(size["n0"]), str(size["n1"]), str(reps), variant]


def _transpose_parse(stdout: str, work: Path) -> dict:
    row = _result_line(stdout, "TRANSPOSESMPI")
    if row["errors"]:
        raise PetacommError(
            f"transpose {row['strategy']}: {row['errors']} wrong elements in the result"
        )
    return {"chosen": row["chosen"], "simulated_time_s": row["seconds"], "bytes": row["bytes"]}


def _transpose_block_bytes(ranks: int, size: dict) -> int:
    """Bytes of the block every rank sends every other (float64 elements)."""
    return (size["n0"] // ranks) * (size["n1"] // ranks) * 8


def _transpose_flows(ranks: int, size: dict, variant: str) -> float | None:
    """Blocks in flight at once when SMPI's MPI_Alltoall (default selector) sends them all
    together (its linear algorithm); None for the round-by-round exchanges."""
    if variant != "alltoall" or ranks < 2:
        return None
    if smpi_alltoall_algorithm(ranks, _transpose_block_bytes(ranks, size)) != "linear":
        return None
    return float(ranks * (ranks - 1))


def _transpose_work(ranks: int, size: dict, variant: str, reps: int) -> tuple[float, float]:
    """(messages, bytes) of one run: every rank sends a block to every other per execution."""
    return (reps + 1) * ranks * max(ranks - 1, 1), (reps + 1) * 8.0 * size["n0"] * size["n1"]


# ---- halo exchanges: petacomm-halo on a logical grid (study 3) -----------------------------
_HALO_JSON = "halo.json"


def _halo_size(text: str) -> dict:
    from petacomm.units import parse_size

    parts = text.split(":")
    if len(parts) != 3 or parts[0] not in ("1", "2", "3") or parts[1] not in ("star", "box"):
        raise ValueError(f"expected DIMS:STENCIL:BYTES such as 2:star:64KiB, got {text!r}")
    nbytes = parse_size(parts[2])
    if nbytes < 1 or nbytes != int(nbytes):
        raise ValueError(f"expected a whole number of bytes >= 1, got {parts[2]!r}")
    if nbytes > HALO_MAX_MESSAGE:  # 1e308 overflowed the time estimate (a traceback)
        raise ValueError(
            f"BYTES: at most {HALO_MAX_MESSAGE >> 20} MiB per face (petacomm-halo's largest), "
            f"got {parts[2]!r}"
        )
    return {"dims": int(parts[0]), "stencil": parts[1], "bytes": int(nbytes)}


def _halo_prepare(
    work: Path, ranks: int, size: dict, variant: str, reps: int, platform=None
) -> list[str]:
    (work / _HALO_JSON).unlink(missing_ok=True)
    return [
        "petacomm-halo",
        "--dims",
        str(size["dims"]),
        "--stencil",
        size["stencil"],
        "--sizes",
        str(size["bytes"]),
        "--variants",
        variant,
        "-i",
        str(reps),
        "-x",
        "1",
        "--json",
        str(work / _HALO_JSON),
    ]


def _halo_parse(stdout: str, work: Path) -> dict:
    try:
        doc = json.loads((work / _HALO_JSON).read_text())
        (config,) = doc["configurations"]
        (row,) = config["results"]
    except (OSError, ValueError, KeyError) as err:
        raise PetacommError(f"petacomm-halo wrote no usable {_HALO_JSON}: {err}") from None
    return {
        "chosen": row["variant"],
        **_exchange_times(row, "petacomm-halo"),
        "bytes": row["bytes"],
        "messages_per_exchange": config["messages_per_exchange"],
        "pattern": row["pattern"],
    }


def _exchange_times(row: dict, program: str) -> dict:
    """A timed exchange's figures, seconds. The simulated time runs from the last rank's
    start to the last rank's end (SMPI's clock is global): the ranks leave the barrier before
    each exchange ~50 us apart at 1,024 ranks, and the slowest rank's own time counts its
    wait for later partners (2 % on a 2-D halo, by mapping). That one is kept beside it."""
    if row.get("span_us") is None:
        raise PetacommError(f"{program} did not time on a global clock (MPI_WTIME_IS_GLOBAL)")
    return {
        "simulated_time_s": row["span_us"] * 1e-6,
        "slowest_rank_time_s": row["max_us"] * 1e-6,
        "average_time_s": row["avg_us"] * 1e-6,
        "start_spread_s": row["start_spread_us"] * 1e-6,
    }


def _halo_work(ranks: int, size: dict, variant: str, reps: int) -> tuple[float, float]:
    faces = 2 * size["dims"] if size["stencil"] == "star" else 3 ** size["dims"] - 1
    messages = (reps + 1) * ranks * faces
    return messages, messages * size["bytes"]


# ---- irregular graphs: petacomm-graph runs a traffic matrix (the mapping benchmark's graphs) -
_GRAPH_JSON = "graph.json"


def _graph_size(text: str) -> dict:
    """``NAME[:SEED]`` of a benchmark graph (``petacomm.topology.irregular_graphs``), or the
    path of a matrix file (.csv/.npy, as ``petacomm map --matrix`` reads)."""
    from petacomm.topology.irregular_graphs import GRAPHS

    name, sep, seed = text.partition(":")
    if name in GRAPHS:
        if sep and not is_whole_number(seed):
            raise ValueError(f"expected NAME[:SEED] with SEED a whole number, got {text!r}")
        return {"graph": name, "seed": int(seed) if sep else 0}
    path = Path(text)
    if path.suffix.lower() not in (".csv", ".npy"):
        raise ValueError(
            f"expected a graph name ({', '.join(GRAPHS)}, optionally :SEED) or a matrix file "
            f"(.csv or .npy), got {text!r}"
        )
    if not path.is_file():
        raise ValueError(f"matrix file {text!r} not found")
    return {"matrix": str(path.resolve())}


def _graph_traffic(size: dict) -> str:
    if "graph" in size:
        return f"graph {size['graph']} seed={size['seed']}"
    return f'matrix "{size["matrix"]}"'


def _graph_pattern(ranks: int, size: dict) -> str:
    """The run's traffic in petacomm map's pattern language."""
    return f"ranks {ranks}; {_graph_traffic(size)}"


def _graph_run_pattern(ranks: int, size: dict, variant: str, options) -> str:
    """What petacomm-graph runs, for --predict: the last exchange and the barrier before
    the clock (untimed; each rank leaves the barrier when it is done, and starts the timed
    exchange as it leaves), then the exchange; without a barrier algorithm petacomm models,
    the exchange alone."""
    traffic = _graph_traffic(size)
    barrier = smpi_barrier_algorithm(ranks, options)
    if barrier is None:
        return f"ranks {ranks}; {traffic}"
    return (
        f"ranks {ranks}; phase last untimed nobarrier; {traffic}; phase start untimed; "
        f"barrier {barrier}; phase exchange nobarrier; {traffic}"
    )


def _graph_of(ranks: int, size: dict):
    """The CommPattern of a run; PetacommError naming --size when the graph cannot be built
    (a matrix file that does not read, a graph on fewer ranks than it needs)."""
    from petacomm.topology.pattern_language import PatternSyntaxError

    what = size.get("matrix") or size["graph"]
    try:
        pattern = _parsed_pattern(_graph_pattern(ranks, size))
    except PatternSyntaxError as err:
        # The statement is ours, built from --size: say what is wrong with the user's input.
        detail = err.got if err.expected.startswith("a valid") else f"expected {err.expected}"
        raise PetacommError(f"--size {what!r} on {ranks} ranks: {detail}") from None
    # What petacomm-graph sends, checked before SimGrid starts: one message per pair of
    # ranks, of an int count of bytes (a rounded 1e19 had wrapped to a 0-byte message).
    src, dst, nbytes = pattern.edges()
    if src.size == 0:
        raise PetacommError(f"--size {what!r} on {ranks} ranks: no bytes between two ranks")
    largest = int(nbytes.argmax())
    if nbytes[largest] > _INT_MAX:
        raise PetacommError(
            f"--size {what!r}: {nbytes[largest]:.6g} bytes from rank {src[largest]} to "
            f"{dst[largest]} exceed one MPI message's int count ({_INT_MAX})"
        )
    return pattern


_INT_MAX = 2**31 - 1


@functools.lru_cache(maxsize=1)
def _parsed_pattern(text: str):
    """Kept for the next call: the mappings of a sweep run the same graph."""
    from petacomm.topology.pattern_language import parse_pattern

    return parse_pattern(text)


def _graph_prepare(
    work: Path, ranks: int, size: dict, variant: str, reps: int, platform=None
) -> list[str]:
    from petacomm.topology.irregular_graphs import write_matrix_csv

    (work / _GRAPH_JSON).unlink(missing_ok=True)
    matrix = work / f"graph-p{ranks}.csv"
    write_matrix_csv(_graph_of(ranks, size), matrix, "--size")
    json_file = str(work / _GRAPH_JSON)
    return [
        "petacomm-graph",
        "--matrix",
        str(matrix),
        "-i",
        str(reps),
        "-x",
        "1",
        "--json",
        json_file,
    ]


def _graph_parse(stdout: str, work: Path) -> dict:
    try:
        doc = json.loads((work / _GRAPH_JSON).read_text())
        return {
            "chosen": "nonblocking",
            **_exchange_times(doc, "petacomm-graph"),
            "bytes": doc["bytes_per_exchange"],
            "messages_per_exchange": doc["messages_per_exchange"],
        }
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise PetacommError(f"petacomm-graph wrote no usable {_GRAPH_JSON}: {err}") from None


def _graph_work(ranks: int, size: dict, variant: str, reps: int) -> tuple[float, float]:
    src, _, nbytes = _graph_of(ranks, size).edges()
    return (reps + 1) * src.size, (reps + 1) * float(nbytes.sum())


def _graph_flows(ranks: int, size: dict, variant: str) -> float:
    """petacomm-graph posts every message of the exchange at once: all are in flight."""
    return float(_graph_of(ranks, size).edges()[0].size)


# petacomm-graph only sends: SMPI copies the payload and nothing packs it. Fitted with the
# set build (one mapping, one repetition, torus:4x8x8): rgg's 1 MiB messages, 1.1 s at 256
# ranks (5.8 GB sent) and 26.0 s at 1024 (24.5 GB), where SECONDS_PER_BYTE said 58 and 245 s.
GRAPH_SECONDS_PER_BYTE = 0.3e-9


# ---- Sweep3D: KBA wavefront weak scaling (study 5) -----------------------------------------
_SWEEP_JSON = "sweep3d.json"
_SWEEP_ANGLES, _SWEEP_MMI = 6, 3  # petacomm-sweep3d's defaults: two angle blocks per octant


def _sweep_size(text: str) -> dict:
    cells, sep, mk_text = text.lower().partition(":")
    parts = cells.split("x")
    try:
        nx, ny, k = (decimal_int(p) for p in parts) if len(parts) == 3 else (0, 0, 0)
        mk = decimal_int(mk_text) if sep else 0
    except ValueError:
        nx = ny = k = mk = 0
    if min(nx, ny, k, mk) < 1 or k % mk:
        raise ValueError(
            f"expected NXxNYxK:MK (cells per rank, K planes in blocks of MK; MK divides K), "
            f"e.g. 8x8x32:4, got {text!r}"
        )
    return {"nx": nx, "ny": ny, "k": k, "mk": mk}


def sweep_process_grid(ranks: int) -> tuple[int, int]:
    """petacomm-sweep3d's --procs auto: the Px x Py = ranks with the fewest pipeline fill
    stages 2(Px-1) + 4(Py-1), ties to the larger Px."""
    grids = [(px, ranks // px) for px in range(1, ranks + 1) if ranks % px == 0]
    return min(grids, key=lambda g: (2 * (g[0] - 1) + 4 * (g[1] - 1), -g[0]))


def _sweep_prepare(
    work: Path, ranks: int, size: dict, variant: str, reps: int, platform=None
) -> list[str]:
    """Weak scaling: every rank keeps NX x NY columns of K cells, the global grid grows with
    the process grid. The pipeline model prices a face as one message over one link of the
    simulated machine (its latency and bandwidth): the nearest-neighbour case."""
    (work / _SWEEP_JSON).unlink(missing_ok=True)
    px, py = sweep_process_grid(ranks)
    argv = ["petacomm-sweep3d", "--grid", f"{px * size['nx']}x{py * size['ny']}x{size['k']}"]
    argv += ["--procs", f"{px}x{py}", "--mk", str(size["mk"]), "--transport", variant]
    argv += ["--iterations", str(max(1, reps)), "--quiet", "--json", str(work / _SWEEP_JSON)]
    if platform is not None:
        link = platform.link
        argv += ["--message-cost", f"0:{link.latency!r}:{1.0 / link.bandwidth!r}"]
    return argv


def _sweep_parse(stdout: str, work: Path) -> dict:
    try:
        doc = json.loads((work / _SWEEP_JSON).read_text())
        (case,) = doc["cases"]
        model = case["model"]
        grid = doc["problem"]["grid"]
    except (OSError, ValueError, KeyError) as err:
        raise PetacommError(f"petacomm-sweep3d wrote no usable {_SWEEP_JSON}: {err}") from None
    return {
        "chosen": "x".join(str(n) for n in case["procs"]),
        # The slowest rank's time per source iteration (sweep of 8 octants + allreduce).
        "simulated_time_s": case["time_per_iteration_s"],
        "predicted_time_s": model["predicted_s"],
        "prediction": "pipeline model",
        "grid": grid,
        "procs": case["procs"],
        "iterations": case["iterations"],
        "messages_per_iteration": case["messages_per_iteration"],
        "bytes_per_iteration": case["bytes_per_iteration"],
        "fill_stages": model["fill_stages"],
        "steady_stages": model["steady_stages"],
        "block_compute_s": model["block_compute_s"],
        "sweep3d_pipeline_efficiency": model["sweep3d_pipeline_efficiency"],
    }


def sweep_faces_per_iteration(ranks: int, size: dict) -> int:
    """Faces sent per source iteration by all ranks: every block of every octant sends its x
    face unless on the last column and its y face unless on the last row."""
    px, py = sweep_process_grid(ranks)
    blocks = (_SWEEP_ANGLES // _SWEEP_MMI) * (size["k"] // size["mk"])
    return 8 * blocks * ((px - 1) * py + px * (py - 1))


def _sweep_work(ranks: int, size: dict, variant: str, reps: int) -> tuple[float, float]:
    faces = max(1, reps) * sweep_faces_per_iteration(ranks, size)
    face_bytes = 8 * size["mk"] * _SWEEP_MMI * max(size["nx"], size["ny"])
    return faces, faces * face_bytes


# Every collective call of petacomm agrees on its arguments first: one MPI_Allreduce (MIN)
# of three uint64 (native/src/core/agreement.cpp); the benchmark drivers reduce their three
# timings (MAX of three doubles) after every repetition, then enter a barrier and start the
# clock.
_AGREEMENT_BYTES = 24


def _before_the_clock(ranks: int, options) -> str:
    """What runs before a driver's clock starts, as an untimed phase: the last repetition's
    timing reduction and the barrier, whose ranks leave at different times (the rounds
    after them start rank by rank); the part SMPI runs in an algorithm petacomm does not
    model is left out."""
    steps = []
    reduction = smpi_allreduce_algorithm(ranks, _AGREEMENT_BYTES, options)
    barrier = smpi_barrier_algorithm(ranks, options)
    if reduction is not None and barrier is not None:
        steps.append(f"allreduce {_AGREEMENT_BYTES}B {reduction}")
    if barrier is not None:
        steps.append(f"barrier {barrier}")
    return f"phase start untimed; {'; '.join(steps)}; " if steps else ""


def _transpose_pattern(ranks: int, size: dict, variant: str, options) -> str | None:
    """Before the clock (:func:`_before_the_clock`), the execution's agreement (an allreduce
    of 24 B, in the algorithm SMPI runs; left out when that is one petacomm does not model),
    then every rank's block to every other in the variant's rounds: petacomm's xor and
    pairwise schedules, and for MPI_Alltoall the algorithm SMPI runs."""
    if ranks < 2 or size["n0"] % ranks or size["n1"] % ranks:
        return None
    block = _transpose_block_bytes(ranks, size)
    if variant == "xor" and ranks & (ranks - 1):
        return None  # the strategy refuses such counts
    algorithm = {"xor": "xor", "pairwise": "pairwise"}.get(variant)
    if algorithm is None:
        algorithm = smpi_alltoall_algorithm(ranks, block, options)
    if algorithm is None:
        return None
    exchange = f"alltoall {block}B {algorithm}"
    agreement = smpi_allreduce_algorithm(ranks, _AGREEMENT_BYTES, options)
    start = _before_the_clock(ranks, options)
    if agreement is None:
        return f"ranks {ranks}; {start}phase exchange; {exchange}"
    return (
        f"ranks {ranks}; {start}phase agreement; allreduce {_AGREEMENT_BYTES}B {agreement}; "
        f"phase exchange; {exchange}"
    )


PRESETS = {
    "sparse-reduce": Preset(
        name="sparse-reduce",
        family="xchg",
        summary="sparse key/value reduction strategies on CMB-like keys (study 1): one "
        "in-place sum of a float64 per key",
        families=("xchg",),
        program="petacomm-xchg-setup-bench",
        network="torus:8x8x16",
        machine="xt4",
        ranks="64,256",
        full_ranks="256,1024,4096",
        variants=("dense-allreduce", "allgather", "directory", "auto"),
        size="64:1048576",
        full_size="128:4194304",
        size_help="NSIDE:TOTAL_SAMPLES of the CMB scan (HEALPix nside; samples split over "
        "the ranks)",
        variant_names=_xchg_variants,
        variant_name=lambda variant: _sparse_variant(variant)[0],
        variant_form="NAME:wN",
        parse_size=_sparse_size,
        check_size=_sparse_keys_fit,
        prepare=_sparse_prepare,
        parse=_sparse_parse,
        work=_sparse_work,
        flows=_sparse_flows,
        overlap=_sparse_overlap,
        # directory's executions exchange every pair of a key's holders (d(d-1) values per
        # key: an all-to-all among them) and its runs grow as an all-to-all's do; owner's,
        # with the same discovery, as a sparse exchange (measured: petacomm.sim.cli).
        dense_variants=("directory",),
    ),
    "mapmaker": Preset(
        name="mapmaker",
        family="mapmaker",
        summary="CMB map-maker PCG iterations (study 1): petacomm-mapmaker's solve, one "
        "sparse reduction of 3 float64 per pixel and three allreduces per iteration",
        families=("xchg",),
        program="petacomm-mapmaker",
        network="torus:8x8x16",
        machine="xt4",
        ranks="16,64",
        full_ranks="256,1024",
        variants=("dense-allreduce", "directory", "owner", "auto"),
        size="32:200000",
        full_size="128:4000000",
        size_help="NSIDE:SAMPLES (HEALPix nside; samples per detector, 4 detectors, split "
        "over the ranks in time order)",
        variant_names=_xchg_variants,
        parse_size=_mapmaker_size,
        prepare=_mapmaker_prepare,
        parse=_mapmaker_parse,
        work=_mapmaker_work,
    ),
    "transpose": Preset(
        name="transpose",
        family="transpose",
        summary="distributed slab transpose strategies (study 4): one forward transpose of "
        "an N0 x N1 float64 array",
        families=("transpose",),
        program="petacomm-transpose-bench",
        network="torus:4x8x8",
        machine="xt4",
        ranks="64,256",
        full_ranks="256,1024",
        variants=("xor", "alltoall", "pairwise"),
        size="2048x2048",
        full_size="8192x8192",
        size_help="N0xN1 float64 elements",
        variant_names=_transpose_variants,
        parse_size=_transpose_size,
        prepare=_transpose_prepare,
        parse=_transpose_parse,
        work=_transpose_work,
        pattern=_transpose_pattern,
        flows=_transpose_flows,
        dense_variants=("alltoall",),
    ),
    "halo": Preset(
        name="halo",
        family="halo",
        summary="halo exchange of petacomm-halo on an MPI_Dims_create grid (study 3): one "
        "exchange of every face",
        families=(),
        program="petacomm-halo",
        network="torus:4x8x8",
        machine="bgp",
        ranks="256",
        full_ranks="1024",
        variants=("nonblocking",),
        size="2:star:64KiB",
        full_size="2:star:1MiB",
        size_help="DIMS:STENCIL:BYTES (grid dimensionality, star or box, bytes per face)",
        # petacomm-halo's strategies that run under SMPI: SimGrid 3.32 lacks the neighbourhood
        # collectives, and the SMPI build has no node family (node.h) for "node"
        variant_names=lambda: ("sendrecv", "nonblocking", "persistent"),
        parse_size=_halo_size,
        prepare=_halo_prepare,
        parse=_halo_parse,
        work=_halo_work,
    ),
    "graph": Preset(
        name="graph",
        family="mapping",
        summary="an irregular graph's messages as one phase (the mapping benchmark's graphs "
        "or a traffic matrix): petacomm-graph posts every message at once",
        families=(),
        program="petacomm-graph",
        network="torus:4x8x8",
        machine="bgp",
        ranks="256",
        full_ranks="1024",
        variants=("nonblocking",),
        size="delaunay",
        full_size="delaunay",
        size_help="a graph of petacomm.topology.irregular_graphs, NAME[:SEED] (rgg, delaunay, "
        "cmb), or a traffic matrix file (.csv/.npy)",
        variant_names=lambda: ("nonblocking",),  # petacomm-graph exchanges one way only
        parse_size=_graph_size,
        prepare=_graph_prepare,
        parse=_graph_parse,
        work=_graph_work,
        pattern=_graph_run_pattern,
        flows=_graph_flows,
        dense_variants=("nonblocking",),
        seconds_per_byte=GRAPH_SECONDS_PER_BYTE,
    ),
    "sweep3d": Preset(
        name="sweep3d",
        family="sweep3d",
        summary="Sweep3D KBA wavefront weak scaling (study 5): source iterations of "
        "petacomm-sweep3d, NX x NY columns per rank, against its pipeline model",
        families=(),
        program="petacomm-sweep3d",
        network="torus:8x8x16",
        machine="xt4",
        ranks="16,64",
        full_ranks="256,1024,4096",
        variants=("nonblocking", "blocking"),
        size="8x8x32:4",
        full_size="16x16x64:8",
        size_help="NXxNYxK:MK (cells per rank; K planes swept in blocks of MK)",
        # petacomm-sweep3d's transports but "node": the SMPI build has no node family
        variant_names=lambda: tuple(t for t in SWEEP3D_TRANSPORTS if t != "node"),
        parse_size=_sweep_size,
        prepare=_sweep_prepare,
        parse=_sweep_parse,
        work=_sweep_work,
        # The pipeline is compute and faces: petacomm-sweep3d charges every block the
        # calibrated block's seconds itself (smpi_execute), whatever --network-model says;
        # the host's computation is not timed under any model (it made simulated times
        # vary by 2x between runs).
        # smpi/cpu-threshold: SMPI drops executions under 1 us by default, and a block of
        # a small size is less.
        smpi_options=("--cfg=smpi/simulate-computation:no", "--cfg=smpi/cpu-threshold:0"),
    ),
}
