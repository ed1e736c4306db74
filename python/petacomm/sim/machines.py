"""Named machine profiles for simulated platforms: link and loopback parameters.

A profile gives the bandwidth of one network link direction, the latency of one link (a
message crossing h links pays h latencies), and the loopback link that joins ranks of one
node. ``model`` takes them from a machine model ``petacomm netbench`` measured (inter-node
point-to-point alpha as the link latency and the large-message bandwidth as the link
bandwidth; intra-node the same from the intra-node fit, when the model has one).
"""

from __future__ import annotations

from dataclasses import dataclass

from petacomm.sim.platform import LinkParameters


@dataclass(frozen=True)
class MachineProfile:
    name: str
    summary: str
    link: LinkParameters
    loopback: LinkParameters


# Published figures of the studies' machines: Cray XT4 SeaStar2 links carry 3.8 GB/s each
# way, MPI latency ~5 us; Blue Gene/P torus links 425 MB/s each way, MPI latency ~3 us.
# A node's memory copy (loopback) is taken as 4x the link bandwidth at a tenth of the latency.
MACHINES = {
    "xt4": MachineProfile(
        "xt4",
        "Cray XT4-like: 3.8 GB/s, 5 us per link; loopback 15.2 GB/s, 0.5 us",
        LinkParameters(3.8e9, 5e-6),
        LinkParameters(15.2e9, 0.5e-6),
    ),
    "bgp": MachineProfile(
        "bgp",
        "Blue Gene/P-like: 425 MB/s, 3 us per link; loopback 1.7 GB/s, 0.3 us",
        LinkParameters(425e6, 3e-6),
        LinkParameters(1.7e9, 0.3e-6),
    ),
}


def from_model(path=None) -> MachineProfile:
    """The profile of a netbench machine model (``path``, or the one netbench saved): the
    small-message alpha (8 B) as the link latency and the large-message (1 MiB) bandwidth as
    the link bandwidth, inter-node; the loopback from the intra-node fit when measured, else
    4x the bandwidth at a tenth of the latency."""
    from petacomm.model import load
    from petacomm.topology.flow_model import links_from_model

    model = load(path)
    links = links_from_model(model)
    return MachineProfile(
        "model",
        f"netbench model ({model.source})",
        LinkParameters(links.bandwidth, links.latency),
        LinkParameters(links.loopback_bandwidth, links.loopback_latency),
    )
