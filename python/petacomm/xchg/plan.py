"""SparseReducePlan: the Python face of the native sparse key/value reduction.

Creation and execution are collective over the communicator, like the C API they wrap.
Values are numpy arrays aligned with the keys, reduced in place. Arguments found invalid
here are handed to the native call, which agrees on them with the other ranks first.
"""

from __future__ import annotations

import contextlib
import ctypes
import json

import numpy as np

from petacomm.dtypes import codes_by_dtype, numpy_dtype, refusal
from petacomm.errors import PetacommError, integer_argument
from petacomm.native import MAX_REPS, communicator_handle
from petacomm.xchg import _capi

TRANSPORTS = ("p2p", "neighbor", "alltoallv")
_DTYPE_CODES = codes_by_dtype(_capi.DTYPES)


def _dtype_code(dtype, what: str) -> int:
    """The library's code of ``dtype``; ValueError naming ``what`` for any other (a
    byte-swapped one too: see petacomm.dtypes)."""
    dtype = numpy_dtype(dtype, what)
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        raise ValueError(f"{what}: {refusal(dtype, _capi.DTYPES)}")
    return code


def _keys_array(keys) -> np.ndarray:
    """This rank's keys as contiguous int64; ValueError naming the problem."""
    try:
        array = np.asarray(keys)
    except ValueError as err:  # ragged nested sequences
        raise ValueError(f"keys: not an array of integers ({err})") from None
    if array.ndim != 1:
        raise ValueError(f"keys: expected a one-dimensional array, got shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise ValueError(f"keys: expected integers, got dtype {array.dtype}")
    # Unsigned keys >= 2**63 wrap to negative values, which the library rejects by name.
    return np.ascontiguousarray(array.astype(np.int64, copy=False))


# _options' results by arguments and model version: deriving them (type checks, the model
# file's cache, the planner's parameters) took 15-36 us of Python per plan, a third of a
# small plan's whole creation.
_OPTIONS: dict[tuple, tuple] = {}
_OPTIONS_MAX = 64


def _options(**given) -> tuple[_capi.Options, _capi.P2PCurve]:
    """The C options and p2p curve (fresh copies); ValueError/PetacommError naming a bad
    argument. Computed once per arguments and model version."""
    from petacomm.xchg.cost import model_version

    key = None
    version = model_version(given["model"])
    if version is not None:
        # Types are part of the key: True == 1, but chunk_keys=True is refused.
        key = (version, *((n, type(v), v) for n, v in sorted(given.items()) if n != "model"))
        try:
            hash(key)
        except TypeError:  # an unhashable argument: checked (and refused) below
            key = None
    hit = _OPTIONS.get(key) if key is not None else None
    if hit is None:
        hit = _derive_options(**given)
        if key is not None:
            if len(_OPTIONS) >= _OPTIONS_MAX:
                _OPTIONS.clear()
            _OPTIONS[key] = hit
    options = _capi.Options.from_buffer_copy(hit[0])
    # The copy's strings point into the cached object's: give it its own.
    options.strategy, options.transport = hit[0].strategy, hit[0].transport
    return options, _capi.P2PCurve.from_buffer_copy(hit[1])


def _derive_options(**given) -> tuple[_capi.Options, _capi.P2PCurve]:
    options = _capi.default_options()
    for name in ("strategy", "transport"):
        if not isinstance(given[name], str):
            raise ValueError(f"{name}: expected a string, got {given[name]!r}")
        setattr(options, name, given[name].encode())
    integers = ("chunk_keys", "allgather_keys", "hub_threshold", "autotune", "send_window", "k")
    whole = {name: integer_argument(given[name], name) for name in integers}
    options.chunk_keys = whole["chunk_keys"]
    options.allgather_keys = whole["allgather_keys"]
    options.hub_threshold = whole["hub_threshold"]
    window = whole["send_window"]
    if not -(2**31) <= window < 2**31:
        raise ValueError(
            f"send_window: must be from 0 to {2**31 - 1} sends in flight, got {window}"
        )
    options.send_window = window
    # the library's bound, checked before a C int could wrap the value
    options.autotune = integer_argument(whole["autotune"], "autotune", (0, MAX_REPS))
    options.deterministic = 1 if given["deterministic"] else 0
    options.plan_dtype = _dtype_code(given["dtype"], "dtype")
    k = whole["k"]
    if not -(2**31) <= k < 2**31:
        raise ValueError(f"k: must be at least 1 component per key, got {k}")
    options.plan_k = k
    from petacomm.xchg.cost import planner_costs, resolve_model

    options.cost, curve = planner_costs(resolve_model(given["model"]), given["size"])
    return options, curve


class SparseReducePlan:
    """A plan reducing values keyed by int64 keys over the ranks of ``comm``.

    ``keys``: this rank's keys (any order, repeats allowed, each in [0, 2**63)); repeated
    keys on one rank are combined once and every copy receives the result. ``strategy``:
    "auto" or a registered strategy (petacomm.xchg.strategy_names()); ``auto`` asks the planner,
    ``autotune=N`` times the candidates. The planner's costs come from ``model`` (a
    petacomm.model.MachineModel or a model file; default: the measured model if netbench
    wrote one, else the built-in defaults). ``dtype`` and ``k`` describe the values the
    planner should assume; any dtype and k may be executed. ``send_window=N`` keeps at most
    N point-to-point sends of a round in flight per rank (synchronous sends, in rotated order;
    0: all at once), for runs with thousands of partners per rank.

    Creation and execution are collective: a bad argument on one rank (keys that are not
    integers, another strategy, another model) fails on every rank together, naming the rank
    at fault, instead of leaving the others waiting.
    """

    def __init__(
        self,
        comm,
        keys,
        *,
        strategy: str = "auto",
        transport: str = "p2p",
        chunk_keys: int = 65536,
        allgather_keys: int = 65536,
        hub_threshold: int = 0,
        send_window: int = 0,
        deterministic: bool = False,
        autotune: int = 0,
        dtype=np.float64,
        k: int = 1,
        model=None,
    ):
        self._plan = _capi.Plan()
        self._lib = _capi.library()
        self._pending = None
        # Without a communicator nothing can be agreed: refused here, on every rank.
        self._comm_handle = communicator_handle(comm)
        self._size = comm.Get_size()
        self._keys = np.zeros(0, dtype=np.int64)
        # Problems found here are passed to the native call, which takes part in the
        # collective argument check, so every rank fails together.
        problem = None
        try:
            self._keys = _keys_array(keys)
            options, curve = _options(
                strategy=strategy,
                transport=transport,
                chunk_keys=chunk_keys,
                allgather_keys=allgather_keys,
                hub_threshold=hub_threshold,
                send_window=send_window,
                deterministic=deterministic,
                autotune=autotune,
                dtype=dtype,
                k=k,
                model=model,
                size=self._size,
            )
        except (ValueError, TypeError, OverflowError, PetacommError) as err:
            problem = str(err).encode(errors="replace") or b"invalid argument"
            options, curve = _capi.default_options(), None
        status = self._lib.petacomm_xchg_plan_create_ext_f(
            self._comm_handle,
            self._keys.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
            self._keys.size,
            ctypes.byref(options),
            ctypes.byref(curve) if curve is not None else None,
            problem,
            ctypes.byref(self._plan),
        )
        _capi.check(self._lib, status, "plan_create")
        self.n_local = int(self._keys.size)

    # ---- execution -------------------------------------------------------------------
    def execute(self, values, op: str = "sum", *, comm=None):
        """Reduces ``values`` in place (shape (n,) or (n, k)) and returns it."""
        self.execute_begin(values, op, comm=comm)
        return self.execute_end()

    def execute_begin(self, values, op: str = "sum", *, comm=None) -> None:
        """Starts a reduction; ``values`` must not be written until execute_end().
        Collective: a bad ``values``, ``op`` or ``comm`` on one rank fails on every rank."""
        self._require_open()
        if self._pending is not None:
            raise PetacommError("execute_begin: an execution is in progress; call execute_end")
        problem, array, k, code, handle = None, None, 1, 0, self._comm_handle
        try:
            array, k, code = self._check_values(values)
            if not isinstance(op, str) or op not in _capi.OPS:  # [] was "unhashable type"
                raise ValueError(
                    f"op: unknown operator {op!r} (expected one of {', '.join(_capi.OPS)})"
                )
            if comm is not None:
                handle = communicator_handle(comm)
        except (ValueError, TypeError, AttributeError) as err:
            problem = str(err).encode(errors="replace") or b"invalid argument"
        status = self._lib.petacomm_xchg_execute_begin_ext_f(
            self._plan,
            handle,
            array.ctypes.data if problem is None else None,
            array.shape[0] if problem is None else 0,
            k,
            code if problem is None else _capi.DTYPES["float64"],
            _capi.OPS[op] if problem is None else _capi.OPS["sum"],
            problem,
        )
        _capi.check(self._lib, status, "execute_begin")
        self._pending = array

    def execute_end(self):
        """Completes the reduction started by execute_begin and returns the values."""
        self._require_open()
        if self._pending is None:
            raise PetacommError("execute_end: no execution in progress (call execute_begin)")
        array, self._pending = self._pending, None
        _capi.check(self._lib, self._lib.petacomm_xchg_execute_end(self._plan), "execute_end")
        return array

    def _check_values(self, values):
        if not isinstance(values, np.ndarray):
            raise ValueError(
                f"values: expected a numpy array (reduced in place), got {type(values).__name__}"
            )
        code = _dtype_code(values.dtype, "values")
        if values.ndim not in (1, 2):
            raise ValueError(f"values: expected shape (n,) or (n, k), got {values.shape}")
        if values.shape[0] != self.n_local:
            raise ValueError(
                f"values: the plan has {self.n_local} keys on this rank, values has "
                f"{values.shape[0]} rows"
            )
        k = 1 if values.ndim == 1 else values.shape[1]
        if k < 1:
            raise ValueError(f"values: k must be at least 1, got shape {values.shape}")
        if not values.flags.c_contiguous or not values.flags.writeable:
            raise ValueError("values: must be a writeable C-contiguous array (reduced in place)")
        return values, k, code

    # ---- inspection ------------------------------------------------------------------
    @property
    def strategy(self) -> str:
        self._require_open()
        name = ctypes.c_char_p()
        _capi.check(
            self._lib, self._lib.petacomm_xchg_plan_strategy(self._plan, ctypes.byref(name)), ""
        )
        return name.value.decode()

    def describe(self) -> dict:
        """Statistics, predicted (and autotuned) costs per strategy, the choice and reason."""
        self._require_open()
        needed = ctypes.c_size_t()
        lib = self._lib
        _capi.check(
            lib, lib.petacomm_xchg_plan_describe(self._plan, None, 0, ctypes.byref(needed)), ""
        )
        buffer = ctypes.create_string_buffer(needed.value)
        _capi.check(
            lib, lib.petacomm_xchg_plan_describe(self._plan, buffer, needed.value, None), ""
        )
        return json.loads(buffer.value.decode())

    def stats(self, dtype=np.float64, k: int = 1) -> dict:
        """Collective: messages, bytes per execution and plan memory per rank (min/avg/max),
        and the setup times over ranks: wall, compute (this rank's thread CPU time outside
        MPI calls that wait for other ranks) and time inside those MPI calls."""
        self._require_open()
        out = _capi.Stats()
        status = self._lib.petacomm_xchg_plan_stats(
            self._plan, _dtype_code(dtype, "dtype"), int(k), ctypes.byref(out)
        )
        _capi.check(self._lib, status, "plan_stats")

        def spread(value):
            return {"min": value.min, "avg": value.avg, "max": value.max}

        return {
            "messages": spread(out.messages),
            "bytes": spread(out.bytes),
            "memory_bytes": spread(out.memory_bytes),
            "setup_seconds": out.setup_seconds,
            "setup": {
                "wall_seconds": spread(out.setup_wall_seconds),
                "compute_seconds": spread(out.setup_compute_seconds),
                "mpi_seconds": spread(out.setup_mpi_seconds),
            },
        }

    # ---- lifetime --------------------------------------------------------------------
    def free(self) -> None:
        """Collective: releases the plan (completing an execution in progress)."""
        if self._plan:
            self._pending = None
            _capi.check(self._lib, self._lib.petacomm_xchg_plan_free(ctypes.byref(self._plan)), "")

    close = free

    def _require_open(self) -> None:
        if not self._plan:
            raise PetacommError("plan: already freed")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __del__(self):
        plan = getattr(self, "_plan", None)
        if plan:
            with contextlib.suppress(Exception):  # never raise from a finaliser
                self.free()

    def __repr__(self) -> str:
        state = self.strategy if self._plan else "freed"
        return f"SparseReducePlan(n_local={getattr(self, 'n_local', 0)}, strategy={state!r})"
