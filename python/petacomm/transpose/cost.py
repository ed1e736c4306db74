"""The transpose planner's cost parameters from a machine model.

Point-to-point figures come from the model's ping-pongs (within a node: ``pingpong.intra``,
across nodes: ``pingpong.inter``), MPI_Alltoall's per-message and per-byte figures from
its fitted ``alltoall``. Without a model file the library's defaults stay (see
petacomm/transpose.h), and so do figures a model did not measure (across nodes, alltoall);
a model file without any ping-pong is refused. Local copy and transpose speeds always keep
the library's figures.
"""

from __future__ import annotations

from petacomm.transpose._capi import CostParams, default_options


def cost_params(model) -> CostParams:
    params = default_options().cost
    if model is None or model.source == "defaults":
        return params
    model.required_point_to_point_operation()
    operations = model.operations
    intra = "pingpong.intra" if "pingpong.intra" in operations else None
    inter = "pingpong.inter" if "pingpong.inter" in operations else None
    if intra is None and inter is None and "pingpong" in operations:
        intra = "pingpong"
    if intra:
        params.p2p_alpha, params.p2p_beta = (float(v) for v in model.alpha_beta(intra))
    if inter:
        params.net_alpha, params.net_beta = (float(v) for v in model.alpha_beta(inter))
        params.node_link_beta = params.net_beta
    if "alltoall" in operations:
        params.alltoall_alpha, params.alltoall_beta = (
            float(v) for v in model.alpha_beta("alltoall", 1 << 20)
        )
    return params


def resolve_model(model):
    """As petacomm.xchg takes it: a MachineModel, a model file's path (a path was used as a
    model: AttributeError 'str' object has no attribute 'source'), or None (the measured
    model if present, else the defaults); another type is refused naming ``model``."""
    from petacomm.xchg.cost import resolve_model as resolve

    return resolve(model)
