"""Irregular communication graphs for the mapping benchmarks (``petacomm bench map --peers``).

Three generators, each deterministic by seed and returning a one-phase :class:`CommPattern`
in which every communicating pair exchanges messages both ways:

* ``rgg`` - a random geometric graph: ``nranks`` points uniform in the unit square, an edge
  between two points closer than the radius giving ~12 neighbours on average, 1 MiB per
  message. Ranks are numbered along a Z-order (Morton) curve of their points, as a code that
  distributes particles by a space-filling curve does.
* ``delaunay`` - a partitioned mesh: ``64 x nranks`` points with a density that varies over
  the square (a smooth gradient plus a few dense clusters), triangulated by
  ``scipy.spatial.Delaunay`` and partitioned into ``nranks`` parts of equal point counts by
  recursive coordinate bisection (halves along the longer extent; part numbers in bisection
  order). Two parts exchange 1 KiB per mesh edge between them (their halo).
* ``cmb`` - CMB map-making reduction partners: the :mod:`petacomm.datasets` ``cmb`` scan
  (a precessing, spinning telescope; samples split over ranks in time order) at HEALPix
  nside 64 with 2,000 samples per rank; two ranks exchange 24 B (three float64 values) per
  sky pixel both observe. Pixels near the scan poles are seen by almost every rank, so the
  graph is dense with a heavy band along consecutive ranks.

``python -m petacomm.topology.irregular_graphs NAME --ranks N --output FILE.csv`` writes a
graph as a ``src,dst,bytes`` matrix file that ``petacomm map --matrix`` reads.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from petacomm.topology.pattern import CommPattern, Phase

RGG_DEGREE = 12.0  # mean number of neighbours of a random geometric graph
RGG_MESSAGE_BYTES = 1024.0**2
DELAUNAY_POINTS_PER_PART = 64
DELAUNAY_BYTES_PER_EDGE = 1024.0
CMB_NSIDE = 64
CMB_SAMPLES_PER_RANK = 2000
CMB_BYTES_PER_PIXEL = 24.0  # three float64 values per shared pixel


def _symmetric_pattern(nranks: int, row, col, nbytes, description: str) -> CommPattern:
    """Messages both ways for every undirected pair (row < col), summed over duplicates."""
    row = np.asarray(row, dtype=np.int64)
    col = np.asarray(col, dtype=np.int64)
    nbytes = np.asarray(nbytes, dtype=np.float64)
    lo, hi = np.minimum(row, col), np.maximum(row, col)
    keep = (lo != hi) & (nbytes > 0)
    key = lo[keep] * nranks + hi[keep]
    uniq, inverse = np.unique(key, return_inverse=True)
    total = np.bincount(inverse, weights=nbytes[keep], minlength=uniq.size)
    a, b = uniq // nranks, uniq % nranks
    src = np.concatenate([a, b])
    dst = np.concatenate([b, a])
    return CommPattern(
        nranks, [Phase("main", src, dst, np.concatenate([total, total]))], description
    )


def _morton_order(points: np.ndarray, bits: int = 16) -> np.ndarray:
    """Indices of 2-D points in [0, 1)^2 sorted along the Z-order curve."""
    scaled = np.minimum((points * (1 << bits)).astype(np.int64), (1 << bits) - 1)
    key = np.zeros(points.shape[0], dtype=np.int64)
    for bit in range(bits):
        key |= ((scaled[:, 0] >> bit) & 1) << (2 * bit)
        key |= ((scaled[:, 1] >> bit) & 1) << (2 * bit + 1)
    return np.argsort(key, kind="stable")


def random_geometric(nranks: int, seed: int = 0) -> CommPattern:
    """The ``rgg`` graph (module docstring)."""
    from scipy.spatial import cKDTree

    _check_ranks(nranks)
    rng = np.random.default_rng([seed, 1])
    points = rng.random((nranks, 2))
    points = points[_morton_order(points)]
    radius = float(np.sqrt(RGG_DEGREE / (np.pi * nranks)))
    pairs = cKDTree(points).query_pairs(radius, output_type="ndarray")
    return _symmetric_pattern(
        nranks,
        pairs[:, 0],
        pairs[:, 1],
        np.full(len(pairs), RGG_MESSAGE_BYTES),
        f"random geometric graph, {nranks} ranks, radius {radius:.4f}, 1 MiB messages",
    )


def _mesh_points(count: int, rng: np.random.Generator) -> np.ndarray:
    """Points whose density grows towards one corner, with four dense clusters."""
    background = count // 2
    u = rng.random((background, 2)) ** 1.7  # denser near (0, 0)
    centres = rng.random((4, 2)) * 0.8 + 0.1
    per = (count - background) // 4
    clusters = [c + rng.normal(0, 0.05, (per, 2)) for c in centres]
    rest = count - background - 4 * per
    points = np.concatenate([u, *clusters, rng.random((rest, 2))])
    return np.clip(points, 0.0, 1.0 - 1e-12)


def coordinate_bisection(points: np.ndarray, parts: int) -> np.ndarray:
    """Part number of every point: recursive coordinate bisection into ``parts`` parts of
    (nearly) equal counts; each cut halves along the longer extent, parts in cut order."""
    part = np.zeros(points.shape[0], dtype=np.int64)
    stack = [(np.arange(points.shape[0]), 0, parts)]
    while stack:
        members, first, count = stack.pop()
        if count == 1:
            part[members] = first
            continue
        sub = points[members]
        axis = int(np.argmax(sub.max(axis=0) - sub.min(axis=0)))
        left_parts = count // 2
        order = members[np.argsort(sub[:, axis], kind="stable")]
        cut = int(round(members.size * left_parts / count))
        stack.append((order[:cut], first, left_parts))
        stack.append((order[cut:], first + left_parts, count - left_parts))
    return part


def partitioned_delaunay(nranks: int, seed: int = 0) -> CommPattern:
    """The ``delaunay`` graph (module docstring)."""
    from scipy.spatial import Delaunay

    _check_ranks(nranks)
    rng = np.random.default_rng([seed, 2])
    points = _mesh_points(DELAUNAY_POINTS_PER_PART * nranks, rng)
    triangles = Delaunay(points).simplices
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    edges = np.unique(np.sort(edges, axis=1), axis=0)  # each mesh edge once
    part = coordinate_bisection(points, nranks)
    pa, pb = part[edges[:, 0]], part[edges[:, 1]]
    cut = pa != pb
    return _symmetric_pattern(
        nranks,
        pa[cut],
        pb[cut],
        np.full(int(cut.sum()), DELAUNAY_BYTES_PER_EDGE),
        f"partitioned Delaunay mesh, {points.shape[0]} points in {nranks} parts, "
        "1 KiB per cut edge",
    )


def cmb_partners(nranks: int, seed: int = 0) -> CommPattern:
    """The ``cmb`` graph (module docstring)."""
    import scipy.sparse as sp

    from petacomm.datasets import make

    _check_ranks(nranks)
    scan = make("cmb", nranks, nside=CMB_NSIDE, samples_per_rank=CMB_SAMPLES_PER_RANK, seed=seed)
    keys = scan.all_keys()  # each rank's pixels, as the dataset defines them
    pixels = np.concatenate(keys)
    owner = np.repeat(np.arange(nranks), [k.size for k in keys])
    seen = sp.csr_matrix((np.ones(owner.size), (owner, pixels)), shape=(nranks, scan.key_range))
    seen.data[:] = 1.0  # a pixel hit several times by one rank counts once
    shared = sp.triu(seen @ seen.T, k=1).tocoo()
    return _symmetric_pattern(
        nranks,
        shared.row,
        shared.col,
        shared.data * CMB_BYTES_PER_PIXEL,
        f"CMB reduction partners, {nranks} ranks (nside {CMB_NSIDE}, "
        f"{CMB_SAMPLES_PER_RANK} samples per rank), 24 B per shared pixel",
    )


def _check_ranks(nranks: int) -> None:
    if not isinstance(nranks, int | np.integer) or isinstance(nranks, bool) or nranks < 2:
        raise ValueError(f"ranks: expected an integer >= 2, got {nranks!r}")


GRAPHS = {"rgg": random_geometric, "delaunay": partitioned_delaunay, "cmb": cmb_partners}


def make_graph(name: str, nranks: int, seed: int = 0) -> CommPattern:
    """The graph called ``name`` (one of GRAPHS) on ``nranks`` ranks."""
    try:
        build = GRAPHS[name]
    except KeyError:
        raise ValueError(
            f"graph: unknown graph {name!r} (expected one of {', '.join(GRAPHS)})"
        ) from None
    return build(nranks, seed)


def write_matrix_csv(pattern: CommPattern, path, argument: str = "--output") -> None:
    """Writes the pattern's folded edges as a ``src,dst,bytes`` CSV (atomically)."""
    from petacomm.files import write_text_atomically

    src, dst, nbytes = pattern.edges()
    lines = [f"# {pattern.description}", "src,dst,bytes"]
    lines += [
        f"{s},{d},{b:.17g}"
        for s, d, b in zip(src.tolist(), dst.tolist(), nbytes.tolist(), strict=True)
    ]
    write_text_atomically(path, "\n".join(lines) + "\n", argument)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m petacomm.topology.irregular_graphs",
        description="Write an irregular communication graph as a src,dst,bytes CSV matrix "
        "(petacomm map --matrix FILE reads it).",
    )
    parser.add_argument("graph", choices=sorted(GRAPHS), help="which graph")
    parser.add_argument("--ranks", type=int, default=1024, help="rank count (default 1024)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--output", required=True, metavar="FILE", help="CSV file to write")
    args = parser.parse_args(argv)
    try:
        pattern = make_graph(args.graph, args.ranks, args.seed)
    except ValueError as err:
        parser.error(str(err))
    write_matrix_csv(pattern, args.output)
    src, _, nbytes = pattern.edges()
    print(
        f"wrote {args.output}: {pattern.nranks} ranks, {src.size} messages, "
        f"{nbytes.sum() / 1024**2:.1f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
