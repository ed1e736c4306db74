"""The worker of ``petacomm bench sparse-reduce --peers petscsf``: petacomm's strategies and
PETSc's star forests (PetscSF through petsc4py) on the same keys, values and MPI, in one job.

It runs under the Python whose mpi4py and petsc4py share the MPI petacomm was built against
(Debian: /usr/bin/python3 and Open MPI 4.1), so it imports nothing but numpy, mpi4py,
petsc4py and petacomm.xchg. Every rank reads its distinct keys from ``keys_<rank>.npy`` (the
parent wrote them with the generators) and the machine model from ``model.pickle``.

The two PetscSF variants a PETSc user would write for "sum each key's values over its
holders and give every holder the result" (k components per key, MPI_SUM):

- ``petscsf-range``: roots owned by key range (PetscSplitOwnership over [0, C), as a
  PetscLayout does): each leaf points at (key // block owner, offset); no discovery. The
  first execute (never timed) also finds the roots some leaf references
  (PetscSFComputeDegree): only those are read back, so only those are zeroed. Execute:
  zero the referenced roots, PetscSFReduce (sum), PetscSFBcast (replace).
- ``petscsf-holder``: each key's root on its lowest-ranked holder, at that holder's own
  index. Discovery: keys and their local indices to the range owner by MPI_Alltoallv, which
  picks the lowest holder of every key and sends (rank, index) back by MPI_Alltoallv.
  Execute: zero the roots (one per distinct local key), reduce, broadcast.

Contenders run repetition by repetition, in a random order drawn per repetition; every
figure is the max over ranks of one repetition, and the parent prints medians.
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

MARK = "XCHGPEERS "
PEERS = ("petscsf-range", "petscsf-holder")


class _PetscSF:
    """One PetscSF reduction: reduce(sum) leaves -> roots, then broadcast roots -> leaves.

    ``referenced_only``: the roots no leaf points at are never zeroed (nor read back by the
    broadcast); the others are found once, by PetscSFComputeDegree (a collective), at the
    first execute, which the benchmark never times (its correctness check): so the variant
    is shown at its best on both figures, its setup without that reduction (+0.2-0.9 ms
    when it was in the setup) and its executes without zeroing every root. Otherwise every
    root is zeroed on each execute (every root is referenced)."""

    def __init__(self, PETSc, comm, nroots: int, remote: np.ndarray, unit, referenced_only=False):
        self._unit = unit
        self._sf = PETSc.SF().create(comm=comm)
        self._sf.setFromOptions()
        self._sf.setGraph(int(nroots), None, remote)
        self._sf.setUp()
        self._roots = None
        self._nroots = int(nroots)
        self._referenced_only = referenced_only
        self._referenced = None

    def execute(self, values: np.ndarray) -> None:
        from mpi4py import MPI

        k = values.shape[1]
        if self._referenced_only and self._referenced is None:
            self._referenced = np.flatnonzero(self._sf.computeDegree())
        if self._roots is None or self._roots.shape[1] != k:
            self._roots = np.zeros((self._nroots, k), dtype=values.dtype)
            if self._referenced is not None:  # their k values each, as flat indices: numpy
                # assigns these ~3x faster than whole rows by row index
                self._zero = (self._referenced[:, None] * k + np.arange(k)).reshape(-1)
        elif self._referenced is not None:
            self._roots.reshape(-1)[self._zero] = 0
        else:
            self._roots.fill(0)
        leaves, roots = values.reshape(-1), self._roots.reshape(-1)
        self._sf.reduceBegin(self._unit, leaves, roots, MPI.SUM)
        self._sf.reduceEnd(self._unit, leaves, roots, MPI.SUM)
        self._sf.bcastBegin(self._unit, roots, leaves, MPI.REPLACE)
        self._sf.bcastEnd(self._unit, roots, leaves, MPI.REPLACE)

    def free(self) -> None:
        self._sf.destroy()


def split_ownership(total: int, size: int) -> np.ndarray:
    """Ownership ranges of [0, total) over size ranks as PetscSplitOwnership gives them
    (the first total % size ranks one more): size + 1 offsets."""
    base, extra = divmod(total, size)
    counts = np.full(size, base, dtype=np.int64)
    counts[:extra] += 1
    return np.concatenate([[0], np.cumsum(counts)])


class Glue:
    """Seconds spent in the numpy work around a PetscSF's MPI and PETSc calls (``with
    glue:``). A PETSc user's C code does that work too, but without numpy's per-call cost:
    the setup less this time is a lower bound of what the variant would take in C."""

    def __init__(self):
        self.seconds = 0.0

    def __enter__(self):
        self._start = time.perf_counter()

    def __exit__(self, *exc):
        self.seconds += time.perf_counter() - self._start


def _range_remote(keys: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    owner = np.searchsorted(ranges, keys, side="right") - 1
    return np.stack([owner, keys - ranges[owner]], axis=1)


def build_range_sf(PETSc, comm, keys: np.ndarray, key_range: int, unit, glue=None) -> _PetscSF:
    glue = Glue() if glue is None else glue
    with glue:
        ranges = split_ownership(key_range, comm.size)
        nroots = int(ranges[comm.rank + 1] - ranges[comm.rank])
        remote = np.ascontiguousarray(_range_remote(keys, ranges), dtype=PETSc.IntType)
    return _PetscSF(PETSc, comm, nroots, remote, unit, referenced_only=True)


def build_holder_sf(PETSc, comm, keys: np.ndarray, key_range: int, unit, glue=None) -> _PetscSF:
    """Roots on the lowest-ranked holder of each key; discovery by two MPI_Alltoallv."""
    from mpi4py import MPI

    glue = Glue() if glue is None else glue
    size = comm.size
    with glue:
        ranges = split_ownership(key_range, size)
        owner = np.searchsorted(ranges, keys, side="right") - 1  # keys ascending: grouped
        send_counts = np.bincount(owner, minlength=size).astype(np.int64)
        recv_counts = np.empty(size, dtype=np.int64)
    comm.Alltoall(send_counts, recv_counts)
    with glue:
        pairs = np.stack([keys, np.arange(keys.size, dtype=np.int64)], axis=1)
        sdispl = np.concatenate([[0], np.cumsum(send_counts)[:-1]])
        rdispl = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
        got = np.empty((int(recv_counts.sum()), 2), dtype=np.int64)
    comm.Alltoallv(
        [pairs, (send_counts * 2, sdispl * 2), MPI.INT64_T],
        [got, (recv_counts * 2, rdispl * 2), MPI.INT64_T],
    )
    with glue:
        source = np.repeat(np.arange(size, dtype=np.int64), recv_counts)
        order = np.argsort(got[:, 0], kind="stable")  # by key; sources ascending within a key
        sorted_keys = got[order, 0]
        first = np.ones(order.size, dtype=bool)
        first[1:] = sorted_keys[1:] != sorted_keys[:-1]
        group = np.cumsum(first) - 1
        lowest = order[first]  # the entry of each key's lowest-ranked holder
        answer = np.empty((order.size, 2), dtype=np.int64)
        answer[order, 0] = source[lowest][group]
        answer[order, 1] = got[lowest, 1][group]
        remote = np.empty((keys.size, 2), dtype=np.int64)
    comm.Alltoallv(
        [answer, (recv_counts * 2, rdispl * 2), MPI.INT64_T],
        [remote, (send_counts * 2, sdispl * 2), MPI.INT64_T],
    )
    with glue:
        remote = np.ascontiguousarray(remote, dtype=PETSc.IntType)
    return _PetscSF(PETSc, comm, keys.size, remote, unit)


def reference_sums(comm, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Every key's values summed over the ranks holding it, for this rank's keys: every
    rank's keys and values gathered and added per key by numpy (neither petacomm nor
    PETSc), the results every contender must give."""
    all_keys = np.concatenate(comm.allgather(keys))
    all_values = np.concatenate(comm.allgather(values))
    distinct, where = np.unique(all_keys, return_inverse=True)
    sums = np.zeros((distinct.size, values.shape[1]))
    np.add.at(sums, where, all_values)
    return sums[np.searchsorted(distinct, keys)]


_SETUP, _EXECUTE = 0, 1


def _order(names: list[str], phase: int, rep: int) -> list[str]:
    """The contenders in a random order drawn from the phase and repetition (the same on
    every rank). A rotating order would put each contender always after the same one, so
    whatever that one leaves behind (a flushed cache, queued messages) would bias the same
    contender in every repetition."""
    return [names[i] for i in np.random.default_rng([phase, rep]).permutation(len(names))]


def _max_over_ranks(comm, seconds: float) -> float:
    from mpi4py import MPI

    return comm.allreduce(seconds, op=MPI.MAX)


def worker_main(config_text: str) -> int:
    from mpi4py import MPI

    config = json.loads(config_text)
    comm = MPI.COMM_WORLD
    rank = comm.rank
    work = Path(config["work"])
    keys = np.load(work / f"keys_{rank}.npy")
    with open(work / "model.pickle", "rb") as f:
        model = pickle.load(f)
    k, reps, setup_reps = config["k"], config["reps"], config["setup_reps"]
    key_range = int(config["key_range"])
    values0 = np.random.default_rng([7, rank]).uniform(0.5, 1.5, (keys.size, k))
    notes = {}
    PETSc = None
    if config["peers"]:
        try:
            import petsc4py

            petsc4py.init([])
            from petsc4py import PETSc
        except ImportError as err:
            notes["petscsf"] = f"petsc4py not importable by {sys.executable}: {err}"
    unit = MPI.DOUBLE.Create_contiguous(k).Commit()

    from petacomm.xchg import SparseReducePlan

    def petacomm_builder(strategy):
        return lambda: SparseReducePlan(
            comm,
            keys,
            strategy=strategy,
            transport=config["transport"],
            dtype=np.float64,
            k=k,
            model=model,
        )

    builders = {f"petacomm:{s}": petacomm_builder(s) for s in config["strategies"]}
    if PETSc is not None:
        if "petscsf-range" in config["peers"]:
            builders["petscsf-range"] = lambda glue: build_range_sf(
                PETSc, comm, keys, key_range, unit, glue
            )
        if "petscsf-holder" in config["peers"]:
            builders["petscsf-holder"] = lambda glue: build_holder_sf(
                PETSc, comm, keys, key_range, unit, glue
            )
    names = list(builders)

    # Setup: every contender built setup_reps + 1 times, in a random order (first dropped).
    setup = {n: [] for n in names}
    setup_in_c = {n: [] for n in names if n.startswith("petscsf")}  # less the numpy glue
    plans = {}
    for rep in range(setup_reps + 1):
        for name in _order(names, _SETUP, rep):
            glue = Glue()
            comm.Barrier()
            start = MPI.Wtime()
            built = builders[name](glue) if name in setup_in_c else builders[name]()
            elapsed = MPI.Wtime() - start
            seconds = _max_over_ranks(comm, elapsed)
            without_glue = _max_over_ranks(comm, elapsed - glue.seconds)
            if rep > 0:
                setup[name].append(seconds)
                if name in setup_in_c:
                    setup_in_c[name].append(without_glue)
            old = plans.pop(name, None)
            if old is not None:
                old.free()
            plans[name] = built

    # Correctness against an independent reference (numpy sums per key), once before the
    # timed executions and again on each contender's last timed result.
    reference = reference_sums(comm, keys, values0)

    def agree(values) -> bool:
        ok = bool(np.allclose(values, reference, rtol=1e-12, atol=0))
        return bool(comm.allreduce(int(ok), op=MPI.MIN))

    agrees = {}
    for name in names:
        values = values0.copy()
        plans[name].execute(values)
        agrees[name] = agree(values)
    execute = {n: [] for n in names}
    values = values0.copy()
    last = config["warmup"] + reps - 1
    for rep in range(config["warmup"] + reps):
        for name in _order(names, _EXECUTE, rep):
            values[...] = values0
            comm.Barrier()
            start = MPI.Wtime()
            plans[name].execute(values)
            seconds = _max_over_ranks(comm, MPI.Wtime() - start)
            if rep >= config["warmup"]:
                execute[name].append(seconds)
            if rep == last:
                agrees[name] = agrees[name] and agree(values)
    auto = plans.get("petacomm:auto")
    chosen = auto.strategy if auto is not None else None
    described = auto.describe() if auto is not None else None
    for plan in plans.values():
        plan.free()
    unit.Free()
    distinct_max = comm.allreduce(int(keys.size), op=MPI.MAX)
    if rank == 0:
        run = {
            "ranks": comm.size,
            "k": k,
            "distinct_keys_max": distinct_max,
            "mpi_library": MPI.Get_library_version().split("\n")[0].strip("\0 "),
            "python": sys.executable,
            "contenders": [
                {
                    "name": n,
                    "setup_seconds": setup[n],
                    "execute_seconds": execute[n],
                    "agrees": agrees[n],
                    **({"setup_without_glue_seconds": setup_in_c[n]} if n in setup_in_c else {}),
                }
                for n in names
            ],
            "auto": None
            if described is None
            else {
                "choice": chosen,
                "reason": described["reason"],
                "predicted": {
                    s: e.get("predicted_execute_seconds")
                    for s, e in described["strategies"].items()
                },
                "candidates": [s for s, e in described["strategies"].items() if e["candidate"]],
            },
            "notes": notes,
            "finished": time.time(),
        }
        print(MARK + json.dumps(run), flush=True)
    return 0
