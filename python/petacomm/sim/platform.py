"""SimGrid platforms and hostfiles from petacomm's networks and mappings.

The platform is one SimGrid ``<cluster>`` built from the same network strings as
``petacomm map`` (``petacomm.topology.network``), so the simulated machine is the modelled one:

* ``torus:AxBxC`` -> ``topology="TORUS" topo_parameters="A,B,C"``; SimGrid numbers the hosts
  with the first dimension fastest, as petacomm does, so host ``node-<i>`` is petacomm's node
  ``i``. SimGrid tori always wrap: meshes and partial wrap-around are refused.
* ``fattree:L;D;U;P`` -> ``topology="FAT_TREE" topo_parameters="L;D;U;P"`` (petacomm's fat
  trees are SimGrid's parameters).
* ``dragonfly:g,a,p,h`` -> ``topology="DRAGONFLY" topo_parameters="g,n;1,1;a,1;p"`` with ``n``
  the global links joining each pair of groups: one chassis of ``a`` all-to-all routers per
  group. SimGrid joins groups i and j through router j of group i and router i of group j
  (all ``n`` links of the pair on that one router pair, so it needs ``a >= g``; fewer
  routers are refused), so a dragonfly's simulated contention may differ from
  ``petacomm map``'s, which spreads a router's ``h`` global links over the groups.

Every network link direction has the link bandwidth and latency (``SPLITDUPLEX``: the two
directions of a cable are separate resources, as in petacomm's link model); messages
between ranks of one host cross the host's loopback link instead. A hostfile names the host
of every rank, one line per rank (SMPI places rank ``i`` on line ``i``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from petacomm.topology.network import DragonflyNetwork, FatTreeNetwork, TorusNetwork

HOST_PREFIX = "node-"
CLUSTER_ID = "machine"


@dataclass(frozen=True)
class LinkParameters:
    """Bandwidth (bytes per second) and latency (seconds) of one link direction."""

    bandwidth: float
    latency: float

    def __post_init__(self):
        if not (math.isfinite(self.bandwidth) and self.bandwidth > 0):
            raise ValueError(f"bandwidth: expected a finite rate > 0 B/s, got {self.bandwidth!r}")
        if not (math.isfinite(self.latency) and self.latency >= 0):
            raise ValueError(f"latency: expected a finite time >= 0 s, got {self.latency!r}")


@dataclass(frozen=True)
class Platform:
    """A network with its link and loopback parameters and the hosts' speed (flop/s)."""

    network: TorusNetwork | FatTreeNetwork | DragonflyNetwork
    link: LinkParameters
    loopback: LinkParameters
    host_speed: float = 1e9

    def __post_init__(self):
        topology_of(self.network)  # refuses networks SimGrid cannot build
        if not (math.isfinite(self.host_speed) and self.host_speed > 0):
            raise ValueError(f"host speed: expected flop/s > 0, got {self.host_speed!r}")

    def xml(self) -> str:
        """The SimGrid platform file (version 4.1)."""
        topology, parameters = topology_of(self.network)
        n = self.network.num_nodes
        attributes = {
            "id": CLUSTER_ID,
            "prefix": HOST_PREFIX,
            "suffix": "",
            "radical": f"0-{n - 1}",
            "speed": f"{float(self.host_speed)!r}f",
            "core": str(self.network.cores_per_node),
            "bw": f"{float(self.link.bandwidth)!r}Bps",
            "lat": f"{float(self.link.latency)!r}s",
            "sharing_policy": "SPLITDUPLEX",
            "loopback_bw": f"{float(self.loopback.bandwidth)!r}Bps",
            "loopback_lat": f"{float(self.loopback.latency)!r}s",
            "topology": topology,
            "topo_parameters": parameters,
        }
        # Imported here: xml.sax pulls in urllib and http (25 ms), and every petacomm command
        # builds simulate's argument parser, which imports this module.
        from xml.sax.saxutils import quoteattr

        cells = " ".join(f"{k}={quoteattr(v)}" for k, v in attributes.items())
        return (
            "<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f"  <!-- petacomm simulate: {self.network.to_text()} -->\n"
            f"  <cluster {cells}/>\n"
            "</platform>\n"
        )


def topology_of(network) -> tuple[str, str]:
    """SimGrid's cluster topology name and topo_parameters for a petacomm network."""
    if isinstance(network, TorusNetwork):
        if not all(network.wrap):
            raise ValueError(
                f"network {network.to_text()!r}: SimGrid's torus wraps around in every "
                "dimension; meshes and partial wrap-around cannot be simulated (use torus:...)"
            )
        return "TORUS", ",".join(str(d) for d in network.dims)
    if isinstance(network, FatTreeNetwork):
        fields = [str(network.levels)] + [
            ",".join(map(str, v)) for v in (network.down, network.up, network.parallel)
        ]
        return "FAT_TREE", ";".join(fields)
    if isinstance(network, DragonflyNetwork):
        if network.routers < network.groups:
            # SimGrid's DragonflyZone puts the link from group i to group j on router j of
            # group i (and back on router i of group j): with fewer routers than groups that
            # index runs into the next group's routers and past the last (SimGrid 3.32
            # crashed with "double free or corruption" on dragonfly:9,4,2,2).
            raise ValueError(
                f"network {network.to_text()!r}: SimGrid's dragonfly links groups i and j "
                f"through router j of group i, so it needs at least as many routers per group "
                f"as groups ({network.routers} routers for {network.groups} groups)"
            )
        between = max(network.parallel_global, 1)
        return (
            "DRAGONFLY",
            f"{network.groups},{between};1,1;{network.routers},1;{network.nodes}",
        )
    raise ValueError(f"network {network!r}: no SimGrid topology for this kind")


def host_name(node: int) -> str:
    return f"{HOST_PREFIX}{int(node)}"


def hostfile(mapping) -> str:
    """One line per rank: the host of its node (a core is any free one of that host)."""
    return "".join(f"{host_name(n)}\n" for n in mapping.node.tolist())
