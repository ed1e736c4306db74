"""Placements of ranks onto (node, core) slots: permutation strings, block/cyclic, tiles.

A :class:`Mapping` holds, for every rank, its node id and core index. Constructors:

* :func:`permutation_mapping` - Blue Gene style strings over T (the core) and the torus
  dimensions, first letter varying fastest: ``TXYZ`` fills the cores of a node, then nodes
  along X, then Y, then Z; ``XYZT`` puts one rank per node first. BG/Q uses ``ABCDET``.
* :func:`block_mapping` / :func:`cyclic_mapping` - what launchers do by default (fill a node,
  or deal ranks round-robin over nodes), for any network.
* :func:`tiled_mapping` - a logical grid cut into node-shaped tiles, tiles placed on nodes in
  a given node order.

General optimisers for arbitrary weighted graphs live in ``mapping_search.py``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from petacomm.topology.network import TorusNetwork
from petacomm.topology.pattern import LogicalGrid


@dataclass
class Mapping:
    """Rank r runs on node ``node[r]``, core ``core[r]``; ``name`` says how it was built and,
    for a mapping an optimiser built, ``stop_reason`` why it stopped (``converged`` or
    ``time budget``; empty for constructed mappings)."""

    name: str
    node: np.ndarray
    core: np.ndarray
    stop_reason: str = ""

    def __post_init__(self):
        self.node = np.asarray(self.node, dtype=np.int64)
        self.core = np.asarray(self.core, dtype=np.int64)
        if self.node.shape != self.core.shape or self.node.ndim != 1:
            raise ValueError("mapping: node and core must be 1-D arrays of equal length")

    @property
    def nranks(self) -> int:
        return int(self.node.size)

    def validate(self, network) -> None:
        """Raise ValueError unless every rank has its own slot on the network."""
        if self.node.size and (self.node.min() < 0 or self.node.max() >= network.num_nodes):
            raise ValueError(
                f"mapping {self.name}: node id out of range 0..{network.num_nodes - 1}"
            )
        if self.core.size and (self.core.min() < 0 or self.core.max() >= network.cores_per_node):
            raise ValueError(
                f"mapping {self.name}: core out of range 0..{network.cores_per_node - 1}"
            )
        slots = self.node * network.cores_per_node + self.core
        if slots.size and np.bincount(slots, minlength=network.num_slots).max() > 1:
            raise ValueError(f"mapping {self.name}: two ranks share a slot")

    def slots(self, network) -> np.ndarray:
        return self.node * network.cores_per_node + self.core


def check_rank_count(nranks: int, network) -> None:
    if nranks > network.num_slots:
        raise ValueError(
            f"{nranks} ranks do not fit on {network.num_nodes} nodes x "
            f"{network.cores_per_node} cores = {network.num_slots} slots"
        )
    if nranks < 1:
        raise ValueError(f"rank count must be >= 1, got {nranks}")


def permutation_letters(network: TorusNetwork) -> str:
    """The letters a permutation string permutes: T plus the torus dimension letters."""
    if not isinstance(network, TorusNetwork):
        raise ValueError(f"permutation mappings need a torus or mesh network, not {network.kind}")
    return "T" + network.letters


def parse_permutation(text: str, network: TorusNetwork) -> tuple[int, ...]:
    """Axes in fill order (fastest first); -1 stands for T (the core)."""
    letters = permutation_letters(network)
    up = text.strip().upper()
    if sorted(up) != sorted(letters):
        raise ValueError(
            f"permutation {text!r}: expected each of {letters} exactly once "
            f"(e.g. {letters} or {letters[1:]}T)"
        )
    return tuple(-1 if ch == "T" else network.letters.index(ch) for ch in up)


def format_permutation(axes, network: TorusNetwork) -> str:
    return "".join("T" if a == -1 else network.letters[a] for a in axes)


def all_permutations(network: TorusNetwork) -> list[str]:
    """Every permutation string, in lexicographic order of the axes (T first)."""
    letters = permutation_letters(network)
    return ["".join(p) for p in itertools.permutations(letters)]


def permutation_mapping(text: str, network: TorusNetwork, nranks: int) -> Mapping:
    """Rank r's digits in the mixed radix given by the permutation (first letter fastest)
    are its core and node coordinates; with fewer ranks than slots the first ones are used."""
    check_rank_count(nranks, network)
    axes = parse_permutation(text, network)
    sizes = [network.cores_per_node if a == -1 else network.dims[a] for a in axes]
    digits = np.unravel_index(np.arange(nranks, dtype=np.int64), sizes, order="F")
    coords = np.zeros((nranks, network.ndim), dtype=np.int64)
    core = np.zeros(nranks, dtype=np.int64)
    for a, dig in zip(axes, digits, strict=True):
        if a == -1:
            core = dig
        else:
            coords[:, a] = dig
    return Mapping(text.upper(), network.node_ids(coords), core)


class PermutationCandidate(Mapping):
    """A permutation string's mapping whose arrays are built when first read and dropped by
    :meth:`release`, so that a search over many permutations of a million ranks holds one
    mapping at a time, not all of them."""

    def __init__(self, text: str, network: TorusNetwork, nranks: int):
        parse_permutation(text, network)  # refuse a bad string now, not on first use
        check_rank_count(nranks, network)
        self._source = (text, network, nranks)
        self._node = self._core = None
        self.name = text.upper()
        self.stop_reason = ""

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._node is None:
            built = permutation_mapping(*self._source)
            self._node, self._core = built.node, built.core
        return self._node, self._core

    @property
    def node(self) -> np.ndarray:
        return self._arrays()[0]

    @node.setter
    def node(self, value) -> None:
        self._node = np.asarray(value, dtype=np.int64)

    @property
    def core(self) -> np.ndarray:
        return self._arrays()[1]

    @core.setter
    def core(self, value) -> None:
        self._core = np.asarray(value, dtype=np.int64)

    def release(self) -> None:
        """Drop the arrays (they are rebuilt when read again)."""
        self._node = self._core = None


def permutation_of(mapping: Mapping, network: TorusNetwork) -> str | None:
    """The permutation string that produces ``mapping``, or None (round-trip helper)."""
    for perm in all_permutations(network):
        cand = permutation_mapping(perm, network, mapping.nranks)
        if np.array_equal(cand.node, mapping.node) and np.array_equal(cand.core, mapping.core):
            return perm
    return None


def block_mapping(network, nranks: int) -> Mapping:
    """Fill all cores of node 0, then node 1, ... (Open MPI --map-by core, Slurm block)."""
    check_rank_count(nranks, network)
    r = np.arange(nranks, dtype=np.int64)
    return Mapping("block", r // network.cores_per_node, r % network.cores_per_node)


def cyclic_mapping(network, nranks: int) -> Mapping:
    """Deal ranks round-robin over the nodes (Open MPI --map-by node, Slurm cyclic)."""
    check_rank_count(nranks, network)
    r = np.arange(nranks, dtype=np.int64)
    return Mapping("cyclic", r % network.num_nodes, r // network.num_nodes)


def tile_shapes(grid: LogicalGrid, cores_per_node: int) -> list[tuple[int, ...]]:
    """Tile shapes of ``cores_per_node`` ranks that divide the grid evenly, in lexicographic
    order. Built from the divisors of the core count (a few), never by scanning the grid."""
    divisors = [d for d in range(1, cores_per_node + 1) if cores_per_node % d == 0]
    shapes: list[tuple[int, ...]] = [()]
    for size in grid.dims:
        shapes = [s + (t,) for s in shapes for t in divisors if size % t == 0]
    return [s for s in shapes if math.prod(s) == cores_per_node]


def tiled_mapping(
    grid: LogicalGrid, tile: tuple[int, ...], network, node_order: str | None = None
) -> Mapping:
    """Cut the logical grid into tiles of shape ``tile`` (one tile per node, ranks inside a
    tile on consecutive cores in the grid's rank order) and place tile i on the i-th node
    of ``node_order`` (a permutation of the torus letters, first fastest; default node ids).
    Tiles are numbered like ranks: in the grid's row- or column-major order over tile
    coordinates."""
    tile = tuple(int(t) for t in tile)
    if len(tile) != grid.ndim or any(t < 1 for t in tile):
        raise ValueError(f"tile: expected {grid.ndim} positive sizes, got {tile}")
    if any(d % t for d, t in zip(grid.dims, tile, strict=True)):
        raise ValueError(f"tile {tile}: must divide the grid {grid.dims} in every dimension")
    if math.prod(tile) > network.cores_per_node:
        raise ValueError(
            f"tile {tile}: {math.prod(tile)} ranks exceed {network.cores_per_node} cores per node"
        )
    check_rank_count(grid.nranks, network)
    tiles_grid = LogicalGrid(
        tuple(d // t for d, t in zip(grid.dims, tile, strict=True)), grid.periodic, grid.order
    )
    ntiles = tiles_grid.nranks
    if ntiles > network.num_nodes:
        raise ValueError(f"tile {tile}: {ntiles} tiles need more than {network.num_nodes} nodes")
    coords = grid.coordinates(np.arange(grid.nranks))
    tile_coords = coords // np.asarray(tile)
    inner = coords % np.asarray(tile)
    tile_index = tiles_grid.ranks(tile_coords)
    core = LogicalGrid(tile, order=grid.order).ranks(inner)
    name = "tile" + "x".join(map(str, tile))
    if node_order is None:
        node = tile_index
    else:
        if not isinstance(network, TorusNetwork):
            raise ValueError("tile node order: only torus/mesh networks have dimension letters")
        up = node_order.upper()
        if sorted(up) != sorted(network.letters):
            raise ValueError(
                f"tile node order {node_order!r}: expected each of {network.letters} once"
            )
        axes = [network.letters.index(ch) for ch in up]
        digits = np.unravel_index(tile_index, [network.dims[a] for a in axes], order="F")
        node_coords = np.zeros((grid.nranks, network.ndim), dtype=np.int64)
        for a, dig in zip(axes, digits, strict=True):
            node_coords[:, a] = dig
        node = network.node_ids(node_coords)
        name += ":" + up
    return Mapping(name, node, core)
