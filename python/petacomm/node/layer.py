"""NodeLayer: the node-aware messaging layer for Python programs (mpi4py).

Creation, ``close`` and the collectives are collective over the communicator, like the C API
they wrap. Messages are numpy arrays (any contiguous array; lengths in bytes); arrays from
``alloc`` live in the node heap, where the layer moves them in one copy.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from petacomm import native
from petacomm.dtypes import codes_by_dtype, refusal
from petacomm.errors import PetacommError
from petacomm.node import _capi


@dataclass(frozen=True)
class Layout:
    rank: int
    size: int
    node: int
    nodes: int
    local_rank: int
    local_size: int
    leader: int
    node_size: int
    domains: int


@dataclass(frozen=True)
class Status:
    source: int
    tag: int
    bytes: int


def _contiguous(array, what: str, writable: bool = False) -> np.ndarray:
    if not isinstance(array, np.ndarray):
        raise ValueError(f"{what}: expected a numpy array, got {type(array).__name__}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{what}: the array must be C-contiguous")
    if writable and not array.flags.writeable:
        raise ValueError(f"{what}: the array is read-only")
    return array


def _pointer(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data if array.nbytes else None)


def _scope(scope: str) -> int:
    if scope not in _capi.SCOPES:
        raise ValueError(f"scope: unknown {scope!r} (expected 'all' or 'node')")
    return _capi.SCOPES[scope]


_DTYPE_CODES = codes_by_dtype(_capi.DTYPES)
_REDUCIBLE_CODES = codes_by_dtype({name: _capi.DTYPES[name] for name in _capi.REDUCIBLE})
# A code the library refuses: passed for an argument refused here, so that the library's
# first round of the collective fails it on every rank together instead of this rank
# leaving the others waiting (docs/node-layer.md, "Argument errors are agreed").
_REFUSED = -1


def _dtype(array: np.ndarray, reducible: bool) -> tuple[int, str | None]:
    """(the library's code of the array's dtype, None), or (_REFUSED, why) for any other.
    A reduction computes with the values, so it refuses them in the other byte order too
    (petacomm.dtypes); a copy (bcast, gather) moves their bytes as they are."""
    code = (_REDUCIBLE_CODES if reducible else _DTYPE_CODES).get(array.dtype)
    if code is None and not reducible:
        code = _capi.DTYPES.get(array.dtype.name)
    if code is None:
        allowed = _capi.REDUCIBLE if reducible else tuple(_capi.DTYPES)
        return _REFUSED, f"array: {refusal(array.dtype, allowed)}"
    return code, None


def _op(op: str) -> tuple[int, str | None]:
    """(the library's code of ``op``, None), or (_REFUSED, why)."""
    if op not in _capi.OPS:
        return _REFUSED, f"op: unknown {op!r} (expected {', '.join(_capi.OPS)})"
    return _capi.OPS[op], None


def _check_collective(lib, status: int, call: str, *refused: str | None) -> None:
    """_capi.check of a collective to which this rank passed _REFUSED for the arguments it
    refused (``refused``: their reasons, None for those it took): the library failed the
    call on every rank, and this rank says why in its own words."""
    reasons = [r for r in refused if r is not None]
    if reasons and status != native.SUCCESS:
        raise ValueError(reasons[0])
    _capi.check(lib, status, call)


class Request:
    """A non-blocking send or receive; keeps its array alive until complete."""

    def __init__(self, layer: NodeLayer, handle: ctypes.c_void_p, array: np.ndarray):
        self._layer, self._handle, self._array = layer, handle, array

    def wait(self) -> Status:
        status = _capi.Status()
        lib = self._layer._lib
        _capi.check(
            lib,
            lib.petacomm_node_wait(
                self._layer._node, ctypes.byref(self._handle), ctypes.byref(status)
            ),
            "wait",
        )
        self._array = None
        return Status(status.source, status.tag, status.bytes)

    def test(self) -> Status | None:
        status, done = _capi.Status(), ctypes.c_int(0)
        lib = self._layer._lib
        _capi.check(
            lib,
            lib.petacomm_node_test(
                self._layer._node,
                ctypes.byref(self._handle),
                ctypes.byref(done),
                ctypes.byref(status),
            ),
            "test",
        )
        if not done.value:
            return None
        self._array = None
        return Status(status.source, status.tag, status.bytes)


class NodeFile:
    """A file the node's servant holds open for the ranks of the node (positional I/O)."""

    def __init__(self, layer: NodeLayer, handle: int):
        self._layer, self._handle = layer, handle

    def write_at(self, offset: int, data) -> None:
        array = _contiguous(np.asarray(data), "data")
        lib = self._layer._lib
        _capi.check(
            lib,
            lib.petacomm_node_file_write_at(
                self._layer._node, self._handle, offset, _pointer(array), array.nbytes
            ),
            "write_at",
        )

    def read_at(self, offset: int, nbytes: int) -> bytes:
        buffer = np.empty(nbytes, dtype=np.uint8)
        got = ctypes.c_int64(0)
        lib = self._layer._lib
        _capi.check(
            lib,
            lib.petacomm_node_file_read_at(
                self._layer._node, self._handle, offset, _pointer(buffer), nbytes, ctypes.byref(got)
            ),
            "read_at",
        )
        return buffer[: got.value].tobytes()

    def close(self) -> None:
        if self._handle is None:
            return
        lib = self._layer._lib
        _capi.check(lib, lib.petacomm_node_file_close(self._layer._node, self._handle), "close")
        self._handle = None


class NodeLayer:
    """The layer over ``comm`` (an mpi4py communicator). ``node_size``: ranks per virtual
    node (0: PETACOMM_NODE_SIZE if set, else every shared-memory domain is one node); the
    other options are those of ``petacomm_node_options`` (docs/node-layer.md)."""

    def __init__(self, comm, *, node_size: int = 0, **options):
        self._lib = _capi.library()
        handle = native.communicator_handle(comm)  # without a communicator nothing can be agreed
        opts = _capi.Options()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_options_default(ctypes.byref(opts)),
            "options_default",
        )
        # An option refused here still takes part in the library's collective check (as its
        # caller_error), so every rank fails together instead of the others waiting.
        refused = None
        fields = dict(_capi.Options._fields_)
        for name, value in {"node_size": node_size, **options}.items():
            try:
                if name not in fields:
                    raise ValueError("not an option of the node layer")
                setattr(opts, name, value)
            except (ValueError, TypeError, OverflowError) as err:
                refused = type(err)(f"{name}: {err}")
                break
        self._node = _capi.Node()
        self._heap_arrays: dict[int, np.ndarray] = {}
        status = self._lib.petacomm_node_create_ext_f(
            handle,
            ctypes.byref(opts),
            native.caller_error(refused),
            ctypes.byref(self._node),
        )
        if refused is not None and status != native.SUCCESS:
            raise refused
        _capi.check(self._lib, status, "create")

    # -- lifetime ---------------------------------------------------------------------
    def close(self) -> None:
        """Collective: frees the layer (its heap arrays become invalid)."""
        if self._node:
            _capi.check(self._lib, self._lib.petacomm_node_free(ctypes.byref(self._node)), "free")
            self._heap_arrays.clear()

    def __enter__(self) -> NodeLayer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _handle(self):
        if not self._node:
            raise PetacommError("the node layer is closed")
        return self._node

    # -- domains ----------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        out = _capi.Layout()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_get_layout(self._handle(), ctypes.byref(out)),
            "layout",
        )
        return Layout(*(getattr(out, name) for name, _ in _capi.Layout._fields_))

    def locate(self, rank: int) -> tuple[int, int]:
        node, local = ctypes.c_int(), ctypes.c_int()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_locate(
                self._handle(), rank, ctypes.byref(node), ctypes.byref(local)
            ),
            "locate",
        )
        return node.value, local.value

    def comms(self):
        """The layer's node and leader communicators as mpi4py objects (leader: None off the
        leaders). They belong to the layer: do not free them."""
        from mpi4py import MPI

        node, leaders = ctypes.c_int(), ctypes.c_int()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_comms_f(
                self._handle(), ctypes.byref(node), ctypes.byref(leaders)
            ),
            "comms",
        )
        leader_comm = MPI.Comm.f2py(leaders.value)
        return MPI.Comm.f2py(node.value), (None if leader_comm == MPI.COMM_NULL else leader_comm)

    # -- node heap ----------------------------------------------------------------------
    def alloc(self, shape, dtype=np.uint8) -> np.ndarray:
        """A zeroed array in the node heap (an RPC to the servant); release with dealloc."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        pointer = ctypes.c_void_p()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_alloc(
                self._handle(), count * dtype.itemsize, ctypes.byref(pointer)
            ),
            "alloc",
        )
        raw = (ctypes.c_char * max(count * dtype.itemsize, 1)).from_address(pointer.value)
        array = np.frombuffer(raw, dtype=np.uint8, count=count * dtype.itemsize)
        array = array.view(dtype).reshape(shape)
        array[...] = 0
        self._heap_arrays[pointer.value] = array
        return array

    def dealloc(self, array: np.ndarray) -> None:
        address = array.__array_interface__["data"][0]
        if address not in self._heap_arrays:
            raise ValueError("array: not an array from NodeLayer.alloc (or released already)")
        _capi.check(
            self._lib,
            self._lib.petacomm_node_dealloc(self._handle(), ctypes.c_void_p(address)),
            "dealloc",
        )
        del self._heap_arrays[address]

    def memory_space(self, array: np.ndarray) -> str:
        space = ctypes.c_int()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_memory_space_of(
                self._handle(), _pointer(array), array.nbytes, ctypes.byref(space)
            ),
            "memory_space",
        )
        return _capi.SPACES[space.value]

    # -- point-to-point -------------------------------------------------------------------
    def send(self, array, dest: int, tag: int = 0) -> None:
        array = _contiguous(array, "array")
        _capi.check(
            self._lib,
            self._lib.petacomm_node_send(self._handle(), _pointer(array), array.nbytes, dest, tag),
            "send",
        )

    def recv(self, array, source: int, tag: int = _capi.ANY_TAG) -> Status:
        array = _contiguous(array, "array", writable=True)
        status = _capi.Status()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_recv(
                self._handle(), _pointer(array), array.nbytes, source, tag, ctypes.byref(status)
            ),
            "recv",
        )
        return Status(status.source, status.tag, status.bytes)

    def isend(self, array, dest: int, tag: int = 0) -> Request:
        array = _contiguous(array, "array")
        handle = _capi.Request()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_isend(
                self._handle(), _pointer(array), array.nbytes, dest, tag, ctypes.byref(handle)
            ),
            "isend",
        )
        return Request(self, handle, array)

    def irecv(self, array, source: int, tag: int = _capi.ANY_TAG) -> Request:
        array = _contiguous(array, "array", writable=True)
        handle = _capi.Request()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_irecv(
                self._handle(), _pointer(array), array.nbytes, source, tag, ctypes.byref(handle)
            ),
            "irecv",
        )
        return Request(self, handle, array)

    def iprobe(self, source: int, tag: int = _capi.ANY_TAG) -> Status | None:
        status, found = _capi.Status(), ctypes.c_int()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_iprobe(
                self._handle(), source, tag, ctypes.byref(found), ctypes.byref(status)
            ),
            "iprobe",
        )
        return Status(status.source, status.tag, status.bytes) if found.value else None

    def progress(self) -> None:
        _capi.check(self._lib, self._lib.petacomm_node_progress(self._handle()), "progress")

    # -- collectives ------------------------------------------------------------------------
    def barrier(self, scope: str = "all") -> None:
        _capi.check(
            self._lib, self._lib.petacomm_node_barrier(self._handle(), _scope(scope)), "barrier"
        )

    def bcast(self, array, root: int, scope: str = "all") -> None:
        """Broadcasts ``array`` (in place) from ``root``."""
        array = _contiguous(array, "array", writable=True)
        dtype, refused = _dtype(array, False)
        _check_collective(
            self._lib,
            self._lib.petacomm_node_bcast(
                self._handle(),
                _pointer(array),
                array.size,
                dtype,
                root,
                _scope(scope),
            ),
            "bcast",
            refused,
        )

    def allreduce(self, array, op: str = "sum", scope: str = "all") -> np.ndarray:
        array = _contiguous(np.asarray(array), "array")
        out = np.empty_like(array)
        (dtype, bad_dtype), (code, bad_op) = _dtype(array, True), _op(op)
        _check_collective(
            self._lib,
            self._lib.petacomm_node_allreduce(
                self._handle(),
                _pointer(array),
                _pointer(out),
                array.size,
                dtype,
                code,
                _scope(scope),
            ),
            "allreduce",
            bad_dtype,
            bad_op,
        )
        return out

    def reduce(self, array, root: int, op: str = "sum", scope: str = "all") -> np.ndarray | None:
        """The reduction on ``root`` (a rank, or a local rank for scope 'node'); None elsewhere."""
        array = _contiguous(np.asarray(array), "array")
        out = np.empty_like(array)
        (dtype, bad_dtype), (code, bad_op) = _dtype(array, True), _op(op)
        _check_collective(
            self._lib,
            self._lib.petacomm_node_reduce(
                self._handle(),
                _pointer(array),
                _pointer(out),
                array.size,
                dtype,
                code,
                root,
                _scope(scope),
            ),
            "reduce",
            bad_dtype,
            bad_op,
        )
        return out if self._is_root(root, scope) else None

    def gather(self, array, root: int, scope: str = "all") -> np.ndarray | None:
        """Every rank's ``array`` stacked in rank order on ``root``; None elsewhere."""
        array = _contiguous(np.asarray(array), "array")
        layout = self.layout
        ranks = layout.size if scope == "all" else layout.local_size
        out = np.empty((ranks, *array.shape), dtype=array.dtype)
        dtype, refused = _dtype(array, False)
        _check_collective(
            self._lib,
            self._lib.petacomm_node_gather(
                self._handle(),
                _pointer(array),
                array.size,
                dtype,
                _pointer(out),
                root,
                _scope(scope),
            ),
            "gather",
            refused,
        )
        return out if self._is_root(root, scope) else None

    def _is_root(self, root: int, scope: str) -> bool:
        layout = self.layout
        return (layout.rank if scope == "all" else layout.local_rank) == root

    # -- the servant ------------------------------------------------------------------------
    def open(self, path, mode: str = "r") -> NodeFile:
        """A per-node file through the servant. mode: 'r', 'w' (create, truncate on the node's
        first open), 'w+' (the same, and read), 'r+' (read and write), 'a' (create, never
        truncate; writes go to the offsets given)."""
        flags = {
            "r": _capi.FILE_READ,
            "w": _capi.FILE_WRITE | _capi.FILE_CREATE | _capi.FILE_TRUNCATE,
            "w+": _capi.FILE_READ | _capi.FILE_WRITE | _capi.FILE_CREATE | _capi.FILE_TRUNCATE,
            "r+": _capi.FILE_READ | _capi.FILE_WRITE,
            "a": _capi.FILE_WRITE | _capi.FILE_CREATE,
        }
        if mode not in flags:
            raise ValueError(f"mode: unknown {mode!r} (expected r, w, w+, r+ or a)")
        handle = ctypes.c_int64()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_file_open(
                self._handle(), str(path).encode(), flags[mode], ctypes.byref(handle)
            ),
            "open",
        )
        return NodeFile(self, handle.value)

    # -- what it costs ------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        out = _capi.Counters()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_get_counters(self._handle(), ctypes.byref(out)),
            "counters",
        )
        return {name: getattr(out, name) for name in _capi.COUNTER_NAMES}

    def memory(self) -> dict[str, int]:
        out = _capi.Memory()
        _capi.check(
            self._lib,
            self._lib.petacomm_node_get_memory(self._handle(), ctypes.byref(out)),
            "memory",
        )
        return {name: getattr(out, name) for name in _capi.MEMORY_NAMES}
