"""ctypes declarations of native/include/petacomm/node.h (kept field for field in sync)."""

from __future__ import annotations

import ctypes
from functools import cache

from petacomm import native
from petacomm.errors import PetacommError
from petacomm.native import ERR_NOMEM

ANY_TAG = -1
SCOPES = {"all": 0, "node": 1}
DTYPES = {"uint8": 0, "int8": 0, "int32": 1, "int64": 2, "float32": 3, "float64": 4}
REDUCIBLE = ("int32", "int64", "float32", "float64")
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3}
FILE_READ, FILE_WRITE, FILE_CREATE, FILE_TRUNCATE = 1, 2, 4, 8
SPACES = {0: "host-private", 1: "host-window"}


class Options(ctypes.Structure):
    _fields_ = [
        ("node_size", ctypes.c_int),
        ("slots", ctypes.c_int),
        ("slot_bytes", ctypes.c_int64),
        ("descriptors", ctypes.c_int),
        ("coll_bytes", ctypes.c_int64),
        ("heap_bytes", ctypes.c_int64),
        ("aggregate_bytes", ctypes.c_int64),
        ("max_mpi_bytes", ctypes.c_int64),
    ]


class Layout(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_int)
        for name in (
            "rank",
            "size",
            "node",
            "nodes",
            "local_rank",
            "local_size",
            "leader",
            "node_size",
            "domains",
        )
    ]


class Status(ctypes.Structure):
    _fields_ = [("source", ctypes.c_int), ("tag", ctypes.c_int), ("bytes", ctypes.c_int64)]


COUNTER_NAMES = (
    "local_messages",
    "local_bytes",
    "remote_messages",
    "remote_bytes",
    "forwarded_messages",
    "forwarded_bytes",
    "delivered_messages",
    "delivered_bytes",
    "mpi_messages_sent",
    "mpi_bytes_sent",
    "mpi_messages_received",
    "mpi_bytes_received",
    "rpc_served",
    "spilled_messages",
)
MEMORY_NAMES = (
    "segment_bytes",
    "private_bytes",
    "heap_bytes",
    "heap_used_bytes",
    "rank_map_bytes",
)


class Counters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in COUNTER_NAMES]


class Memory(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in MEMORY_NAMES]


# Structures and their C names, for the layout test (tests/foundation/test_binding_layout.py).
STRUCTS = {
    "petacomm_node_options": Options,
    "petacomm_node_layout": Layout,
    "petacomm_node_status": Status,
    "petacomm_node_counters": Counters,
    "petacomm_node_memory": Memory,
}

Node = ctypes.c_void_p
Request = ctypes.c_void_p
_P = ctypes.POINTER
_VP = ctypes.c_void_p
_I = ctypes.c_int
_I64 = ctypes.c_int64


@cache
def library() -> ctypes.CDLL:
    """libpetacomm with the node prototypes declared; raises PetacommError without node."""
    from petacomm.native import load_library

    lib = load_library("petacomm")
    if not hasattr(lib, "petacomm_node_create_ext_f"):
        raise PetacommError(
            "libpetacomm was built without the node family (configure with "
            "-DPETACOMM_FAMILIES including node)"
        )
    protos = {
        "petacomm_node_options_default": [_P(Options)],
        "petacomm_node_create_ext_f": [_I, _P(Options), ctypes.c_char_p, _P(Node)],
        "petacomm_node_free": [_P(Node)],
        "petacomm_node_get_layout": [Node, _P(Layout)],
        "petacomm_node_locate": [Node, _I, _P(_I), _P(_I)],
        "petacomm_node_leader_of": [Node, _I, _P(_I)],
        "petacomm_node_comms_f": [Node, _P(_I), _P(_I)],
        "petacomm_node_alloc": [Node, _I64, _P(_VP)],
        "petacomm_node_dealloc": [Node, _VP],
        "petacomm_node_memory_space_of": [Node, _VP, _I64, _P(_I)],
        "petacomm_node_send": [Node, _VP, _I64, _I, _I],
        "petacomm_node_recv": [Node, _VP, _I64, _I, _I, _P(Status)],
        "petacomm_node_isend": [Node, _VP, _I64, _I, _I, _P(Request)],
        "petacomm_node_irecv": [Node, _VP, _I64, _I, _I, _P(Request)],
        "petacomm_node_wait": [Node, _P(Request), _P(Status)],
        "petacomm_node_test": [Node, _P(Request), _P(_I), _P(Status)],
        "petacomm_node_probe": [Node, _I, _I, _P(Status)],
        "petacomm_node_iprobe": [Node, _I, _I, _P(_I), _P(Status)],
        "petacomm_node_progress": [Node],
        "petacomm_node_barrier": [Node, _I],
        "petacomm_node_bcast": [Node, _VP, _I64, _I, _I, _I],
        "petacomm_node_reduce": [Node, _VP, _VP, _I64, _I, _I, _I, _I],
        "petacomm_node_allreduce": [Node, _VP, _VP, _I64, _I, _I, _I],
        "petacomm_node_gather": [Node, _VP, _I64, _I, _VP, _I, _I],
        "petacomm_node_file_open": [Node, ctypes.c_char_p, _I, _P(_I64)],
        "petacomm_node_file_write_at": [Node, _I64, _I64, _VP, _I64],
        "petacomm_node_file_read_at": [Node, _I64, _I64, _VP, _I64, _P(_I64)],
        "petacomm_node_file_close": [Node, _I64],
        "petacomm_node_get_counters": [Node, _P(Counters)],
        "petacomm_node_get_memory": [Node, _P(Memory)],
    }
    for name, argtypes in protos.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    return lib


def check(lib: ctypes.CDLL, status: int, call: str) -> None:
    """Raises ValueError for bad arguments, MemoryError when the heap is full, PetacommError
    otherwise, with the C message."""
    native.check(lib, status, call, {ERR_NOMEM: MemoryError})
