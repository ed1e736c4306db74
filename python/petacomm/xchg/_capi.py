"""ctypes declarations of native/include/petacomm/xchg.h (and core.h's strategy info).

The structures mirror the C header by hand; tests/xchg/test_binding_layout.py compiles a C
program that prints every struct's sizeof and each field's offsetof and compares them with
:data:`STRUCTS`, so a header change cannot silently corrupt memory. Strategy names and
options are not copied here: petacomm.xchg.registry reads them from the native registry.
"""

from __future__ import annotations

import ctypes
from functools import cache

from petacomm.errors import PetacommError
from petacomm.native import (  # noqa: F401 - core.h, also used through this module
    ERR_ARG,
    SUCCESS,
    StrategyInfo,
    check,
)

HUB_LEVELS = 32  # PETACOMM_XCHG_HUB_LEVELS
P2P_PIECES = 8  # PETACOMM_XCHG_P2P_PIECES

DTYPES = {  # numpy dtype name -> petacomm_xchg_dtype
    "float32": 0,
    "float64": 1,
    "int32": 2,
    "int64": 3,
    "complex64": 4,
    "complex128": 5,
}
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3}


class CostParams(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_double)
        for name in (
            "p2p_alpha",
            "p2p_beta",
            "allreduce_alpha",
            "allreduce_beta",
            "allgather_alpha",
            "allgather_beta",
            "alltoallv_alpha",
            "alltoallv_beta",
            "local_beta",
        )
    ]


class P2PCurve(ctypes.Structure):
    _fields_ = [
        ("pieces", ctypes.c_int),
        ("from_bytes", ctypes.c_double * P2P_PIECES),
        ("alpha", ctypes.c_double * P2P_PIECES),
        ("beta", ctypes.c_double * P2P_PIECES),
    ]


class Options(ctypes.Structure):
    _fields_ = [
        ("strategy", ctypes.c_char_p),
        ("transport", ctypes.c_char_p),
        ("chunk_keys", ctypes.c_int64),
        ("allgather_keys", ctypes.c_int64),
        ("hub_threshold", ctypes.c_int),
        ("deterministic", ctypes.c_int),
        ("autotune", ctypes.c_int),
        ("send_window", ctypes.c_int),
        ("plan_dtype", ctypes.c_int),
        ("plan_k", ctypes.c_int),
        ("cost", CostParams),
    ]


class MinAvgMax(ctypes.Structure):
    _fields_ = [("min", ctypes.c_double), ("avg", ctypes.c_double), ("max", ctypes.c_double)]


class Stats(ctypes.Structure):
    _fields_ = [
        ("messages", MinAvgMax),
        ("bytes", MinAvgMax),
        ("memory_bytes", MinAvgMax),
        ("setup_seconds", ctypes.c_double),
        ("setup_wall_seconds", MinAvgMax),
        ("setup_compute_seconds", MinAvgMax),
        ("setup_mpi_seconds", MinAvgMax),
    ]


RANK_STATS_SCALARS = (
    "n_local",
    "n_unique",
    "n_shared",
    "pair_partners",
    "pair_values",
    "owner_sends",
    "owner_send_values",
    "owner_recvs",
    "owner_recv_values",
    "owned_keys",
    "dense_chunks",
)


# The node fields of petacomm_xchg_rank_stats (strategy node-aware), in the header's order.
NODE_STATS = (
    "nodes",
    "node_ranks",
    "node_leader",
    "node_members",
    "node_member_values",
    "node_union_keys",
    "node_partners",
    "node_send_values",
    "node_recv_values",
)


class RankStats(ctypes.Structure):
    _fields_ = (
        [(name, ctypes.c_int64) for name in RANK_STATS_SCALARS]
        + [
            ("hub_pair_partners", ctypes.c_int64 * HUB_LEVELS),
            ("hub_pair_values", ctypes.c_int64 * HUB_LEVELS),
            ("hub_keys", ctypes.c_int64 * HUB_LEVELS),
            ("directory_send_msgs", ctypes.c_int64),
            ("directory_send_keys", ctypes.c_int64),
            ("directory_reply_ints", ctypes.c_int64),
        ]
        + [(name, ctypes.c_int64) for name in NODE_STATS]
    )


class GlobalStats(ctypes.Structure):
    _fields_ = [
        ("ranks", ctypes.c_int64),
        ("distinct_keys", ctypes.c_int64),
        ("key_min", ctypes.c_int64),
        ("key_max", ctypes.c_int64),
        ("dense_chunks", ctypes.c_int64),
        ("chunk_keys", ctypes.c_int64),
        ("allgather_keys", ctypes.c_int64),
        ("max_unique", ctypes.c_int64),
        ("multiplicity", ctypes.c_int64 * (HUB_LEVELS + 1)),
    ]


class Prediction(ctypes.Structure):
    _fields_ = [
        ("strategy", ctypes.c_char_p),
        ("execute_seconds", ctypes.c_double),
        ("setup_seconds", ctypes.c_double),
        ("messages", ctypes.c_double),
        ("bytes", ctypes.c_double),
        ("hub_threshold", ctypes.c_int),
        ("hub_keys", ctypes.c_int64),
    ]


# C type name -> its mirror, for the layout test.
STRUCTS = {
    "petacomm_xchg_cost_params": CostParams,
    "petacomm_xchg_p2p_curve": P2PCurve,
    "petacomm_xchg_options": Options,
    "petacomm_xchg_minavgmax": MinAvgMax,
    "petacomm_xchg_stats": Stats,
    "petacomm_xchg_rank_stats": RankStats,
    "petacomm_xchg_global_stats": GlobalStats,
    "petacomm_xchg_prediction": Prediction,
    "petacomm_strategy_info": StrategyInfo,
}

Plan = ctypes.c_void_p
_P = ctypes.POINTER


@cache
def library() -> ctypes.CDLL:
    """libpetacomm with the xchg prototypes declared; raises PetacommError without xchg."""
    from petacomm.native import load_library

    lib = load_library("petacomm")
    if not hasattr(lib, "petacomm_xchg_plan_create_ext_f"):
        raise PetacommError(
            "libpetacomm was built without the xchg family (configure with "
            "-DPETACOMM_FAMILIES including xchg)"
        )
    status, text = ctypes.c_int, ctypes.c_char_p
    protos = {
        "petacomm_xchg_options_default": [_P(Options)],
        "petacomm_xchg_strategy_count": [_P(ctypes.c_int)],
        "petacomm_xchg_strategy_info": [ctypes.c_int, _P(StrategyInfo)],
        "petacomm_xchg_plan_create_ext_f": [
            ctypes.c_int,
            _P(ctypes.c_int64),
            ctypes.c_int64,
            _P(Options),
            _P(P2PCurve),
            text,
            _P(Plan),
        ],
        "petacomm_xchg_plan_free": [_P(Plan)],
        "petacomm_xchg_execute_begin_ext_f": [
            Plan,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            text,
        ],
        "petacomm_xchg_execute_end": [Plan],
        "petacomm_xchg_plan_strategy": [Plan, _P(text)],
        "petacomm_xchg_plan_size": [Plan, _P(ctypes.c_int64)],
        "petacomm_xchg_plan_describe": [Plan, text, ctypes.c_size_t, _P(ctypes.c_size_t)],
        "petacomm_xchg_plan_stats": [Plan, ctypes.c_int, ctypes.c_int, _P(Stats)],
        "petacomm_xchg_model_decide": [
            _P(RankStats),
            ctypes.c_int64,
            _P(GlobalStats),
            _P(CostParams),
            _P(P2PCurve),
            ctypes.c_int64,
            text,
            _P(Prediction),
            ctypes.c_int,
            text,
            ctypes.c_size_t,
            _P(ctypes.c_size_t),
        ],
    }
    for name, argtypes in protos.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = status
    return lib


def default_options() -> Options:
    options = Options()
    lib = library()
    check(lib, lib.petacomm_xchg_options_default(ctypes.byref(options)), "options_default")
    return options
