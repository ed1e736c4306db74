"""``petacomm simulate --predict``: ``petacomm map``'s predicted time of every simulated
mapping beside the simulated one, and how well the two agree.

The prediction uses the simulated machine's own parameters and the routing model that
matches SimGrid's (``dor-simgrid`` on a torus, see docs/simulate.md). Where the routing
lists each message's links (the torus routings, the fat tree's dmodk), it is the flow model
(``topology/flow_model.py``): every message waits its route's latency, then shares the
links by weighted max-min fairness, as SimGrid's CM02 model shares them. Elsewhere it is
the link-load model of ``petacomm map``: a message costs the link latency at its sender
(alpha; beta = 0, since SimGrid's cluster hosts have no injection limit of their own) and
the most loaded link's bytes at the link bandwidth.
"""

from __future__ import annotations

import math
from collections import defaultdict

from petacomm.topology import flow_model
from petacomm.topology.metrics import CostParameters, evaluate_mapping
from petacomm.topology.network import TorusNetwork
from petacomm.topology.pattern_language import parse_pattern
from petacomm.topology.routing import parse_routing


def default_routing(network) -> str:
    return "dor-simgrid" if isinstance(network, TorusNetwork) else network.default_routing


def cost_of(platform, flows: bool) -> CostParameters:
    """The simulated machine's cost: its link latency and bandwidth, and with ``flows`` its
    links and loopback for the flow model."""
    links = None
    if flows:
        links = flow_model.FlowLinks(
            platform.link.bandwidth,
            platform.link.latency,
            platform.loopback.bandwidth,
            platform.loopback.latency,
        )
    return CostParameters(platform.link.latency, 0.0, 1.0 / platform.link.bandwidth, (), links)


def predict(
    records: list[dict], mappings: list, platform, routing_text: str | None
) -> tuple[str, str]:
    """Adds ``predicted_time_s`` to every record that carries a ``pattern`` (its mapping is
    the same-index entry of ``mappings``); returns the names of the routing model and of the
    time model (``max-min flows`` or ``link loads``)."""
    network = platform.network
    routing = parse_routing(routing_text or default_routing(network), network)
    flows = flow_model.supports(routing)
    cost = cost_of(platform, flows)
    models = set()
    for record, mapping in zip(records, mappings, strict=True):
        if record.get("pattern"):
            pattern = parse_pattern(record["pattern"], default_ranks=record["ranks"])
            try:
                metrics = evaluate_mapping(network, routing, pattern, mapping, cost)
                record["prediction_model"] = "max-min flows" if flows else "link loads"
            except flow_model.TooManyMessages as too_many:
                # Too large for the flow model: the link loads price it, and say so.
                metrics = evaluate_mapping(
                    network, routing, pattern, mapping, cost_of(platform, False)
                )
                record["prediction_model"] = f"link loads ({too_many.reason})"
            record["predicted_time_s"] = metrics.predicted_time_s
            models.add(record["prediction_model"].split(" (")[0])
    return routing.describe(network), " and ".join(sorted(models)) or "none"


# Times within this fraction of each other rank as ties (issue 17's rule for comparing
# predicted and simulated orders: closer times are within the simulations' own noise).
TIE_TOLERANCE = 0.005


def _ranks_of(values: list[float], tolerance: float = TIE_TOLERANCE) -> list[float]:
    """Ranks 1..n, ties sharing their mean rank: in ascending order, a value within
    ``tolerance`` (relative) of the first value of the current group joins the group."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        limit = values[order[i]] * (1 + tolerance) if values[order[i]] > 0 else values[order[i]]
        while j + 1 < len(order) and values[order[j + 1]] <= limit:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a: list[float], b: list[float], tolerance: float = TIE_TOLERANCE) -> float:
    """Spearman's rank correlation (Pearson's on the ranks, values within ``tolerance`` of
    each other tied; NaN when either is constant)."""
    ra, rb = _ranks_of(a, tolerance), _ranks_of(b, tolerance)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else math.nan


def agreement(records: list[dict]) -> list[dict]:
    """Per (ranks, variant) with two or more predicted mappings: the rank correlation of
    predicted and simulated times, the predicted best mapping and how far its simulated time
    is from the simulated best, and the range of predicted / simulated."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        if "predicted_time_s" in r:
            groups[(r["ranks"], r["variant"])].append(r)
    out = []
    for (ranks, variant), rows in groups.items():
        if len(rows) < 2:
            continue
        predicted = [r["predicted_time_s"] for r in rows]
        simulated = [r["simulated_time_s"] for r in rows]
        chosen = min(rows, key=lambda r: r["predicted_time_s"])
        best = min(rows, key=lambda r: r["simulated_time_s"])
        ratios = [p / s for p, s in zip(predicted, simulated, strict=True) if s > 0]
        rho = spearman(predicted, simulated)
        out.append(
            {
                "ranks": ranks,
                "variant": variant,
                "mappings": len(rows),
                # None (JSON null) when all predictions or all simulations are equal.
                "spearman": None if math.isnan(rho) else rho,
                "predicted_best": chosen["mapping"],
                "simulated_best": best["mapping"],
                "top_choice_gap": chosen["simulated_time_s"] / best["simulated_time_s"] - 1,
                "predicted_over_simulated": [min(ratios), max(ratios)] if ratios else None,
            }
        )
    return out


def format_agreement(rows: list[dict]) -> str:
    lines = []
    for a in rows:
        low, high = a["predicted_over_simulated"] or (math.nan, math.nan)
        rho = "undefined (equal times)" if a["spearman"] is None else f"{a['spearman']:.3f}"
        lines.append(
            f"{a['ranks']} ranks, {a['variant']}: {a['mappings']} mappings, rank correlation "
            f"{rho}; predicted best {a['predicted_best']} is "
            f"{100 * a['top_choice_gap']:.1f} % slower than the simulated best "
            f"{a['simulated_best']}; predicted/simulated {low:.2f}-{high:.2f}x"
        )
    return "\n".join(lines)
