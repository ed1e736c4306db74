"""Communication patterns: who sends how many bytes to whom, in phases.

A :class:`CommPattern` is a list of :class:`Phase` objects, each a set of messages given as
arrays (``src``, ``dst``, ``nbytes``) over ranks ``0..nranks-1``; messages of one phase are in
flight together, phases run one after another (``repeat`` times each). Builders cover the
description language's vocabulary (``pattern_language.py`` parses the text form):
logical grids, star/box stencils, dimension-wise all-to-all, diagonal groups, all-to-all, ring
and measured matrices (``measured.py`` reads files).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from petacomm.topology.unique_keys import unique_keys

# Patterns larger than this many messages are refused: routing them needs several arrays of
# this length (~1.2 GB each 24 bytes per message) and they would not fit in memory.
MAX_MESSAGES = 50_000_000


@dataclass(frozen=True)
class LogicalGrid:
    """The application's process grid: ``dims``, per-dimension periodicity and rank order.

    ``order='row'`` (row-major, C order) makes the last coordinate vary fastest with the rank;
    ``order='column'`` (Fortran order) the first.
    """

    dims: tuple[int, ...]
    periodic: tuple[bool, ...] = ()
    order: str = "row"

    def __post_init__(self):
        dims = tuple(int(d) for d in self.dims)
        if not dims or any(d < 1 for d in dims):
            raise ValueError(f"grid dims: expected positive sizes, got {self.dims!r}")
        periodic = tuple(bool(p) for p in self.periodic) if self.periodic else (False,) * len(dims)
        if len(periodic) != len(dims):
            raise ValueError(
                f"grid periodic: expected {len(dims)} flags (one per dimension), got "
                f"{len(periodic)}"
            )
        if self.order not in ("row", "column"):
            raise ValueError(f"grid order: expected 'row' or 'column', got {self.order!r}")
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "periodic", periodic)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def nranks(self) -> int:
        return math.prod(self.dims)

    @property
    def _np_order(self) -> str:
        return "C" if self.order == "row" else "F"

    def coordinates(self, ranks) -> np.ndarray:
        ranks = np.asarray(ranks, dtype=np.int64)
        return np.stack(np.unravel_index(ranks, self.dims, order=self._np_order), axis=-1)

    def ranks(self, coords) -> np.ndarray:
        coords = np.asarray(coords, dtype=np.int64)
        return np.ravel_multi_index(tuple(coords.T), self.dims, order=self._np_order)

    def describe(self) -> str:
        per = ",".join("1" if p else "0" for p in self.periodic)
        return f"grid {'x'.join(map(str, self.dims))} periodic={per} {self.order}-major"


@dataclass
class Phase:
    """Messages in flight together; ``repeat`` = how many times the phase runs; ``timed``
    False for a phase that runs before the timing starts; ``barrier`` False for a phase its
    ranks start one by one, each when done with the phase before.

    ``after``, when given, orders the phase's messages: a pair of index arrays (message,
    predecessor), each saying that a message leaves only when its predecessor has arrived (a
    collective's rounds, see ``schedules``). The flow time model follows it; the
    link loads and the link-load time model count the messages all the same."""

    name: str
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    repeat: int = 1
    after: tuple[np.ndarray, np.ndarray] | None = None
    # False: the phase runs but is not counted in the predicted time (what a benchmark does
    # before it starts its clock, e.g. a barrier: see metrics' chains of ordered phases).
    timed: bool = True
    # False: no barrier before the phase; each rank starts it when it is done with the
    # phase before (ordered phases always run so).
    barrier: bool = True

    def __post_init__(self):
        self.src = np.asarray(self.src, dtype=np.int64).ravel()
        self.dst = np.asarray(self.dst, dtype=np.int64).ravel()
        self.nbytes = np.broadcast_to(
            np.asarray(self.nbytes, dtype=np.float64), self.src.shape
        ).copy()
        if not (self.src.shape == self.dst.shape == self.nbytes.shape):
            raise ValueError("phase: src, dst and nbytes must have the same length")
        if np.any(self.nbytes < 0) or not np.all(np.isfinite(self.nbytes)):
            raise ValueError(f"phase {self.name!r}: message sizes must be finite and >= 0")
        if int(self.repeat) < 1:
            raise ValueError(f"phase {self.name!r}: repeat must be >= 1, got {self.repeat}")
        if self.after is not None:
            held, before = (np.asarray(a, dtype=np.int64).ravel() for a in self.after)
            if held.shape != before.shape:
                raise ValueError(f"phase {self.name!r}: after's two index arrays differ in length")
            n = self.src.size
            if held.size and (
                min(held.min(), before.min()) < 0 or max(held.max(), before.max()) >= n
            ):
                raise ValueError(f"phase {self.name!r}: after names a message outside 0..{n - 1}")
            if np.any(held == before):
                raise ValueError(f"phase {self.name!r}: a message cannot wait for itself")
            self.after = (held, before)

    @property
    def num_messages(self) -> int:
        return int(self.src.size)

    @staticmethod
    def concatenated(parts: list[Phase]) -> Phase:
        """One phase of the parts' messages in order (each part's order kept, renumbered),
        named and run as the first: in one pass (merged pairwise, 16,000 statements of a
        pattern file took 10 s)."""
        first = parts[0]
        after = None
        if any(p.after is not None for p in parts):
            shifts = np.cumsum([0] + [p.src.size for p in parts[:-1]])
            empty = np.zeros(0, np.int64)
            after = tuple(
                np.concatenate(
                    [(p.after[k] + shift if p.after is not None else empty)
                     for p, shift in zip(parts, shifts, strict=True)]
                )
                for k in (0, 1)
            )  # fmt: skip
        return Phase(
            first.name,
            np.concatenate([p.src for p in parts]),
            np.concatenate([p.dst for p in parts]),
            np.concatenate([p.nbytes for p in parts]),
            first.repeat,
            after,
            first.timed,
            first.barrier,
        )


@dataclass
class CommPattern:
    """A whole communication pattern over ``nranks`` ranks."""

    nranks: int
    phases: list[Phase] = field(default_factory=list)
    description: str = ""
    grid: LogicalGrid | None = None
    # What the pattern leaves out of the communication it was made from (e.g. a profile's
    # bytes without a known partner); commands print these with their results.
    notes: list[str] = field(default_factory=list)

    def __post_init__(self):
        if int(self.nranks) < 1:
            raise ValueError(f"nranks: expected >= 1, got {self.nranks}")
        for ph in self.phases:
            for name, arr in (("source", ph.src), ("destination", ph.dst)):
                if arr.size and (arr.min() < 0 or arr.max() >= self.nranks):
                    raise ValueError(
                        f"phase {ph.name!r}: {name} rank out of range 0..{self.nranks - 1}"
                    )

    @property
    def total_bytes(self) -> float:
        return float(sum(ph.nbytes.sum() * ph.repeat for ph in self.phases))

    @property
    def num_messages(self) -> int:
        return sum(ph.num_messages * ph.repeat for ph in self.phases)

    def message_sizes(self) -> np.ndarray:
        """The size (bytes) of each message of all phases, self-messages included, in phase
        order (a phase's repeats not expanded)."""
        if not self.phases:
            return np.zeros(0)
        return np.concatenate([ph.nbytes for ph in self.phases])

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All phases folded into one list of (src, dst, total bytes), self-messages dropped,
        duplicate pairs summed. Kept on the pattern (the optimisers of one search all ask),
        for as long as its phases are the same objects."""
        key = (self.nranks, [(ph, ph.repeat) for ph in self.phases])
        cached = self.__dict__.get("_edges")
        if cached is not None and _same_phases(cached[0], key):
            return cached[1]
        src = np.concatenate([ph.src for ph in self.phases]) if self.phases else np.zeros(0, int)
        dst = np.concatenate([ph.dst for ph in self.phases]) if self.phases else np.zeros(0, int)
        nb = (
            np.concatenate([ph.nbytes * ph.repeat for ph in self.phases])
            if self.phases
            else np.zeros(0)
        )
        keep = src != dst
        pair = src[keep] * self.nranks + dst[keep]
        uniq, inverse = unique_keys(pair, self.nranks * self.nranks)
        edges = (uniq // self.nranks, uniq % self.nranks, np.bincount(inverse, weights=nb[keep]))
        for array in edges:
            array.flags.writeable = False  # shared by every caller
        self.__dict__["_edges"] = (key, edges)
        return edges

    def matrix(self) -> np.ndarray:
        """Dense bytes matrix (row = sender); only for small rank counts."""
        if self.nranks > 20_000:
            raise ValueError(f"matrix: {self.nranks} ranks is too many for a dense matrix")
        out = np.zeros((self.nranks, self.nranks))
        for ph in self.phases:
            np.add.at(out, (ph.src, ph.dst), ph.nbytes * ph.repeat)
        return out


def _same_phases(a, b) -> bool:
    """Whether two ``edges`` cache keys name the same phase objects and repeat counts."""
    return (
        a[0] == b[0]
        and len(a[1]) == len(b[1])
        and all(p is q and r == s for (p, r), (q, s) in zip(a[1], b[1], strict=True))
    )


def _check_size(count: int, what: str) -> None:
    if count > MAX_MESSAGES:
        raise ValueError(
            f"{what}: {count} messages exceed the limit of {MAX_MESSAGES}; describe a smaller "
            "pattern or use a measured sparse matrix"
        )


def _neighbour_messages(grid: LogicalGrid, offsets: np.ndarray, nbytes: float):
    """Messages from every rank to the rank at each offset; off-grid targets are dropped on
    non-periodic dimensions and wrapped on periodic ones."""
    _check_size(grid.nranks * len(offsets), "stencil")
    ranks = np.arange(grid.nranks, dtype=np.int64)
    coords = grid.coordinates(ranks)
    dims = np.asarray(grid.dims)
    periodic = np.asarray(grid.periodic)
    srcs, dsts = [], []
    for off in offsets:
        target = coords + off
        inside = np.all(periodic | ((target >= 0) & (target < dims)), axis=1)
        target = np.mod(target, dims)
        tr = grid.ranks(target[inside])
        keep = tr != ranks[inside]  # size-1 periodic dimensions would send to self
        srcs.append(ranks[inside][keep])
        dsts.append(tr[keep])
    src = np.concatenate(srcs)
    return src, np.concatenate(dsts), np.full(src.size, float(nbytes))


def stencil_offsets(ndim: int, kind: str) -> np.ndarray:
    """Neighbour offsets: ``star`` = 2*ndim face neighbours, ``box`` = 3**ndim - 1 (with
    edges and corners)."""
    if kind == "star":
        eye = np.eye(ndim, dtype=np.int64)
        return np.concatenate([eye, -eye])
    if kind == "box":
        allo = np.array(list(itertools.product((-1, 0, 1), repeat=ndim)), dtype=np.int64)
        return allo[np.any(allo != 0, axis=1)]
    raise ValueError(f"stencil kind: expected 'star' or 'box', got {kind!r}")


def stencil(grid: LogicalGrid, kind: str, nbytes: float):
    """Halo exchange: every rank sends ``nbytes`` to each star/box neighbour."""
    if not 1 <= grid.ndim <= 3:
        raise ValueError(f"stencil: grids of 1 to 3 dimensions are supported, got {grid.ndim}")
    return _neighbour_messages(grid, stencil_offsets(grid.ndim, kind), nbytes)


def offsets_pattern(grid: LogicalGrid, offsets, nbytes: float):
    """Messages to arbitrary neighbour offsets (e.g. a radius-2 stencil)."""
    offsets = np.atleast_2d(np.asarray(offsets, dtype=np.int64))
    if offsets.shape[1] != grid.ndim:
        raise ValueError(f"offsets: expected {grid.ndim} components per offset")
    return _neighbour_messages(grid, offsets, nbytes)


def _group_alltoall(labels: np.ndarray, nbytes: float, what: str):
    """All-to-all inside each group of ranks sharing a label."""
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    sizes = np.diff(np.r_[starts, labels.size])
    _check_size(int((sizes * (sizes - 1)).sum()), what)
    srcs, dsts = [], []
    for size in np.unique(sizes):
        if size < 2:
            continue
        group_starts = starts[sizes == size]
        members = order[group_starts[:, None] + np.arange(size)[None, :]]  # (groups, size)
        s = np.repeat(members, size, axis=1)
        d = np.tile(members, (1, size))
        keep = s != d
        srcs.append(s[keep])
        dsts.append(d[keep])
    if not srcs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    src = np.concatenate(srcs)
    return src, np.concatenate(dsts), np.full(src.size, float(nbytes))


def dimension_alltoall(grid: LogicalGrid, axes, nbytes: float):
    """All-to-all among ranks that differ only along ``axes`` (a row, column or plane; the
    transposes of pencil FFTs)."""
    axes = tuple(sorted(set(int(a) for a in axes)))
    if not axes or any(a < 0 or a >= grid.ndim for a in axes):
        raise ValueError(f"dimension all-to-all: axes must be in 0..{grid.ndim - 1}, got {axes}")
    coords = grid.coordinates(np.arange(grid.nranks))
    fixed = [d for d in range(grid.ndim) if d not in axes]
    labels = np.zeros(grid.nranks, dtype=np.int64)
    for d in fixed:
        labels = labels * grid.dims[d] + coords[:, d]
    return _group_alltoall(labels, nbytes, "dimension all-to-all")


def diagonal_groups(grid: LogicalGrid, nbytes: float, anti: bool = False):
    """All-to-all among ranks on the same diagonal line (direction (1,1,..) or, with
    ``anti``, (1,-1,..)), as in ray tracing across a grid. On a grid whose dimensions are all
    periodic and equal, diagonals wrap around."""
    if grid.ndim < 2:
        raise ValueError("diagonal groups need a grid of at least 2 dimensions")
    coords = grid.coordinates(np.arange(grid.nranks))
    sign = -1 if anti else 1
    wraps = all(grid.periodic) and len(set(grid.dims)) == 1
    n = grid.dims[0]
    labels = np.zeros(grid.nranks, dtype=np.int64)
    for d in range(1, grid.ndim):
        key = coords[:, d] - sign * coords[:, 0]
        key = np.mod(key, n) if wraps else key + 2 * max(grid.dims)
        labels = labels * (4 * max(grid.dims) + 1) + key
    return _group_alltoall(labels, nbytes, "diagonal groups")


def alltoall(nranks: int, nbytes: float):
    """Every rank sends ``nbytes`` to every other rank."""
    return _group_alltoall(np.zeros(nranks, dtype=np.int64), nbytes, "all-to-all")


def ring(nranks: int, nbytes: float, bidirectional: bool = False):
    """Rank i sends to i+1 (mod nranks); with ``bidirectional`` also to i-1."""
    if nranks < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    ranks = np.arange(nranks, dtype=np.int64)
    src, dst = [ranks], [(ranks + 1) % nranks]
    if bidirectional and nranks > 2:
        src.append(ranks)
        dst.append((ranks - 1) % nranks)
    src = np.concatenate(src)
    return src, np.concatenate(dst), np.full(src.size, float(nbytes))


def matrix_messages(matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Messages from a dense bytes matrix (row = sender); zero entries are dropped."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"communication matrix: expected a square matrix, got shape {m.shape}")
    if np.any(m < 0) or not np.all(np.isfinite(m)):
        raise ValueError("communication matrix: entries must be finite and >= 0")
    src, dst = np.nonzero(m)
    return src.astype(np.int64), dst.astype(np.int64), m[src, dst]


def single_phase(nranks: int, messages, name: str = "main", description: str = "") -> CommPattern:
    src, dst, nb = messages
    return CommPattern(nranks, [Phase(name, src, dst, nb)], description)
