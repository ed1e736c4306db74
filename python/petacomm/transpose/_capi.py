"""ctypes declarations of native/include/petacomm/transpose.h.

Every structure here is checked field by field against the C compiler's layout in
tests/transpose/test_binding.py (sizeof and offsetof), so a header change cannot silently
corrupt memory.
"""

from __future__ import annotations

import ctypes
from functools import cache

from petacomm.errors import PetacommError
from petacomm.native import (  # noqa: F401 - core.h, also used through this module
    StrategyInfo,
    check,
)

DTYPES = {"float32": 0, "float64": 1, "complex64": 2, "complex128": 3}
UNKNOWN_DTYPE = 99  # what a descriptor carries for a dtype the library does not know
DIRECTIONS = {"forward": 0, "backward": 1}
LAYOUTS = {"z": 0, "y": 1, "x": 2}
VARIANTS = {"plain": 0, "packed": 1, "packed-partial": 2}
PLANNERS = ("estimate", "measure")

_P = ctypes.POINTER


class CostParams(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_double)
        for name in (
            "p2p_alpha",
            "p2p_beta",
            "net_alpha",
            "net_beta",
            "node_link_beta",
            "alltoall_alpha",
            "alltoall_beta",
            "copy_beta",
            "transpose_beta",
            "datatype_beta",
        )
    ]


class Options(ctypes.Structure):
    _fields_ = [
        ("strategy", ctypes.c_char_p),
        ("planner", ctypes.c_char_p),
        ("mask", _P(ctypes.c_ubyte)),
        ("mask_length", ctypes.c_int64),
        ("window", ctypes.c_int),
        ("measure_reps", ctypes.c_int),
        ("node_size", ctypes.c_int),
        ("cost", CostParams),
    ]


class Local(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_int64)
        for name in ("rows_in", "row0_in", "rows_out", "row0_out", "alloc_elements")
    ]


class Array(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * 4),
        ("strides", ctypes.c_int64 * 4),
        ("dtype", ctypes.c_int),
        ("writeable", ctypes.c_int),
    ]


class MinAvgMax(ctypes.Structure):
    _fields_ = [("min", ctypes.c_double), ("avg", ctypes.c_double), ("max", ctypes.c_double)]


class Stats(ctypes.Structure):
    _fields_ = [
        ("messages", MinAvgMax),
        ("bytes", MinAvgMax),
        ("memory_bytes", MinAvgMax),
        ("setup_seconds", ctypes.c_double),
    ]


class Problem(ctypes.Structure):
    _fields_ = [
        ("ranks", ctypes.c_int64),
        ("n0", ctypes.c_int64),
        ("n1", ctypes.c_int64),
        ("batch", ctypes.c_int64),
        ("elem_bytes", ctypes.c_int64),
        ("ranks_per_node", ctypes.c_int64),
        ("mask", _P(ctypes.c_ubyte)),
        ("mask_length", ctypes.c_int64),
    ]


class FilterStats(ctypes.Structure):
    _fields_ = [("applications", ctypes.c_int64)] + [
        (name, ctypes.c_double)
        for name in (
            "fft_phi_seconds",
            "transpose_seconds",
            "fft_chi_seconds",
            "mask_seconds",
            "total_seconds",
            "bytes_sent",
            "messages_sent",
        )
    ]


# Structures and their C names, for the layout test.
STRUCTS = {
    "petacomm_transpose_cost_params": CostParams,
    "petacomm_transpose_options": Options,
    "petacomm_strategy_info": StrategyInfo,
    "petacomm_transpose_local": Local,
    "petacomm_transpose_array": Array,
    "petacomm_transpose_minavgmax": MinAvgMax,
    "petacomm_transpose_stats": Stats,
    "petacomm_transpose_problem": Problem,
    "petacomm_fftfilter_stats": FilterStats,
}

Handle = ctypes.c_void_p
_I64_3 = ctypes.c_int64 * 3
_INT_2 = ctypes.c_int * 2
_I64_2 = ctypes.c_int64 * 2


@cache
def library() -> ctypes.CDLL:
    """libpetacomm with the transpose prototypes declared; PetacommError without the family."""
    from petacomm.native import load_library

    lib = load_library("petacomm")
    if not hasattr(lib, "petacomm_transpose_plan_create_ext_f"):
        raise PetacommError(
            "libpetacomm was built without the transpose family (configure with "
            "-DPETACOMM_FAMILIES including transpose)"
        )
    c_int, i64, vp = ctypes.c_int, ctypes.c_int64, ctypes.c_void_p
    text = [Handle, ctypes.c_char_p, ctypes.c_size_t, _P(ctypes.c_size_t)]
    protos = {
        "petacomm_transpose_options_default": [_P(Options)],
        "petacomm_transpose_strategy_count": [_P(c_int)],
        "petacomm_transpose_strategy_info": [c_int, _P(StrategyInfo)],
        "petacomm_transpose_plan_create_ext_f": [
            c_int,
            i64,
            i64,
            i64,
            c_int,
            _P(Options),
            ctypes.c_char_p,
            _P(Handle),
        ],
        "petacomm_transpose_plan_free": [_P(Handle)],
        "petacomm_transpose_plan_local": [Handle, _P(Local)],
        "petacomm_transpose_execute_array": [Handle, c_int, _P(Array), _P(Array)],
        "petacomm_transpose_plan_strategy": [Handle, _P(ctypes.c_char_p)],
        "petacomm_transpose_plan_describe": text,
        "petacomm_transpose_plan_stats": [Handle, _P(Stats)],
        "petacomm_transpose_model_decide": [
            _P(Problem),
            _P(CostParams),
            ctypes.c_char_p,
            ctypes.c_size_t,
            _P(ctypes.c_size_t),
        ],
        "petacomm_transpose_pencil_create_ext_f": [
            c_int,
            _I64_3,
            _INT_2,
            i64,
            c_int,
            _P(Options),
            ctypes.c_char_p,
            _P(Handle),
        ],
        "petacomm_transpose_pencil_free": [_P(Handle)],
        "petacomm_transpose_pencil_local": [Handle, c_int, _I64_3, _I64_3],
        "petacomm_transpose_pencil_execute_array": [Handle, c_int, c_int, _P(Array), _P(Array)],
        "petacomm_transpose_pencil_describe": text,
        "petacomm_rfft_packed": [i64, i64, vp, vp],
        "petacomm_irfft_packed": [i64, i64, vp, vp],
        "petacomm_fftfilter_create_ext_f": [
            c_int,
            _I64_3,
            _INT_2,
            _I64_2,
            c_int,
            _P(Options),
            ctypes.c_char_p,
            _P(Handle),
        ],
        "petacomm_fftfilter_free": [_P(Handle)],
        "petacomm_fftfilter_local": [Handle, _I64_3, _I64_3],
        "petacomm_fftfilter_apply_array": [Handle, _P(Array), _P(Array)],
        "petacomm_fftfilter_stats_get": [Handle, _P(FilterStats)],
        "petacomm_fftfilter_describe": text,
    }
    for name, argtypes in protos.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    return lib


def default_options() -> Options:
    options = Options()
    lib = library()
    check(lib, lib.petacomm_transpose_options_default(ctypes.byref(options)), "options_default")
    return options


def describe_text(function, handle) -> str:
    """The JSON text a *_describe function writes (two calls: size, then text)."""
    lib = library()
    needed = ctypes.c_size_t()
    check(lib, function(handle, None, 0, ctypes.byref(needed)), "describe")
    buffer = ctypes.create_string_buffer(needed.value)
    check(lib, function(handle, buffer, needed.value, None), "describe")
    return buffer.value.decode()
