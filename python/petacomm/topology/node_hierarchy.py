"""A compute node's internal hierarchy (packages, NUMA domains, cores), for intra-node bytes.

Two sources:

* a synthetic description in hwloc's style, levels from the top, ``name:count`` each:
  ``package:2 numa:2 core:8`` (2 packages x 2 NUMA domains x 8 cores = 32 slots);
* an hwloc XML file (``lstopo --of xml``, hwloc 1.x or 2.x layout): packages, NUMA nodes
  and cores are counted (hardware threads are not slots); the hierarchy must be regular
  (every package alike), as on production nodes.

Core (slot) index c within a node is read as digits over the levels, last level fastest,
i.e. cores of one NUMA domain are numbered consecutively.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_CORES = 1 << 16  # = network.MAX_CORES_PER_NODE


@dataclass(frozen=True)
class NodeHierarchy:
    levels: tuple[tuple[str, int], ...]

    def __post_init__(self):
        if not self.levels:
            raise ValueError("node hierarchy: at least one level is required")
        for name, count in self.levels:
            if count < 1:
                raise ValueError(f"node hierarchy level {name!r}: count must be >= 1")
        if self.cores_per_node > MAX_CORES:
            raise ValueError(
                f"node hierarchy: {self.cores_per_node:,} cores per node exceed the limit of "
                f"{MAX_CORES:,}"
            )

    @property
    def cores_per_node(self) -> int:
        return math.prod(count for _, count in self.levels)

    def to_text(self) -> str:
        return " ".join(f"{name}:{count}" for name, count in self.levels)

    def shared_depth(self, core_a, core_b) -> np.ndarray:
        """Number of leading levels two cores of the same node share (0 = different top-level
        objects, len(levels) = the same core)."""
        counts = [c for _, c in self.levels]
        da = np.unravel_index(np.asarray(core_a, dtype=np.int64), counts)
        db = np.unravel_index(np.asarray(core_b, dtype=np.int64), counts)
        depth = np.zeros(np.asarray(core_a).shape, dtype=np.int64)
        still = np.ones(depth.shape, dtype=bool)
        for a, b in zip(da, db, strict=True):
            still &= a == b
            depth += still
        return depth

    def level_labels(self) -> list[str]:
        """Label of each shared depth: depth 0 = 'across <top>', k = 'within <level k-1>'."""
        names = [name for name, _ in self.levels]
        return [f"across {names[0]}"] + [f"within {n}" for n in names]


def parse_synthetic(text: str) -> NodeHierarchy:
    """``package:2 numa:2 core:8`` -> NodeHierarchy; ValueError naming the bad item."""
    levels = []
    for item in text.split():
        name, colon, count = item.partition(":")
        if not colon or not count.isdigit() or int(count) < 1 or not name:
            raise ValueError(
                f"node hierarchy {text!r}: item {item!r} should be name:count, e.g. core:8"
            )
        levels.append((name.lower(), int(count)))
    if not levels:
        raise ValueError("node hierarchy: empty description (expected e.g. 'package:2 core:8')")
    return NodeHierarchy(tuple(levels))


def load_hwloc_xml(path) -> NodeHierarchy:
    """Levels package / numa / core from an hwloc XML topology file (regular nodes only)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot read ({err.strerror})") from None
    return hwloc_from_xml(data, path)


def hwloc_from_xml(data: bytes, path="hwloc XML") -> NodeHierarchy:
    """Levels package / numa / core from the bytes of an hwloc XML topology; ``path`` only
    names the source in errors."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        line, col = err.position
        raise ValueError(f"{path}: line {line}, column {col}: invalid XML") from None
    cores = _cores_with_package_and_numa(root)
    if not cores:
        raise ValueError(f"{path}: no Core objects in the hwloc topology")
    packages, numas, per_core = {}, {}, []
    for pkg, numa in cores:
        pkey = id(pkg) if pkg is not None else None
        packages.setdefault(pkey, len(packages))
        nkey = id(numa) if numa is not None else None
        numas.setdefault(nkey, len(numas))
        per_core.append((packages[pkey], numas[nkey]))
    npkg = len(packages)
    nnuma = len(numas)
    cores_per_pkg = Counter(p for p, _ in per_core)
    if len(set(cores_per_pkg.values())) != 1:
        raise ValueError(f"{path}: packages have different core counts; not a regular node")
    numa_per_pkg = max(1, nnuma // npkg) if nnuma >= npkg else 1
    cores_per_numa = len(cores) // (npkg * numa_per_pkg)
    if npkg * numa_per_pkg * cores_per_numa != len(cores):
        raise ValueError(f"{path}: NUMA domains do not split the cores evenly")
    levels = [("package", npkg)]
    if numa_per_pkg > 1:
        levels.append(("numa", numa_per_pkg))
    levels.append(("core", cores_per_numa))
    return NodeHierarchy(tuple(levels))


def _cores_with_package_and_numa(root: ET.Element) -> list[tuple]:
    """(package, NUMA node) of each Core object, in document order (either None when the
    core has none). One walk over the tree, so that a node of 60,000 cores takes a fraction
    of a second (looking up each core's ancestors scanned its siblings: quadratic).

    A core's package is its nearest Package ancestor. Its NUMA node is found going up from
    the core: hwloc 1.x nests cores inside their NUMANode; hwloc 2 attaches NUMA nodes as
    memory children of the object whose cores share them (the first such child counts)."""
    found = []
    stack = [(root, None, None)]
    while stack:
        obj, package, numa = stack.pop()
        children = list(obj)
        kind = obj.get("type") if obj.tag == "object" else None
        if kind == "Core":
            found.append((package, numa))
            continue
        if kind == "Package":
            package = obj
        if kind == "NUMANode":
            numa = obj
        else:
            numa = next(
                (c for c in children if c.tag == "object" and c.get("type") == "NUMANode"), numa
            )
        stack.extend((c, package, numa) for c in reversed(children))
    return found
