"""Evaluating many candidate mappings on several cores.

A search over the 24 permutations of a million ranks routes 100 million messages; the
evaluations are independent, so they run in worker processes forked from this one (the
pattern, network and routing are inherited, not copied: their pages stay shared), each
returning its metrics. Small searches stay in this process: forking costs more than they
take. ``jobs=None`` picks: every core this process may use when the search routes at least
``PARALLEL_MESSAGES`` messages in all, else one.

An evaluation routes a large pattern in chunks (``metrics.evaluate_mapping``); their
temporaries, a few megabytes each, would be handed back to the system at the end of every
chunk and faulted in again (zeroed by the kernel) for the next one - a third of the time of
a million-rank evaluation. For large searches :func:`keep_freed_memory` asks glibc's
allocator to keep freed blocks of up to 256 MiB for reuse instead; the peak memory is the
same, it is just not returned between chunks.

Each evaluation routes the pattern's messages (those between the same two nodes once, for
routings that split them over paths). The network's pair-link matrix
(``contention.pair_link_matrix``: every node pair's share of every link) gives the same link
loads by summing rows. The evaluations use it when the contention refinement built it
already, and a search builds it first when its candidates together carry at least
``PAIR_LINKS_MESSAGES_PER_ROW`` messages per row of it (nodes squared) on a network of at
most ``PAIR_LINKS_MAX_NODES`` nodes, and the matrix builds quickly
(``contention.builds_quickly``: from one template, or from single routes; routing unit flows
for every node pair, on 224-256 nodes of a mesh, a fat tree with ECMP or a dragonfly, made such
searches 2-27x slower). Measured with
``petacomm map --matrix FILE --network torus:4x8x8:t=4 --routing adaptive --jobs 1`` (the
24 permutations): the dense 1,024-rank CMB graph (1 M messages) 6.74 s before, 3.01 s now,
the same table, 60 MB more memory; the random geometric and Delaunay graphs (12 k and
6 k messages) build no matrix (built, it took as long and 63 MB more).
"""

from __future__ import annotations

import os
import sys

from petacomm.topology.mapping import PermutationCandidate
from petacomm.topology.metrics import MappingMetrics, evaluate_mapping, warm_endpoint_cache

PARALLEL_MESSAGES = 20_000_000
# A search builds the pair-link matrix for its evaluations on networks of at most this many
# nodes, when its candidates carry at least this many messages per row of it in all.
PAIR_LINKS_MAX_NODES = 512
PAIR_LINKS_MESSAGES_PER_ROW = 8

# The search a forked worker evaluates for: (network, routing, pattern, cost, hierarchy,
# the pair-link matrix or None).
_SEARCH = None


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def choose_jobs(pattern, count: int, jobs: int | None) -> int:
    """Worker processes for ``count`` evaluations (module docstring)."""
    if jobs is not None:
        return max(1, min(jobs, count))
    if count < 2 or pattern.num_messages * count < PARALLEL_MESSAGES:
        return 1
    import multiprocessing  # here: 5 ms of a command's start, and most evaluate in-process

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(available_cores(), count))


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds (module docstring); False where the C
    library has no ``mallopt`` (not glibc)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, 256 << 20)) and bool(mallopt(m_trim_threshold, 512 << 20))


def _worker_start() -> None:
    """A worker's signals: the command's SIGTERM handler (``launch.stop_on_sigterm``,
    inherited by fork) made the pool's own termination of idle workers print their
    KeyboardInterrupt tracebacks; Ctrl-C is the command's to handle, which ends the pool."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def pair_links_for_search(network, routing, pattern, count: int):
    """The pair-link matrix the evaluations of ``count`` mappings should sum (module
    docstring), or None to route them."""
    # Loaded only when needed: the module's import brings scipy.sparse's (0.1 s).
    contention = sys.modules.get("petacomm.topology.contention")
    cached = contention.cached_pair_links(network, routing) if contention is not None else None
    if cached is not None:
        return cached
    nodes = network.num_nodes
    if not 2 <= nodes <= PAIR_LINKS_MAX_NODES:
        return None
    if pattern.num_messages * count < PAIR_LINKS_MESSAGES_PER_ROW * nodes * nodes:
        return None
    from petacomm.topology import contention

    if not contention.builds_quickly(network, routing):
        return None  # routing unit flows for every node pair costs more than it saves
    return contention.pair_link_matrix(network, routing)


def _evaluate(mapping) -> MappingMetrics:
    network, routing, pattern, cost, hierarchy, pairs = _SEARCH
    metrics = evaluate_mapping(
        network, routing, pattern, mapping, cost=cost, hierarchy=hierarchy, pairs=pairs
    )
    if isinstance(mapping, PermutationCandidate):
        mapping.release()
    return metrics


def evaluate_many(
    network, routing, pattern, mappings, cost=None, hierarchy=None, jobs=None, progress=None
) -> list[MappingMetrics]:
    """Metrics of every mapping, in order; ``progress(detail=name)`` after each."""
    global _SEARCH
    workers = choose_jobs(pattern, len(mappings), jobs)
    if pattern.num_messages * len(mappings) >= PARALLEL_MESSAGES:
        keep_freed_memory()
    out: list[MappingMetrics] = []
    _SEARCH = (
        network,
        routing,
        pattern,
        cost,
        hierarchy,
        pair_links_for_search(network, routing, pattern, len(mappings)),
    )
    try:
        if workers == 1:
            for m in mappings:
                out.append(_evaluate(m))
                if progress is not None:
                    progress(detail=m.name)
            return out
        if cost is not None:
            warm_endpoint_cache(pattern, cost)  # once here, not in every worker
        import multiprocessing

        context = multiprocessing.get_context("fork")
        with context.Pool(workers, initializer=_worker_start) as pool:
            for m, metrics in zip(mappings, pool.imap(_evaluate, mappings), strict=True):
                out.append(metrics)
                if progress is not None:
                    progress(detail=m.name)
        return out
    finally:
        _SEARCH = None
