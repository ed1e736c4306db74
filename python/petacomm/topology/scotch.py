"""Scotch as an optional mapping backend: its library through ctypes, and its ``gmap`` command.

`Scotch <https://gitlab.inria.fr/scotch/scotch>`_ (Debian packages ``libscotch-dev`` and
``scotch``) maps a weighted graph onto a target architecture by dual recursive
bipartitioning. :func:`scotch_placement` calls ``libscotch`` directly (``SCOTCH_graphBuild``,
``SCOTCH_archTorusX`` / ``SCOTCH_archMeshX`` / ``SCOTCH_archTleaf``,
``SCOTCH_stratGraphMapBuild`` with strict balance, ``SCOTCH_graphMap``) and returns the node
of every rank. The target is the network's nodes, each holding ``cores_per_node`` ranks:

* torus (every dimension wraps): ``torusXD``; mesh (none wraps): ``meshXD``; Scotch numbers
  their vertices with the first dimension fastest, as petacomm does;
* fat tree: ``tleaf`` with one level per tree level, the cost of crossing level l being
  the 2 l hops of a path through it;
* others (dragonfly, tori with some dimensions open) have no Scotch target: ValueError.

Scotch needs integer edge weights: bytes are scaled so that the smallest edge weighs 1
(or, when the range is too wide for Scotch's 32-bit integers, so that the total stays
below 2**30 and small edges round up to 1). Scotch balances the ranks over the nodes; a
node it leaves over-full (possible when it cannot balance exactly) is emptied onto the
nearest nodes with room, the ranks whose move costs least first.

:func:`run_gmap` drives the ``gmap`` command (``scotch_gmap`` on Debian) on graph and
target files instead, for benchmarks that time the command as a user runs it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from petacomm.topology.mapping import Mapping
from petacomm.topology.network import FatTreeNetwork, TorusNetwork

# Scotch's default strategy flags (SCOTCH_STRATDEFAULT), its context options that make a
# run reproducible (SCOTCH_OPTIONNUMDETERMINISTIC, SCOTCH_OPTIONNUMRANDOMFIXEDSEED) and its
# libraries' names.
_STRAT_DEFAULT = 0
_STRAT_QUALITY = 1  # SCOTCH_STRATQUALITY: more refinement for a better mapping, slower
_OPTION_DETERMINISTIC = 0
_OPTION_RANDOM_FIXED_SEED = 1
_LIBRARY_NAMES = ("scotch", "scotch-7.0")
_MAX_TOTAL_WEIGHT = 2**30
GMAP_COMMANDS = ("scotch_gmap", "gmap")
# petacomm's refinement of Scotch's mapping (scotch_mapping): at most this many passes of
# hop-bytes moves and swaps, then this many changes relieving the busiest link. Limits of
# work, not of time, so the same graph, network and seed give the same mapping on any
# machine at any load: with the earlier limit of 0.3x Scotch's time, three runs in a row
# on rgg gave three mappings. One pass and one change keep a single use within about 2x
# Scotch's time on the benchmark's three 1,024-rank graphs (bench map, three runs:
# 1.67-1.83x rgg, 1.74-1.83x delaunay, 1.87-2.01x cmb; two passes: 1.81x, 2.11x, 2.01x)
# and beat Scotch's quality strategy on hop-bytes and on the busiest link on all three
# (0.972x / 0.931x, 0.989x / 0.884x, 0.998x / 0.982x Scotch's default). With two passes
# and no change on the busiest link, rgg kept Scotch's own placement: the passes had
# loaded its busiest link more.
REFINE_PASSES = 1
REFINE_STEPS = 1


class ScotchError(RuntimeError):
    """Scotch is missing or one of its calls failed."""


@functools.lru_cache(maxsize=1)
def _library():
    """The loaded libscotch (its error printer, libscotcherr, is a dependency of the
    Debian build, so Scotch reports errors on stderr and returns instead of exiting)."""
    for name in _LIBRARY_NAMES:
        lib, path = _open(name)
        if lib is None:
            continue
        if lib.SCOTCH_numSizeof() != 4:
            raise ScotchError(
                f"{path}: SCOTCH_Num is {lib.SCOTCH_numSizeof()} bytes; this binding expects "
                "the 32-bit build (Debian's libscotch)"
            )
        _declare(lib)
        return lib
    raise ScotchError("Scotch library not found (install the Debian package libscotch-dev)")


def _open(name: str):
    """(library, path) of lib<name>, or (None, None): dlopen finds ``lib<name>.so`` through
    the loader's cache at once; ``find_library`` (which runs ldconfig or the compiler, 20-25
    ms) is asked only when it does not."""
    path = f"lib{name}.so"
    try:
        return ctypes.CDLL(path), path
    except OSError:
        pass
    path = ctypes.util.find_library(name)
    if path is None:
        return None, None
    try:
        return ctypes.CDLL(path), path
    except OSError:
        return None, None


def _declare(lib) -> None:
    ptr, num, numarray = ctypes.c_void_p, ctypes.c_int, np.ctypeslib.ndpointer(np.int32)
    signatures = {
        "SCOTCH_graphAlloc": ([], ptr),
        "SCOTCH_graphInit": ([ptr], num),
        "SCOTCH_graphExit": ([ptr], None),
        "SCOTCH_graphBuild": (
            [ptr, num, num, numarray, numarray, ptr, ptr, num, numarray, numarray],
            num,
        ),
        "SCOTCH_graphCheck": ([ptr], num),
        "SCOTCH_archAlloc": ([], ptr),
        "SCOTCH_archInit": ([ptr], num),
        "SCOTCH_archExit": ([ptr], None),
        "SCOTCH_archTorusX": ([ptr, num, numarray], num),
        "SCOTCH_archMeshX": ([ptr, num, numarray], num),
        "SCOTCH_archTleaf": ([ptr, num, numarray, numarray], num),
        "SCOTCH_archSize": ([ptr], num),
        "SCOTCH_stratAlloc": ([], ptr),
        "SCOTCH_stratInit": ([ptr], num),
        "SCOTCH_stratExit": ([ptr], None),
        "SCOTCH_stratGraphMapBuild": ([ptr, num, num, ctypes.c_double], num),
        "SCOTCH_graphMap": ([ptr, ptr, ptr, numarray], num),
        "SCOTCH_contextAlloc": ([], ptr),
        "SCOTCH_contextInit": ([ptr], num),
        "SCOTCH_contextExit": ([ptr], None),
        "SCOTCH_contextOptionSetNum": ([ptr, ctypes.c_int, num], num),
        "SCOTCH_contextRandomSeed": ([ptr, num], None),
        "SCOTCH_contextBindGraph": ([ptr, ptr, ptr], num),
        "SCOTCH_memFree": ([ptr], None),
        "SCOTCH_version": (
            [ctypes.POINTER(num), ctypes.POINTER(num), ctypes.POINTER(num)],
            None,
        ),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = result


def scotch_available() -> bool:
    """True when libscotch can be loaded."""
    try:
        _library()
    except ScotchError:
        return False
    return True


def scotch_version() -> str:
    lib = _library()
    parts = [ctypes.c_int() for _ in range(3)]
    lib.SCOTCH_version(*(ctypes.byref(p) for p in parts))
    return ".".join(str(p.value) for p in parts)


def target_description(network) -> tuple[str, list[int], list[int]]:
    """(Scotch architecture kind, its sizes, its link costs) for the network's nodes
    (module docstring); ValueError when Scotch has no such target."""
    if isinstance(network, TorusNetwork):
        if all(network.wrap):
            return "torusXD", list(network.dims), []
        if not any(network.wrap):
            return "meshXD", list(network.dims), []
        raise ValueError(
            "scotch: no Scotch target for a torus whose dimensions do not all wrap "
            f"({network.to_text()})"
        )
    if isinstance(network, FatTreeNetwork):
        # tleaf levels go from the root down; leaves are numbered with the first level's
        # digit slowest, as petacomm numbers fat-tree nodes (first DOWN fastest).
        sizes = list(reversed(network.down))
        costs = [2 * level for level in range(network.levels, 0, -1)]
        return "tleaf", sizes, costs
    raise ValueError(f"scotch: no Scotch target for a {network.kind} network")


def integer_weights(graph: sp.csr_matrix) -> np.ndarray:
    """Scotch's integer edge weights for a graph of bytes (module docstring)."""
    data = np.asarray(graph.data, dtype=np.float64)
    if data.size == 0:
        return np.zeros(0, dtype=np.int32)
    scale = 1.0 / float(data.min())
    if float(data.sum()) * scale > _MAX_TOTAL_WEIGHT:
        scale = _MAX_TOTAL_WEIGHT / float(data.sum())
    return np.maximum(1, np.rint(data * scale)).astype(np.int32)


def _symmetric(graph) -> sp.csr_matrix:
    g = sp.csr_matrix(graph, dtype=np.float64)
    from petacomm.topology.multilevel import without_diagonal

    g = (g + g.T).tocsr() * 0.5 if (g != g.T).nnz else g
    return without_diagonal(g)


def scotch_graph(graph) -> tuple[sp.csr_matrix, np.ndarray]:
    """The graph as Scotch takes it: symmetric bytes without self edges, and its integer
    edge weights (what :func:`scotch_placement` prepares; a caller timing Scotch alone
    prepares it first, as ``gmap`` reads a graph file already in that form)."""
    g = _symmetric(graph)
    return g, integer_weights(g)


def scotch_placement(
    graph, network, seed: int = 0, prepared=None, quality: bool = False
) -> np.ndarray:
    """Node of every rank as Scotch maps the symmetric bytes ``graph`` onto ``network``
    (module docstring); ``prepared``: :func:`scotch_graph` of it, if already made;
    ``quality``: Scotch's quality strategy (SCOTCH_STRATQUALITY) instead of its default.
    Raises ValueError for a network Scotch cannot describe and ScotchError when Scotch is
    missing or fails."""
    from petacomm.topology.mapping import check_rank_count

    g, weights = scotch_graph(graph) if prepared is None else prepared
    n = g.shape[0]
    check_rank_count(n, network)
    kind, sizes, costs = target_description(network)
    lib = _library()
    verttab = np.ascontiguousarray(g.indptr, dtype=np.int32)
    edgetab = np.ascontiguousarray(g.indices, dtype=np.int32)
    parttab = np.zeros(n, dtype=np.int32)
    graph_p = lib.SCOTCH_graphAlloc()
    bound_p = lib.SCOTCH_graphAlloc()
    arch_p = lib.SCOTCH_archAlloc()
    strat_p = lib.SCOTCH_stratAlloc()
    context_p = lib.SCOTCH_contextAlloc()
    allocated = [p for p in (graph_p, bound_p, arch_p, strat_p, context_p) if p]
    built = []
    try:
        if len(allocated) != 5:
            raise ScotchError("scotch: out of memory allocating the graph, target or strategy")
        _check(lib.SCOTCH_graphInit(graph_p), "SCOTCH_graphInit")
        built.append(lambda: lib.SCOTCH_graphExit(graph_p))
        _check(
            lib.SCOTCH_graphBuild(
                graph_p, 0, n, verttab, verttab[1:], None, None, int(g.nnz), edgetab, weights
            ),
            "SCOTCH_graphBuild",
        )
        # A context with a fixed seed and no thread-timing dependence: the same graph and
        # seed give the same mapping.
        _check(lib.SCOTCH_contextInit(context_p), "SCOTCH_contextInit")
        built.append(lambda: lib.SCOTCH_contextExit(context_p))
        for option in (_OPTION_DETERMINISTIC, _OPTION_RANDOM_FIXED_SEED):
            _check(lib.SCOTCH_contextOptionSetNum(context_p, option, 1), "SCOTCH_contextOption")
        lib.SCOTCH_contextRandomSeed(context_p, int(seed))
        _check(lib.SCOTCH_graphInit(bound_p), "SCOTCH_graphInit")
        built.append(lambda: lib.SCOTCH_graphExit(bound_p))
        _check(lib.SCOTCH_contextBindGraph(context_p, graph_p, bound_p), "SCOTCH_contextBindGraph")
        _check(lib.SCOTCH_archInit(arch_p), "SCOTCH_archInit")
        built.append(lambda: lib.SCOTCH_archExit(arch_p))
        dims = np.asarray(sizes, dtype=np.int32)
        if kind == "torusXD":
            _check(lib.SCOTCH_archTorusX(arch_p, dims.size, dims), "SCOTCH_archTorusX")
        elif kind == "meshXD":
            _check(lib.SCOTCH_archMeshX(arch_p, dims.size, dims), "SCOTCH_archMeshX")
        else:
            link = np.asarray(costs, dtype=np.int32)
            _check(lib.SCOTCH_archTleaf(arch_p, dims.size, dims, link), "SCOTCH_archTleaf")
        if lib.SCOTCH_archSize(arch_p) != network.num_nodes:
            raise ScotchError(
                f"scotch: the target has {lib.SCOTCH_archSize(arch_p)} vertices, the network "
                f"{network.num_nodes} nodes"
            )
        _check(lib.SCOTCH_stratInit(strat_p), "SCOTCH_stratInit")
        built.append(lambda: lib.SCOTCH_stratExit(strat_p))
        _check(
            lib.SCOTCH_stratGraphMapBuild(
                strat_p, _STRAT_QUALITY if quality else _STRAT_DEFAULT, network.num_nodes, 0.0
            ),
            "SCOTCH_stratGraphMapBuild",
        )
        _check(lib.SCOTCH_graphMap(bound_p, arch_p, strat_p, parttab), "SCOTCH_graphMap")
    finally:
        for release in reversed(built):
            release()
        for p in allocated:
            lib.SCOTCH_memFree(p)
    # Target vertices are numbered like petacomm's nodes (module docstring).
    return _empty_overfull_nodes(parttab.astype(np.int64), g, network)


def _busiest_link(pattern, network, routing, node) -> float:
    """Bytes on the most loaded link with the ranks on ``node``, as the candidates'
    evaluation routes them (``metrics.evaluate_mapping``)."""
    from petacomm.topology.metrics import evaluate_mapping
    from petacomm.topology.multilevel import cores_in_rank_order

    placed = Mapping("placed", node, cores_in_rank_order(node))
    return evaluate_mapping(network, routing, pattern, placed).max_link_bytes


class _Beside:
    """``function(*args)`` run in a thread of its own; :meth:`result` waits for it and
    returns its value or raises its exception."""

    def __init__(self, function, *args):
        import threading

        self._value = self._error = None
        self._thread = threading.Thread(target=self._run, args=(function, *args), daemon=True)
        self._thread.start()

    def _run(self, function, *args):
        try:
            self._value = function(*args)
        except BaseException as err:  # handed to the caller by result()
            self._error = err

    def join(self) -> None:
        self._thread.join()

    def result(self):
        self.join()
        if self._error is not None:
            raise self._error
        return self._value


def _check(code: int, call: str) -> None:
    if code != 0:
        raise ScotchError(f"scotch: {call} failed (error {code}; Scotch printed why on stderr)")


def _empty_overfull_nodes(node: np.ndarray, graph: sp.csr_matrix, network) -> np.ndarray:
    """Moves ranks off nodes holding more than ``cores_per_node`` of them (module doc)."""
    counts = np.bincount(node, minlength=network.num_nodes)
    if counts.max(initial=0) <= network.cores_per_node:
        return node
    from petacomm.topology.multilevel import (
        MultilevelStats,
        _Level,
        _Refiner,
        machine_hierarchy,
    )

    hier = machine_hierarchy(network)
    group_of_node = hier.group[hier.depth]
    level = _Level(graph, np.ones(node.size), depth=hier.depth)
    refiner = _Refiner(level, hier, hier.depth, group_of_node[node])
    refiner.rebalance(MultilevelStats())
    node_of_group = np.empty(network.num_nodes, dtype=np.int64)
    node_of_group[group_of_node] = np.arange(network.num_nodes)
    return node_of_group[refiner.group]


# ---- the gmap command -----------------------------------------------------------------------


def gmap_command() -> str | None:
    """Path of Scotch's gmap command, or None."""
    for name in GMAP_COMMANDS:
        found = shutil.which(name)
        if found:
            return found
    return None


def write_graph_file(path, graph) -> None:
    """Writes the graph in Scotch's source graph format (edge weights, no vertex weights)."""
    g = _symmetric(graph)
    weights = integer_weights(g)
    lines = ["0", f"{g.shape[0]} {g.nnz}", "0 010"]
    indptr, indices = g.indptr, g.indices
    for v in range(g.shape[0]):
        s, e = indptr[v], indptr[v + 1]
        pairs = np.empty(2 * (e - s), dtype=np.int64)
        pairs[0::2] = weights[s:e]
        pairs[1::2] = indices[s:e]
        lines.append(f"{e - s} " + " ".join(map(str, pairs.tolist())))
    Path(path).write_text("\n".join(lines) + "\n")


def target_file_text(network) -> str:
    kind, sizes, costs = target_description(network)
    if kind == "tleaf":
        levels = " ".join(f"{s} {c}" for s, c in zip(sizes, costs, strict=True))
        return f"tleaf {len(sizes)} {levels}\n"
    return f"{kind[:-2]}XD {len(sizes)} " + " ".join(map(str, sizes)) + "\n"


def write_gmap_inputs(graph, network, directory) -> tuple[str, str]:
    """Writes the graph and the target file ``gmap`` reads into ``directory``: their paths."""
    grf, tgt = os.path.join(directory, "graph.grf"), os.path.join(directory, "target.tgt")
    write_graph_file(grf, graph)
    Path(tgt).write_text(target_file_text(network))
    return grf, tgt


def required_gmap() -> str:
    """:func:`gmap_command`, or ScotchError when Scotch's gmap is not installed."""
    command = gmap_command()
    if command is None:
        raise ScotchError("scotch: the gmap command was not found (Debian package scotch)")
    return command


def timed_gmap(command, grf, tgt, out) -> float:
    """Seconds of one ``COMMAND -b0 GRF TGT OUT`` run, ``command`` the gmap
    :func:`required_gmap` found (the mapping written to ``out``)."""
    start = time.perf_counter()
    done = subprocess.run([command, "-b0", grf, tgt, out], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise ScotchError(f"scotch: {command} failed: {done.stderr.strip()}")
    return seconds


def run_gmap(graph, network, workdir=None) -> tuple[np.ndarray, float]:
    """(node of every rank, seconds) from running ``gmap -b0`` on files: the graph and
    target are written first (not timed), then the command runs (timed) and its mapping
    file is read back."""
    command = required_gmap()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        grf, tgt = write_gmap_inputs(graph, network, tmp)
        out = os.path.join(tmp, "map.txt")
        seconds = timed_gmap(command, grf, tgt, out)
        table = np.loadtxt(out, skiprows=1, dtype=np.int64, ndmin=2)
    n = graph.shape[0]
    node = np.empty(n, dtype=np.int64)
    node[table[:, 0]] = table[:, 1]
    return _empty_overfull_nodes(node, _symmetric(graph), network), seconds


def scotch_mapping(
    pattern,
    network,
    time_budget: float = 10.0,
    graph=None,
    seed: int = 0,
    routing=None,
    refine_passes: int | None = REFINE_PASSES,
    refine_steps: int | None = REFINE_STEPS,
) -> Mapping:
    """Scotch's placement refined by petacomm, as a :class:`Mapping` named ``scotch``:
    hop-bytes refinement (``multilevel.refine_placement`` without sibling re-splits), then,
    with a ``routing`` model, contention refinement that keeps hop-bytes at or below
    Scotch's own. Neither stage makes hop-bytes or the busiest link worse than Scotch's.

    The refinement makes at most ``refine_passes`` passes of hop-bytes moves and swaps and
    ``refine_steps`` changes on the busiest link (``REFINE_PASSES``, ``REFINE_STEPS``):
    limits of work, so the result does not depend on the machine's speed or load (both 0:
    Scotch's placement). Its fixed costs come on top: with a ``routing``, the
    network's pair-link matrix (``contention.pair_link_matrix``), unless this process built
    it already. It is built in a thread beside Scotch: built after it, the 0.1-0.2 s it
    took on torus 4x8x8 doubled the candidate's time. Only a matrix that builds
    quickly (``contention.builds_quickly``) is built: routing unit flows for every node
    pair (adaptive routing on a mesh, ECMP, a dragonfly) made the candidate take 2.6-7.9 s
    against Scotch's 0.05-0.07 s on 256 nodes. Without it there is no contention stage,
    and the busiest link is compared by routing Scotch's placement and the refined one
    (a few ms). ``None`` lets a stage run until it converges. ``time_budget`` (which counts
    Scotch's time and the matrix's too) stops both stages whatever their limits.
    ``stop_reason``: ``converged``, ``time budget`` or ``refinement limit``."""
    from petacomm.topology.contention import builds_quickly, contention_stage, prepare_contention
    from petacomm.topology.mapping_search import communication_graph, hop_bytes
    from petacomm.topology.multilevel import cores_in_rank_order, refine_placement

    start = time.perf_counter()
    graph = communication_graph(pattern) if graph is None else graph
    # What the contention stage reads whatever the placement (the pair-link matrix above
    # all) is prepared on another core while Scotch maps: Scotch's C code runs without
    # Python's lock.
    # Scotch's graph is made first: made while that thread runs, both wait for Python's
    # lock in turn (30-45 ms against 20 on cmb).
    prepared_graph = scotch_graph(graph)
    contended = routing is not None and builds_quickly(network, routing)
    beside = None
    if contended:
        beside = _Beside(prepare_contention, pattern, network, routing, graph)
    # While it runs, this thread touches none of the caches it fills (pair-link matrices,
    # routing templates): Scotch only.
    try:
        node = scotch_placement(graph, network, seed, prepared_graph)
    except BaseException:
        if beside is not None:
            beside.join()  # its own error, if any, must not replace this one (Ctrl-C)
        raise
    fixed = beside.result() if beside is not None else None
    scotch_node = node
    # Scotch's placement placed once, unless no stage may change it: its hop-bytes cap the
    # contention stage, its busiest link is the one to beat, and the refined placement's
    # loads are updated from it. (Placed in a thread beside the hop-bytes stage, both took
    # twice as long: 67-92 and 33-42 ms against 34 and 17 on cmb, each waiting for
    # Python's lock.)
    refining = refine_passes != 0 or refine_steps != 0
    placed = fixed.place(node) if fixed is not None and refining else None
    left = max(0.0, time_budget - (time.perf_counter() - start))
    limited = refine_passes is not None
    refine_start = time.perf_counter()
    node, stats = refine_placement(
        prepared_graph[0],
        network,
        node,
        left * 0.6 if contended and refine_steps != 0 else left,
        resplit=not limited,
        clean=True,
        max_passes=refine_passes,
    )
    reasons = [stats.stop_reason]
    after = None  # the busiest link's bytes after the contention stage, if it computed them
    if contended and refine_steps != 0:
        rest = max(0.0, left - (time.perf_counter() - refine_start))
        node, reason, after = contention_stage(
            pattern,
            network,
            routing,
            node,
            graph,
            rest,
            hop_bytes_cap=(
                placed.hop_bytes if placed is not None else hop_bytes(graph, scotch_node, network)
            ),
            prepared=fixed,
            max_steps=refine_steps,
            start=placed,
        )
        reasons.append(reason)
    # The hop-bytes stage may load the busiest link more than Scotch did and the contention
    # stage, limited or stopped early, not undo it: then Scotch's placement stays.
    if fixed is not None and not np.array_equal(node, scotch_node):
        if placed is None:  # no stage was to change it (both limits 0), yet one did
            placed = fixed.place(scotch_node)
        before = placed.loads.max(initial=0.0)
        if after is None:  # the contention stage did not run or had no time to compute them
            after = fixed.moved(placed, node).loads.max(initial=0.0)
        if after > before * (1 + 1e-12):
            node = scotch_node
    # No pair-link matrix: the two placements are routed, as their evaluation is.
    if (
        routing is not None
        and fixed is None
        and not np.array_equal(node, scotch_node)
        and _busiest_link(pattern, network, routing, node)
        > _busiest_link(pattern, network, routing, scotch_node) * (1 + 1e-12)
    ):
        node = scotch_node
    reason = next((r for r in ("time budget", "refinement limit") if r in reasons), reasons[0])
    name = "scotch" + (" (budget hit)" if reason == "time budget" else "")
    return Mapping(name, node, cores_in_rank_order(node), stop_reason=reason)
