"""Write a mapping in the formats launchers read; every file is written atomically.

Formats (``FORMATS``):

* ``rankfile`` - Open MPI rankfile, one line per rank ``rank N=HOST slot=CORE``; use with
  ``mpiexec --map-by rankfile:file=FILE`` (add ``:oversubscribe`` when slots repeat).
  Starts with a ``#`` comment line naming the mapping.
* ``slurm`` - Slurm arbitrary distribution: one host name per line, line i = host of rank i;
  use with ``SLURM_HOSTFILE=FILE srun --distribution=arbitrary``. No comments (Slurm reads
  every line as a host).
* ``cray`` - Cray MPICH rank order file for ``MPICH_RANK_REORDER_METHOD=3`` (file name
  ``MPICH_RANK_ORDER``): the ranks in the order they fill the allocated nodes' cores, one
  node per line, comma-separated, runs written as ``a-b``. Cray fills nodes in allocation
  order, so every used node but the last must be full and nodes must be used from node 0 up.
* ``bgp`` - Blue Gene/P map file: line i = ``X Y Z T`` of rank i (3-D torus only).
* ``bgq`` - Blue Gene/Q map file: line i = ``A B C D E T`` of rank i (5-D torus only).
* ``csv`` - ``rank,node,core`` header then one line per rank, after a ``#`` comment line
  with the format version.

Host names come from a list (node id i -> hosts[i]) or a template such as ``nid{node:05d}``.
"""

from __future__ import annotations

import string

import numpy as np

from petacomm.files import write_text_atomically
from petacomm.topology.mapping import Mapping
from petacomm.topology.network import TorusNetwork

FORMATS = ("rankfile", "slurm", "cray", "bgp", "bgq", "csv")
CSV_VERSION = 1


def write_atomically(path, text: str, inputs=()) -> None:
    """Write a launcher file atomically; its directory must exist (``files`` refuses one that
    does not: a typo in a path should not silently create directories next to a job
    script). ``inputs`` ((option, path) pairs) are never overwritten."""
    write_text_atomically(path, text, "--output", inputs)


def check_host_template(template: str) -> None:
    """A template must name the node ({node} or a formatted {node:05d}), or every node would
    get the same host name; ValueError otherwise."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as err:
        raise ValueError(f"host template {template!r}: {err}") from None
    if "node" not in fields:
        raise ValueError(
            f"host template {template!r}: must contain {{node}} (the node id), e.g. "
            "nid{node:05d}; otherwise every node gets the same host name"
        )
    unknown = [name for name in fields if name != "node"]
    if unknown:
        raise ValueError(
            f"host template {template!r}: unknown field {{{unknown[0]}}} (only {{node}})"
        )
    try:  # a bad format spec ({node:q}) failed only when the file was written, after the search
        host = template.format(node=0)
    except (ValueError, IndexError, KeyError) as err:
        raise ValueError(f"host template {template!r}: {err}") from None
    if any(c.isspace() or not c.isprintable() for c in host):
        raise ValueError(
            f"host template {template!r}: host names made from it ({host!r}) hold a space or a "
            "control character, which a rankfile or host list cannot"
        )


def parse_host_file(text: str) -> list[str]:
    """The host names of a ``--hosts`` file: one per line, blank lines and ``#`` comments
    skipped. A line holding more than a name is refused, naming it: an Open MPI hostfile's
    ``n0 slots=4`` was read as the two hosts ``n0`` and ``slots=4``."""
    names = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if len(words) > 1:
            raise ValueError(
                f"line {number}: expected one host name, got {line.strip()!r} (a hostfile's "
                "options such as slots= are not read here: list the names alone)"
            )
        names += words
    return names


def host_names(network, hosts=None, template: str = "node{node}") -> list[str]:
    """Host name of every node id: from ``hosts`` (one per node) or ``template``."""
    if hosts is not None:
        hosts = [h.strip() for h in hosts if h.strip()]
        if len(hosts) < network.num_nodes:
            raise ValueError(
                f"hosts: {len(hosts)} host names for {network.num_nodes} nodes (need one per "
                "node, in node-id order)"
            )
        return hosts[: network.num_nodes]
    check_host_template(template)
    try:
        return [template.format(node=i) for i in range(network.num_nodes)]
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(
            f"host template {template!r}: {err} (use {{node}} for the node id, e.g. "
            "nid{node:05d})"
        ) from None


def format_rankfile(mapping: Mapping, hosts: list[str]) -> str:
    lines = [f"# petacomm rankfile v1: mapping {mapping.name}"]
    lines += [
        f"rank {r}={hosts[n]} slot={c}"
        for r, (n, c) in enumerate(zip(mapping.node.tolist(), mapping.core.tolist(), strict=True))
    ]
    return "\n".join(lines) + "\n"


def format_slurm(mapping: Mapping, hosts: list[str]) -> str:
    return "".join(f"{hosts[n]}\n" for n in mapping.node.tolist())


def _ranges(values: list[int]) -> str:
    parts, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


def format_cray(mapping: Mapping, network) -> str:
    order = np.lexsort((mapping.core, mapping.node))
    nodes_sorted = mapping.node[order]
    used, counts = np.unique(nodes_sorted, return_counts=True)
    if not np.array_equal(used, np.arange(used.size)):
        raise ValueError(
            "cray rank order: ranks must occupy nodes 0..k-1 without gaps (Cray fills the "
            f"allocated nodes in order); this mapping uses nodes {used[:8].tolist()}..."
        )
    if np.any(counts[:-1] != network.cores_per_node):
        bad = int(np.flatnonzero(counts[:-1] != network.cores_per_node)[0])
        raise ValueError(
            f"cray rank order: node {bad} holds {counts[bad]} ranks but Cray fills every "
            f"node but the last with {network.cores_per_node}"
        )
    lines = [f"# petacomm MPICH_RANK_ORDER v1: mapping {mapping.name}"]
    start = 0
    for count in counts.tolist():
        lines.append(_ranges(order[start : start + count].tolist()))
        start += count
    return "\n".join(lines) + "\n"


def format_bluegene(mapping: Mapping, network, generation: str) -> str:
    want = {"bgp": 3, "bgq": 5}[generation]
    if not isinstance(network, TorusNetwork) or network.ndim != want:
        raise ValueError(
            f"{generation} map file: needs a {want}-D torus network "
            f"({'X Y Z' if want == 3 else 'A B C D E'} T), got {network.to_text()}"
        )
    coords = network.coordinates(mapping.node)
    rows = np.column_stack([coords, mapping.core])
    return "".join(" ".join(map(str, row)) + "\n" for row in rows.tolist())


def format_csv(mapping: Mapping) -> str:
    lines = [f"# petacomm mapping csv v{CSV_VERSION}: {mapping.name}", "rank,node,core"]
    lines += [
        f"{r},{n},{c}"
        for r, (n, c) in enumerate(zip(mapping.node.tolist(), mapping.core.tolist(), strict=True))
    ]
    return "\n".join(lines) + "\n"


def format_mapping(
    mapping: Mapping, network, fmt: str, hosts=None, host_template: str = "node{node}"
) -> str:
    """The file contents of ``mapping`` in format ``fmt`` (module docstring)."""
    mapping.validate(network)
    if fmt == "rankfile":
        return format_rankfile(mapping, host_names(network, hosts, host_template))
    if fmt == "slurm":
        return format_slurm(mapping, host_names(network, hosts, host_template))
    if fmt == "cray":
        return format_cray(mapping, network)
    if fmt in ("bgp", "bgq"):
        return format_bluegene(mapping, network, fmt)
    if fmt == "csv":
        return format_csv(mapping)
    raise ValueError(
        f"format {fmt!r}: unknown launcher file format (expected {', '.join(FORMATS)})"
    )


def write_mapping(
    path,
    mapping: Mapping,
    network,
    fmt: str,
    hosts=None,
    host_template: str = "node{node}",
    inputs=(),
) -> None:
    """Write ``mapping`` to ``path`` in format ``fmt``, atomically; never over one of the
    ``inputs`` ((option, path) pairs)."""
    write_atomically(path, format_mapping(mapping, network, fmt, hosts, host_template), inputs)
