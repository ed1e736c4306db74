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
"""

from __future__ import annotations

import multiprocessing
import os

from petacomm.topology.mapping import PermutationCandidate
from petacomm.topology.metrics import MappingMetrics, evaluate_mapping, warm_endpoint_cache

PARALLEL_MESSAGES = 20_000_000

# The search a forked worker evaluates for: (network, routing, pattern, cost, hierarchy).
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


def _evaluate(mapping) -> MappingMetrics:
    network, routing, pattern, cost, hierarchy = _SEARCH
    metrics = evaluate_mapping(network, routing, pattern, mapping, cost=cost, hierarchy=hierarchy)
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
    _SEARCH = (network, routing, pattern, cost, hierarchy)
    try:
        if workers == 1:
            for m in mappings:
                out.append(_evaluate(m))
                if progress is not None:
                    progress(detail=m.name)
            return out
        if cost is not None:
            warm_endpoint_cache(pattern, cost)  # once here, not in every worker
        context = multiprocessing.get_context("fork")
        with context.Pool(workers) as pool:
            for m, metrics in zip(mappings, pool.imap(_evaluate, mappings), strict=True):
                out.append(metrics)
                if progress is not None:
                    progress(detail=m.name)
        return out
    finally:
        _SEARCH = None
