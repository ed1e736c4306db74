"""Network models: N-d torus/mesh, fat tree (XGFT) and dragonfly, with a one-line text form.

Every network numbers its nodes ``0..num_nodes-1`` and its directed links ``0..num_links-1``;
routing models (``routing.py``) return per-link loads indexed by these link ids. Each node has
``cores_per_node`` slots (the Blue Gene "T" dimension); a process is placed on (node, core).

Text forms (``parse_network``)::

    torus:8x16x32            all dimensions wrap around
    mesh:4x4                 no dimension wraps
    torus:8x16x32:wrap=1,1,0 per-dimension wrap (1 = ring, 0 = line)
    fattree:2;4,4;1,2;1,2    SimGrid FAT_TREE parameters: LEVELS;DOWN;UP;PARALLEL (per level)
    dragonfly:9,4,2,2        GROUPS,ROUTERS,NODES,GLOBAL (or g=9,a=4,p=2,h=2)

Any form takes ``:t=N`` (or ``:cores=N``) for the cores per node (default 1).

Kinds are registered in ``NETWORK_KINDS`` (one :class:`NetworkKind` line each, at the end of
this module); ``parse_network`` reads the registry, so a new kind is a class and a line
(docs/topology.md, "Adding a network kind"). Sizes are bounded (``MAX_NODES``,
``MAX_LINKS``, ``MAX_CORES_PER_NODE``) so that one evaluation fits in memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from petacomm.lazy_module import LazyModule
from petacomm.units import decimal_int

# numpy is imported on first use: the registries below are read by `petacomm map --help`.
np = LazyModule("numpy")

_TORUS_LETTERS_3D = "XYZ"
_TORUS_LETTERS = "ABCDEFGHIJKLMNOPQRS"  # no T: T is the core dimension in permutation strings


def _positive_int(text: str, what: str) -> int:
    try:
        value = decimal_int(text)
    except ValueError:
        raise ValueError(f"{what}: expected a positive integer, got {text!r}") from None
    if value < 1:
        raise ValueError(f"{what}: expected a positive integer, got {text!r}")
    return value


def dimension_letters(ndim: int) -> str:
    """Letters naming torus dimensions: XYZ up to 3-D (Blue Gene/P), ABCDE... beyond (BG/Q)."""
    if ndim <= 3:
        return _TORUS_LETTERS_3D[:ndim]
    if ndim > len(_TORUS_LETTERS):
        raise ValueError(f"torus dimensions: at most {len(_TORUS_LETTERS)} supported, got {ndim}")
    return _TORUS_LETTERS[:ndim]


@dataclass(frozen=True)
class TorusNetwork:
    """An N-dimensional torus/mesh; node ids are coordinates with the first dimension fastest.

    Links: for dimension ``d`` and direction ``s`` (0 = towards +1, 1 = towards -1) the link
    leaving node ``n`` has id ``(2*d + s) * num_nodes + n``. Links that do not exist (mesh
    boundaries, dimensions of size 1) keep their ids but never carry traffic.
    """

    dims: tuple[int, ...]
    wrap: tuple[bool, ...] = ()
    cores_per_node: int = 1

    def __post_init__(self):
        dims = tuple(int(d) for d in self.dims)
        if not dims or any(d < 1 for d in dims):
            raise ValueError(f"torus dims: expected positive sizes, got {self.dims!r}")
        wrap = tuple(bool(w) for w in self.wrap) if self.wrap else (True,) * len(dims)
        if len(wrap) != len(dims):
            raise ValueError(
                f"torus wrap: expected {len(dims)} flags (one per dimension), got {len(wrap)}"
            )
        if self.cores_per_node < 1:
            raise ValueError(f"cores_per_node: expected >= 1, got {self.cores_per_node}")
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "wrap", wrap)
        object.__setattr__(self, "cores_per_node", int(self.cores_per_node))

    @property
    def kind(self) -> str:
        return "torus" if any(self.wrap) else "mesh"

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def num_nodes(self) -> int:
        return math.prod(self.dims)

    @property
    def num_slots(self) -> int:
        return self.num_nodes * self.cores_per_node

    @property
    def num_links(self) -> int:
        return 2 * self.ndim * self.num_nodes

    @property
    def default_routing(self) -> str:
        return "adaptive"

    @property
    def letters(self) -> str:
        return dimension_letters(self.ndim)

    def coordinates(self, nodes) -> np.ndarray:
        """Coordinates (n, ndim) of node ids (first dimension fastest)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        return np.stack(np.unravel_index(nodes, self.dims, order="F"), axis=-1)

    def node_ids(self, coords) -> np.ndarray:
        coords = np.asarray(coords, dtype=np.int64)
        return np.ravel_multi_index(tuple(coords.T), self.dims, order="F")

    def dimension_offsets(self, src, dst) -> tuple[np.ndarray, np.ndarray]:
        """Minimal signed offsets (n, ndim) from src to dst nodes, and the half-ring tie mask.

        On a ring of even size ``n`` a displacement of ``n/2`` is reachable both ways; such
        entries are returned as ``+n/2`` with ``tie=True`` so routing can treat both directions.
        """
        cs = self.coordinates(src)
        cd = self.coordinates(dst)
        dims = np.asarray(self.dims, dtype=np.int64)
        wrap = np.asarray(self.wrap, dtype=bool)
        raw = cd - cs
        fwd = np.mod(raw, dims)
        wrapped = np.where(fwd * 2 > dims, fwd - dims, fwd)
        offsets = np.where(wrap, wrapped, raw)
        tie = wrap & (dims % 2 == 0) & (fwd * 2 == dims) & (dims > 1)
        return offsets, tie

    def hop_distance(self, src, dst) -> np.ndarray:
        offsets, _ = self.dimension_offsets(src, dst)
        return np.abs(offsets).sum(axis=-1)

    def link_exists(self) -> np.ndarray:
        exists = np.ones((self.ndim, 2, self.num_nodes), dtype=bool)
        coords = self.coordinates(np.arange(self.num_nodes))
        for d, (n, w) in enumerate(zip(self.dims, self.wrap, strict=True)):
            if n == 1:
                exists[d] = False
            elif not w:
                exists[d, 0] = coords[:, d] != n - 1
                exists[d, 1] = coords[:, d] != 0
        return exists.reshape(-1)

    def link_name(self, link: int) -> str:
        link = int(link)
        node = link % self.num_nodes
        d, s = divmod(link // self.num_nodes, 2)
        coord = ",".join(str(int(c)) for c in self.coordinates(node))
        return f"({coord}) {'+-'[s]}{self.letters[d]}"

    def to_text(self) -> str:
        text = f"{self.kind}:{'x'.join(map(str, self.dims))}"
        if any(self.wrap) and not all(self.wrap):
            text += ":wrap=" + ",".join("1" if w else "0" for w in self.wrap)
        if self.cores_per_node != 1:
            text += f":t={self.cores_per_node}"
        return text

    def with_cores(self, cores_per_node: int) -> TorusNetwork:
        return TorusNetwork(self.dims, self.wrap, cores_per_node)

    def split_coordinates(self, nodes) -> np.ndarray:
        """Coordinates used by recursive bisection to cut the machine in halves."""
        return self.coordinates(nodes)


@dataclass(frozen=True)
class FatTreeNetwork:
    """An extended generalised fat tree XGFT(h; m_1..m_h; w_1..w_h) with parallel links.

    ``down[l-1]`` = children of a level-l switch (m_l), ``up[l-1]`` = parents of a level-(l-1)
    element (w_l), ``parallel[l-1]`` = parallel cables between a child and each parent (p_l),
    exactly SimGrid's FAT_TREE parameters. Leaves (level 0) are the compute nodes, numbered by
    their child digits c_1..c_h with c_1 fastest. An element of level l is labelled by the
    digits c_{l+1..h} of its subtree and the up-port choices b_1..b_l that reach it.

    Links between level l-1 and l: the link from element e (level l-1) to its parent through
    port b and parallel cable k has id ``up_offset[l] + (e*w_l + b)*p_l + k``; the link back
    down has the same index plus ``down_offset[l]`` instead.
    """

    down: tuple[int, ...]
    up: tuple[int, ...]
    parallel: tuple[int, ...] = ()
    cores_per_node: int = 1
    _offsets: dict = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self):
        down = tuple(int(v) for v in self.down)
        up = tuple(int(v) for v in self.up)
        par = tuple(int(v) for v in self.parallel) if self.parallel else (1,) * len(down)
        if not down:
            raise ValueError("fat tree: at least one level is required")
        if not (len(down) == len(up) == len(par)):
            raise ValueError(
                f"fat tree: DOWN, UP and PARALLEL need one value per level ({len(down)}), got "
                f"{len(down)}, {len(up)}, {len(par)}"
            )
        if any(v < 1 for v in down + up + par):
            raise ValueError("fat tree: all per-level counts must be >= 1")
        if self.cores_per_node < 1:
            raise ValueError(f"cores_per_node: expected >= 1, got {self.cores_per_node}")
        object.__setattr__(self, "down", down)
        object.__setattr__(self, "up", up)
        object.__setattr__(self, "parallel", par)
        offsets, total = {}, 0
        for level in range(1, len(down) + 1):
            count = self.elements(level - 1) * up[level - 1] * par[level - 1]
            offsets[("up", level)] = total
            offsets[("down", level)] = total + count
            total += 2 * count
        offsets["total"] = total
        object.__setattr__(self, "_offsets", offsets)

    kind = "fattree"
    default_routing = "dmodk"

    @property
    def levels(self) -> int:
        return len(self.down)

    @property
    def num_nodes(self) -> int:
        return math.prod(self.down)

    @property
    def num_slots(self) -> int:
        return self.num_nodes * self.cores_per_node

    @property
    def num_links(self) -> int:
        return self._offsets["total"]

    def elements(self, level: int) -> int:
        """Number of elements (leaves or switches) at ``level``."""
        return math.prod(self.down[level:]) * math.prod(self.up[:level])

    def links_per_level(self, level: int) -> int:
        return self.elements(level - 1) * self.up[level - 1] * self.parallel[level - 1]

    def link_offset(self, direction: str, level: int) -> int:
        return self._offsets[(direction, level)]

    def oversubscription(self, level: int) -> float:
        """Downward over upward capacity of a level-``level`` switch (1.0 = full bisection)."""
        if level >= self.levels:
            return 1.0
        down_cap = self.down[level - 1] * self.parallel[level - 1]
        up_cap = self.up[level] * self.parallel[level]
        return down_cap / up_cap

    def common_level(self, src, dst) -> np.ndarray:
        """Level of the nearest common ancestor (0 = same leaf)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        level = np.zeros(np.broadcast(src, dst).shape, dtype=np.int64)
        span = 1
        for lv in range(1, self.levels + 1):
            span_next = span * self.down[lv - 1]
            level = np.where((src // span) != (dst // span), lv, level)
            span = span_next
        return level

    def hop_distance(self, src, dst) -> np.ndarray:
        return 2 * self.common_level(src, dst)

    def link_exists(self) -> np.ndarray:
        return np.ones(self.num_links, dtype=bool)

    def link_name(self, link: int) -> str:
        link = int(link)
        for level in range(1, self.levels + 1):
            for direction in ("up", "down"):
                start = self._offsets[(direction, level)]
                if start <= link < start + self.links_per_level(level):
                    rel = link - start
                    k = rel % self.parallel[level - 1]
                    elem, port = divmod(rel // self.parallel[level - 1], self.up[level - 1])
                    return f"L{level - 1}[{elem}] {direction} port {port} cable {k}"
        raise ValueError(f"link id out of range: {link}")

    def to_text(self) -> str:
        text = "fattree:{};{};{};{}".format(
            self.levels,
            ",".join(map(str, self.down)),
            ",".join(map(str, self.up)),
            ",".join(map(str, self.parallel)),
        )
        if self.cores_per_node != 1:
            text += f":t={self.cores_per_node}"
        return text

    def with_cores(self, cores_per_node: int) -> FatTreeNetwork:
        return FatTreeNetwork(self.down, self.up, self.parallel, cores_per_node)

    def split_coordinates(self, nodes) -> np.ndarray:
        # Leaves are numbered so that subtrees are contiguous; the index is the only axis.
        return np.asarray(nodes, dtype=np.int64)[:, None]


@dataclass(frozen=True)
class DragonflyNetwork:
    """A canonical dragonfly: ``groups`` of ``routers`` all-to-all connected inside the group,
    ``nodes`` per router, ``global_links`` per router to other groups.

    Global port ``q = r*h + k`` of group i (router r, port k) connects to group
    ``(i + 1 + q mod (g-1)) mod g``, the k-th port of group i towards group j (in port
    order) to the k-th port of j towards i; requires ``routers*global_links`` to be a multiple of
    ``groups-1`` so every group pair has the same number of parallel global links.
    Links: local link router r -> router r' (same group) has id ``r*(a-1) + j`` where j is r''s
    index among the other routers of the group; global port (r, k) has id
    ``groups*routers*(routers-1) + r*h + k``. Node-router (terminal) links are not modelled.
    """

    groups: int
    routers: int
    nodes: int
    global_links: int
    cores_per_node: int = 1

    def __post_init__(self):
        for name in ("groups", "routers", "nodes", "global_links", "cores_per_node"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"dragonfly {name}: expected >= 1, got {getattr(self, name)}")
        if self.groups > 1 and (self.routers * self.global_links) % (self.groups - 1):
            raise ValueError(
                f"dragonfly: routers*global_links ({self.routers * self.global_links}) must be a "
                f"multiple of groups-1 ({self.groups - 1}) so that every pair of groups is "
                "joined by the same number of global links"
            )

    kind = "dragonfly"
    default_routing = "minimal"

    @property
    def num_routers(self) -> int:
        return self.groups * self.routers

    @property
    def num_nodes(self) -> int:
        return self.num_routers * self.nodes

    @property
    def num_slots(self) -> int:
        return self.num_nodes * self.cores_per_node

    @property
    def local_links(self) -> int:
        return self.num_routers * (self.routers - 1)

    @property
    def num_links(self) -> int:
        return self.local_links + self.num_routers * self.global_links

    @property
    def parallel_global(self) -> int:
        """Global links joining each ordered pair of groups."""
        return 0 if self.groups == 1 else self.routers * self.global_links // (self.groups - 1)

    def router_of(self, nodes) -> np.ndarray:
        return np.asarray(nodes, dtype=np.int64) // self.nodes

    def local_link(self, src_router, dst_router) -> np.ndarray:
        """Ids of local links src_router -> dst_router (same group, different routers)."""
        src_router = np.asarray(src_router, dtype=np.int64)
        a = self.routers
        j = np.asarray(dst_router, dtype=np.int64) % a
        i = src_router % a
        return src_router * (a - 1) + np.where(j < i, j, j - 1)

    def global_ports(self, src_group, dst_group) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each (src_group, dst_group) pair and each parallel cable: (gateway router,
        global link id, landing router); arrays of shape (n, parallel_global)."""
        g, h = self.groups, self.global_links
        src_group = np.asarray(src_group, dtype=np.int64)[:, None]
        dst_group = np.asarray(dst_group, dtype=np.int64)[:, None]
        offset = np.mod(dst_group - src_group - 1, g)  # which of the g-1 other groups
        rounds = np.arange(self.parallel_global, dtype=np.int64)[None, :]
        port = rounds * (g - 1) + offset
        gateway = src_group * self.routers + port // h
        link = self.local_links + gateway * h + port % h
        peer_port = rounds * (g - 1) + (g - 2 - offset)
        landing = dst_group * self.routers + peer_port // h
        return gateway, link, landing

    def hop_distance(self, src, dst) -> np.ndarray:
        """Minimal hops between nodes, averaged over the parallel global links."""
        rs, rd = self.router_of(src), self.router_of(dst)
        gs, gd = rs // self.routers, rd // self.routers
        rs, rd = np.broadcast_arrays(rs, rd)
        gs, gd = np.broadcast_arrays(gs, gd)
        hops = np.where(rs == rd, 0.0, 1.0)
        other = gs != gd
        if other.any() and self.groups > 1:
            gw, _, land = self.global_ports(gs[other], gd[other])
            extra = (gw != rs[other][:, None]).astype(float) + (land != rd[other][:, None])
            hops = hops.astype(float)
            hops[other] = 1.0 + extra.mean(axis=1)
        return hops

    def link_exists(self) -> np.ndarray:
        return np.ones(self.num_links, dtype=bool)

    def link_name(self, link: int) -> str:
        link = int(link)
        if link < self.local_links:
            r, j = divmod(link, self.routers - 1)
            i = r % self.routers
            target = j if j < i else j + 1
            return f"g{r // self.routers} r{i} -> r{target} (local)"
        r, k = divmod(link - self.local_links, self.global_links)
        return f"g{r // self.routers} r{r % self.routers} global port {k}"

    def to_text(self) -> str:
        text = f"dragonfly:{self.groups},{self.routers},{self.nodes},{self.global_links}"
        if self.cores_per_node != 1:
            text += f":t={self.cores_per_node}"
        return text

    def with_cores(self, cores_per_node: int) -> DragonflyNetwork:
        return DragonflyNetwork(
            self.groups, self.routers, self.nodes, self.global_links, cores_per_node
        )

    def split_coordinates(self, nodes) -> np.ndarray:
        return np.asarray(nodes, dtype=np.int64)[:, None]


Network = TorusNetwork | FatTreeNetwork | DragonflyNetwork

# Bounds on what one evaluation may allocate: per-link load arrays are (rows, num_links)
# float64, so 2^25 links keep them near a quarter GiB; the largest machines built have
# ~10^5 nodes.
MAX_NODES = 1 << 22
MAX_LINKS = 1 << 25
MAX_CORES_PER_NODE = 1 << 16


# --------------------------------------------------------------------------------------------
# The registry of network kinds: one entry per kind, read by parse_network, the command's
# help, the default candidate mappings and the docs' table (checked by a test).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkKind:
    """How one kind of network is written and built.

    ``parse(kind, shape, options, text)`` builds the network (1 core per node) from the text
    after ``KIND:`` up to the first option (``shape``) and the ``key=value`` options, popping
    the options it understands (the rest are refused); it raises ValueError naming ``text``.
    ``default_candidates`` is the ``--candidates`` list used when none is given.
    """

    name: str
    parse: Callable[[str, str, dict[str, str], str], Network]
    example: str
    summary: str
    default_candidates: str = "block,cyclic,greedy,bisection,multilevel"


NETWORK_KINDS: dict[str, NetworkKind] = {}


def register_network_kind(kind: NetworkKind) -> NetworkKind:
    """Adds a kind (or replaces the one of the same name); returns it."""
    NETWORK_KINDS[kind.name] = kind
    return kind


def _int_list(text: str, what: str) -> tuple[int, ...]:
    parts = text.split(",")
    return tuple(_positive_int(p.strip(), what) for p in parts)


def _parse_torus(kind: str, shape: str, options: dict[str, str], text: str) -> Network:
    if not shape:
        raise ValueError(f"network {text!r}: missing dimensions, e.g. {kind}:8x16x32")
    dims = tuple(_positive_int(d.strip(), f"network {text!r}: dimension") for d in shape.split("x"))
    dimension_letters(len(dims))  # refuses more dimensions than letters
    wrap = (kind == "torus",) * len(dims)
    if "wrap" in options:
        flags = options.pop("wrap").split(",")
        if len(flags) != len(dims) or any(f not in ("0", "1") for f in flags):
            raise ValueError(f"network {text!r}: wrap= needs {len(dims)} comma-separated 0/1 flags")
        wrap = tuple(f == "1" for f in flags)
    return TorusNetwork(dims, wrap)


def _parse_fattree(kind: str, shape: str, options: dict[str, str], text: str) -> Network:
    fields = shape.split(";")
    if len(fields) != 4:
        raise ValueError(
            f"network {text!r}: fattree expects LEVELS;DOWN;UP;PARALLEL, e.g. fattree:2;4,4;1,2;1,2"
        )
    levels = _positive_int(fields[0], f"network {text!r}: levels")
    down = _int_list(fields[1], f"network {text!r}: down links")
    up = _int_list(fields[2], f"network {text!r}: up links")
    par = _int_list(fields[3], f"network {text!r}: parallel links")
    if not (len(down) == len(up) == len(par) == levels):
        raise ValueError(
            f"network {text!r}: LEVELS is {levels} but DOWN/UP/PARALLEL have "
            f"{len(down)}/{len(up)}/{len(par)} values"
        )
    return FatTreeNetwork(down, up, par)


def _parse_dragonfly(kind: str, shape: str, options: dict[str, str], text: str) -> Network:
    names = {"g": "groups", "a": "routers", "p": "nodes", "h": "global_links"}
    long_names = {"groups": "g", "routers": "a", "nodes": "p", "global": "h"}
    values: dict[str, int] = {}
    items = [s.strip() for s in shape.split(",")]
    if all("=" not in s for s in items):
        if len(items) != 4:
            raise ValueError(
                f"network {text!r}: dragonfly expects GROUPS,ROUTERS,NODES,GLOBAL, e.g. "
                "dragonfly:9,4,2,2"
            )
        values = dict(
            zip("gaph", (_positive_int(s, f"network {text!r}") for s in items), strict=True)
        )
    else:
        for s in items:
            key, _, value = s.partition("=")
            key = long_names.get(key.strip().lower(), key.strip().lower())
            if key not in names:
                raise ValueError(
                    f"network {text!r}: unknown dragonfly field {key!r} "
                    "(expected g/groups, a/routers, p/nodes, h/global)"
                )
            if key in values:  # the last would win, silently
                raise ValueError(f"network {text!r}: dragonfly field {names[key]} is given twice")
            values[key] = _positive_int(value, f"network {text!r}: {names[key]}")
        missing = [names[k] for k in "gaph" if k not in values]
        if missing:
            raise ValueError(f"network {text!r}: missing dragonfly field(s) {missing}")
    return DragonflyNetwork(values["g"], values["a"], values["p"], values["h"])


_PERMUTATIONS = "permutations"
register_network_kind(
    NetworkKind(
        "torus",
        _parse_torus,
        "torus:8x16x32",
        "N-d torus; :wrap=1,1,0 per dimension",
        _PERMUTATIONS,
    )
)
register_network_kind(
    NetworkKind("mesh", _parse_torus, "mesh:4x4", "N-d mesh (no wrap-around links)", _PERMUTATIONS)
)
register_network_kind(
    NetworkKind("fattree", _parse_fattree, "fattree:2;4,4;1,2;1,2", "XGFT fat tree")
)
register_network_kind(
    NetworkKind("dragonfly", _parse_dragonfly, "dragonfly:9,4,2,2", "canonical dragonfly")
)


def check_network_size(network, text: str = "") -> None:
    """Refuses networks whose per-link arrays would not fit in memory (ValueError)."""
    what = f"network {text!r}" if text else f"network {network.to_text()!r}"
    if network.num_nodes > MAX_NODES:
        raise ValueError(f"{what}: {network.num_nodes:,} nodes exceed the limit of {MAX_NODES:,}")
    if network.num_links > MAX_LINKS:
        raise ValueError(f"{what}: {network.num_links:,} links exceed the limit of {MAX_LINKS:,}")


def parse_network(text: str) -> Network:
    """Parse the one-line network form (see the module docstring); ValueError on bad input."""
    if not isinstance(text, str) or ":" not in text:
        raise ValueError(
            f"network {text!r}: expected KIND:SHAPE, e.g. "
            + ", ".join(kind.example for kind in NETWORK_KINDS.values())
        )
    kind_name, _, rest = text.strip().partition(":")
    kind_name = kind_name.strip().lower()
    kind = NETWORK_KINDS.get(kind_name)
    if kind is None:
        raise ValueError(
            f"network {text!r}: unknown network kind {kind_name!r} "
            f"(expected {', '.join(NETWORK_KINDS)})"
        )
    parts = rest.split(":")
    shape, options = parts[0].strip(), {}
    for opt in parts[1:]:
        key, eq, value = opt.partition("=")
        if not eq:
            raise ValueError(f"network {text!r}: option {opt!r} should be key=value")
        key = key.strip().lower()
        if key in options:  # the last would win, silently
            raise ValueError(f"network {text!r}: option {key}= is given twice")
        options[key] = value.strip()
    if "t" in options and "cores" in options:
        raise ValueError(f"network {text!r}: t= and cores= both give the cores per node")
    cores = 1
    for key in ("t", "cores"):
        if key in options:
            cores = _positive_int(options.pop(key), f"network {text!r}: cores per node")
    # Sizes are checked from the shape alone before any per-node array is built.
    network = kind.parse(kind_name, shape, options, text)
    if options:
        raise ValueError(f"network {text!r}: unknown option(s) {sorted(options)}")
    check_network_size(network, text)
    if cores > MAX_CORES_PER_NODE:
        raise ValueError(
            f"network {text!r}: {cores:,} cores per node exceed the limit of {MAX_CORES_PER_NODE:,}"
        )
    return network.with_cores(cores) if cores != 1 else network
