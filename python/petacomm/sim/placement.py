"""Where each simulated rank runs: a mapping by name (as ``petacomm map`` names its
candidates) or an Open MPI rankfile (as ``petacomm map --format rankfile`` writes it)."""

from __future__ import annotations

import re

import numpy as np

from petacomm.topology import mapping as mp
from petacomm.topology.network import TorusNetwork

_RANKFILE_LINE = re.compile(r"^\s*rank\s+(\d+)\s*=\s*(\S+)\s+slot\s*=\s*(\d+)\s*$")


def named_mapping(name: str, network, nranks: int) -> mp.Mapping:
    """``block``, ``cyclic``, or a permutation string of T and the torus letters (TXYZ...).

    Optimised candidates (greedy, bisection) depend on a pattern: write them with
    ``petacomm map --output FILE --format rankfile`` and pass the file instead."""
    key = name.strip()
    if key.lower() == "block":
        return mp.block_mapping(network, nranks)
    if key.lower() == "cyclic":
        return mp.cyclic_mapping(network, nranks)
    if isinstance(network, TorusNetwork) and set(key.upper()) <= set(
        mp.permutation_letters(network)
    ):
        return mp.permutation_mapping(key, network, nranks)
    letters = (
        f", or a permutation of {mp.permutation_letters(network)}"
        if isinstance(network, TorusNetwork)
        else ""
    )
    raise ValueError(
        f"unknown mapping {name!r} (expected block, cyclic{letters}; pattern-optimised "
        "mappings: write them with 'petacomm map --format rankfile' and give the file)"
    )


def mapping_names(text: str, network) -> list[str]:
    """A comma-separated list of names; ``permutations`` stands for every permutation string."""
    names: list[str] = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            raise ValueError(f"mapping list {text!r}: empty name")
        if item.lower() == "permutations":
            names += mp.all_permutations(network) if isinstance(network, TorusNetwork) else []
            if not isinstance(network, TorusNetwork):
                raise ValueError("permutations: only a torus network has permutation mappings")
        else:
            names.append(item)
    return names


def _host_pattern(template: str) -> re.Pattern:
    """The host names ``template`` makes, with the node id as group 1: ``{node}`` with or
    without a format spec (``nid{node:05d}`` writes nid00012), a node id of ASCII digits
    that an int64 holds."""
    import string

    parts = []
    for literal, field, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append("([0-9]{1,18})")
    return re.compile("^" + "".join(parts) + "$")


def read_rankfile(text: str, network, template: str = "node{node}", origin: str = "rankfile"):
    """The mapping an Open MPI rankfile describes (``rank R=HOST slot=S`` lines; ``#``
    comments). Host names are read back through ``template`` (petacomm map's
    ``--host-template``); ranks must be 0..n-1, each once."""
    host = _host_pattern(template)
    placed: dict[int, tuple[int, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0]
        if not line.strip():
            continue
        match = _RANKFILE_LINE.match(line)
        if not match:
            raise ValueError(f"{origin} line {number}: expected 'rank R=HOST slot=S', got {line!r}")
        rank, name, slot = int(match.group(1)), match.group(2), int(match.group(3))
        node_match = host.match(name)
        if not node_match:
            raise ValueError(
                f"{origin} line {number}: host {name!r} does not match the host template "
                f"{template!r}"
            )
        if rank in placed:
            raise ValueError(f"{origin} line {number}: rank {rank} placed twice")
        placed[rank] = (int(node_match.group(1)), slot)
    if not placed:
        raise ValueError(f"{origin}: no 'rank R=HOST slot=S' lines")
    n = len(placed)
    if sorted(placed) != list(range(n)):
        missing = sorted(set(range(n)) - set(placed))
        raise ValueError(f"{origin}: ranks must be 0..{n - 1}; missing {missing[:5]}")
    node = np.array([placed[r][0] for r in range(n)], dtype=np.int64)
    core = np.array([placed[r][1] for r in range(n)], dtype=np.int64)
    mapping = mp.Mapping(f"rankfile:{origin}", node, core)
    mapping.validate(network)
    return mapping
