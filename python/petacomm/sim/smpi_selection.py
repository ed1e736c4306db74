"""Which collective algorithm SimGrid 3.32's SMPI runs, in the pattern language's names
(``petacomm.topology.schedules``), so that ``simulate --predict`` prices what the
simulation runs: the ``ompi`` selector's tables (``smpi_openmpi_selector.cpp``, for
commutative operations) and the algorithms ``--cfg=smpi/NAME:ALGORITHM`` forces. None
names an algorithm petacomm does not model.
"""

from __future__ import annotations

import math

# SimGrid 3.32's Open MPI selector for MPI_Alltoall (smpi_openmpi_selector.cpp): per
# communicator size (below the first bound), the algorithm for blocks below each byte bound;
# 1, 4, 5 = linear (every block in flight at once), 2 = pair (xor rounds), 3 = Bruck.
_OMPI_ALLTOALL = (
    (
        3,
        (
            (2, 2),
            (4, 5),
            (16, 2),
            (64, 5),
            (256, 2),
            (4096, 5),
            (32768, 2),
            (262144, 4),
            (1048576, 5),
            (math.inf, 2),
        ),
    ),
    (8, ((8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2), (math.inf, 1))),
    (16, ((262144, 4), (math.inf, 1))),
    (32, ((4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1), (math.inf, 4))),
    (64, ((512, 3), (524288, 1), (math.inf, 4))),
    (128, ((1024, 3), (2048, 1), (4096, 4), (262144, 1), (math.inf, 2))),
    (256, ((1024, 3), (2048, 4), (262144, 1), (math.inf, 2))),
    (512, ((1024, 3), (8192, 4), (32768, 1), (math.inf, 2))),
    (1024, ((512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1), (math.inf, 2))),
    (2048, ((512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1), (math.inf, 4))),
    (4096, ((1024, 3), (4096, 4), (8192, 1), (131072, 4), (math.inf, 1))),
    (math.inf, ((2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (math.inf, 4))),
)


# The same selector's MPI_Allreduce for commutative operations: 1, 2 = reduce then
# broadcast, 3 = recursive doubling, 4-6 = rings and Rabenseifner's.
_OMPI_ALLREDUCE = (
    (4, ((8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (math.inf, 6))),
    (8, ((16, 4), (8192, 3), (math.inf, 6))),
    (16, ((8192, 3), (math.inf, 6))),
    (32, ((64, 5), (4096, 3), (math.inf, 6))),
    (64, ((128, 5), (math.inf, 6))),
    (128, ((262144, 3), (math.inf, 6))),
    (256, ((131072, 2), (262144, 3), (math.inf, 6))),
    (512, ((4096, 2), (math.inf, 6))),
    (2048, ((2048, 2), (16384, 3), (math.inf, 6))),
    (4096, ((2048, 2), (4096, 5), (16384, 3), (math.inf, 6))),
    (math.inf, ((2048, 2), (16384, 5), (32768, 3), (math.inf, 6))),
)
# ... and its MPI_Reduce for commutative operations, where reduce-then-broadcast's reduce is
# the binomial tree (5) petacomm models; other trees (linear, chain, binary, ...) are not.
_OMPI_REDUCE_BINOMIAL = (
    (4, ()),
    (8, ((65536, False), (262144, True), (524288, False), (1048576, True), (math.inf, False))),
    (16, ((8192, False), (math.inf, True))),
    (32, ((4096, False), (math.inf, True))),
    (256, ((math.inf, True),)),
    (512, ((8192, True), (16384, False), (math.inf, True))),
    (2048, ((math.inf, True),)),
    (4096, ((512, True), (1024, False), (8192, True), (16384, False), (math.inf, True))),
    (
        math.inf,
        (
            (16, True),
            (32, False),
            (1024, True),
            (2048, False),
            (8192, True),
            (16384, False),
            (math.inf, True),
        ),
    ),
)


def _cfg(options) -> dict[str, str]:
    """``--cfg=KEY:VALUE`` options as a dict (the last one of a key wins)."""
    setting = {}
    for option in options:
        key, _, value = option.removeprefix("--cfg=").partition(":")
        setting[key] = value
    return setting


def _select(table, ranks: int, nbytes: int):
    sizes = next(sizes for bound, sizes in table if ranks < bound)
    return next((choice for bound, choice in sizes if nbytes < bound), None)


def smpi_alltoall_algorithm(ranks: int, block_bytes: int, options=()) -> str | None:
    """The all-to-all algorithm (petacomm's pattern language name) that SMPI runs for
    ``ranks`` ranks and blocks of ``block_bytes`` under these ``--cfg`` options: the one
    ``smpi/alltoall`` names, else the ``ompi`` selector's; None for any other (a rule
    petacomm does not model)."""
    setting = _cfg(options)
    forced = setting.get("smpi/alltoall")
    if forced is not None:
        return {"bruck": "bruck", "pair": "xor", "basic_linear": "linear"}.get(forced)
    if setting.get("smpi/coll-selector", "ompi") != "ompi":
        return None
    return {2: "xor", 3: "bruck"}.get(_select(_OMPI_ALLTOALL, ranks, block_bytes), "linear")


# ... and its MPI_Barrier, by communicator size alone: 1 = linear, 3 = recursive doubling,
# 4 = Bruck's dissemination, 6 = binomial tree.
_OMPI_BARRIER = ((4, 3), (8, 1), (64, 3), (256, 4), (512, 6), (1024, 4), (4096, 6), (math.inf, 4))


def smpi_barrier_algorithm(ranks: int, options=()) -> str | None:
    """The barrier algorithm (pattern language name) SMPI runs, as
    :func:`smpi_alltoall_algorithm`."""
    setting = _cfg(options)
    forced = setting.get("smpi/barrier")
    if forced is not None:
        return {"ompi_recursivedoubling": "rdb", "ompi_bruck": "bruck", "ompi_tree": "tree"}.get(
            forced
        )
    if setting.get("smpi/coll-selector", "ompi") != "ompi":
        return None
    algorithm = next(alg for bound, alg in _OMPI_BARRIER if ranks < bound)
    return {3: "rdb", 4: "bruck", 6: "tree"}.get(algorithm)


def smpi_allreduce_algorithm(ranks: int, nbytes: int, options=()) -> str | None:
    """The allreduce algorithm (pattern language name) SMPI runs for a commutative
    operation on ``nbytes`` per rank, as :func:`smpi_alltoall_algorithm`."""
    setting = _cfg(options)
    forced = setting.get("smpi/allreduce")
    if forced is not None:
        return "rdb" if forced == "rdb" else None
    if setting.get("smpi/coll-selector", "ompi") != "ompi":
        return None
    algorithm = _select(_OMPI_ALLREDUCE, ranks, nbytes)
    if algorithm == 3:
        return "rdb"
    reduce_forced = setting.get("smpi/reduce")
    binomial = (
        reduce_forced == "ompi_binomial"
        if reduce_forced is not None
        else _select(_OMPI_REDUCE_BINOMIAL, ranks, nbytes)
    )
    bcast_binomial = setting.get("smpi/bcast") == "binomial_tree"
    return "redbcast" if algorithm in (1, 2) and binomial and bcast_binomial else None
