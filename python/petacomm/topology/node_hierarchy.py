"""A compute node's internal hierarchy (packages, NUMA domains, cores), for intra-node bytes.

Two sources:

* a synthetic description in hwloc's style, levels from the top, ``name:count`` each:
  ``package:2 numa:2 core:8`` (2 packages x 2 NUMA domains x 8 cores = 32 slots);
* an hwloc XML file (``lstopo --of xml``, hwloc 1.x or 2.x layout): packages, NUMA nodes
  and cores are counted (hardware threads are not slots); the hierarchy must be regular, as
  on production nodes: every package with as many NUMA nodes, each with as many cores (or,
  where NUMA nodes hold whole packages, each with as many packages). Any other node is
  refused, naming what differs: the model has no way to hold it.

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

from petacomm.units import is_whole_number

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
        if not colon or not is_whole_number(count) or int(count) < 1 or not name:
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
    return NodeHierarchy(tuple(_regular_levels(cores, path)))


# What the node model holds: levels, each object of one level holding as many objects of the
# next (module docstring). An hwloc node that is not so is refused, not approximated.
_REGULAR = "not a regular node (the node model needs every package alike)"


def _common_count(counts: dict[str, int], differ: str, unit: str, path) -> int:
    """The count every name in ``counts`` has; ValueError naming ``path`` and the first two
    that differ otherwise ("packages have different core counts (package 0 has 4 cores,
    package 1 has 8)")."""
    values = set(counts.values())
    if len(values) > 1:
        names = list(counts)
        other = next(n for n in names if counts[n] != counts[names[0]])
        first = f"{names[0]} has {counts[names[0]]:,} {unit}, {other} has {counts[other]:,}"
        raise ValueError(f"{path}: {differ} ({first}); {_REGULAR}")
    return values.pop()


def _regular_levels(cores: list[tuple], path) -> list[tuple[str, int]]:
    """The levels (package, NUMA node, core) of the cores' (package, NUMA node) pairs, in
    document order; ValueError naming ``path`` and what is irregular when the node is not
    regular. NUMA nodes inside packages are a level below them; NUMA nodes holding whole
    packages (hwloc 1.x's usual layout) a level above them when there are several."""
    total = len(cores)
    for index, what in ((0, "Package"), (1, "NUMA node")):
        outside = sum(1 for core in cores if core[index] is None)
        if 0 < outside < total:
            raise ValueError(f"{path}: {outside:,} of {total:,} cores are in no {what}; {_REGULAR}")
    package_names, numa_names = {}, {}
    for pkg, numa in cores:
        package_names.setdefault(id(pkg), f"package {len(package_names)}")
        numa_names.setdefault(id(numa), f"NUMA node {len(numa_names)}")
    packages = [package_names[id(pkg)] for pkg, _ in cores]
    numas = [numa_names[id(numa)] for _, numa in cores]
    runs = 1 + sum(1 for a, b in zip(numas, numas[1:], strict=False) if a != b)
    if runs != len(numa_names):
        raise ValueError(
            f"{path}: the cores of a NUMA node are not consecutive (interleaved with another "
            f"NUMA node's); {_REGULAR}"
        )
    cores_per_package = _common_count(
        Counter(packages), "packages have different core counts", "cores", path
    )
    numas_of_package = {name: set() for name in package_names.values()}
    packages_of_numa = {name: set() for name in numa_names.values()}
    for pkg, numa in zip(packages, numas, strict=True):
        numas_of_package[pkg].add(numa)
        packages_of_numa[numa].add(pkg)
    if all(len(held) == 1 for held in packages_of_numa.values()):  # NUMA nodes in packages
        per_package = {pkg: len(held) for pkg, held in numas_of_package.items()}
        differ = "packages have different numbers of NUMA nodes"
        numas_per_package = _common_count(per_package, differ, "NUMA nodes", path)
        cores_per_numa = _common_count(
            Counter(numas), "NUMA nodes have different core counts", "cores", path
        )
        levels = [("package", len(package_names)), ("numa", numas_per_package)]
        levels.append(("core", cores_per_numa))
    elif all(len(held) == 1 for held in numas_of_package.values()):  # packages in NUMA nodes
        per_numa = {numa: len(held) for numa, held in packages_of_numa.items()}
        differ = "NUMA nodes hold different numbers of packages"
        packages_per_numa = _common_count(per_numa, differ, "packages", path)
        levels = [("numa", len(numa_names)), ("package", packages_per_numa)]
        levels.append(("core", cores_per_package))
    else:
        raise ValueError(
            f"{path}: a NUMA node spans several packages while a package holds several NUMA "
            f"nodes; {_REGULAR}"
        )
    return [(name, count) for name, count in levels if count > 1 or name != "numa"]


def _cores_with_package_and_numa(root: ET.Element) -> list[tuple]:
    """(package, NUMA node) of each Core object, in document order (either None when the
    core has none). One walk over the tree, so that a node of 60,000 cores takes a fraction
    of a second (looking up each core's ancestors scanned its siblings: quadratic).

    A core's package is its nearest Package ancestor (Socket in hwloc before 1.11 and in
    hwloc 2's v1 exports, which were read as one package). Its NUMA node is found going up from
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
        if kind in ("Package", "Socket"):
            package = obj
        if kind == "NUMANode":
            numa = obj
        else:
            numa = next(
                (c for c in children if c.tag == "object" and c.get("type") == "NUMANode"), numa
            )
        stack.extend((c, package, numa) for c in reversed(children))
    return found
