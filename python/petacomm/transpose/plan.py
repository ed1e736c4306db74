"""TransposePlan and PencilPlan: the Python face of the native distributed transposes.

Creation and execution are collective over the communicator, like the C API they wrap:
every rank checks its arguments and the call fails on all ranks together (ValueError,
naming the argument and the rank at fault) before anything is sent.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
from dataclasses import dataclass

import numpy as np

from petacomm.dtypes import numpy_dtype
from petacomm.errors import PetacommError, integer_argument
from petacomm.native import MAX_REPS, caller_error, communicator_handle
from petacomm.transpose import _capi
from petacomm.transpose.arrays import check_creation, descriptor, dtype_code, local_message


@dataclass(frozen=True)
class Strategy:
    name: str
    summary: str
    options: tuple[str, ...]

    @property
    def needs_mask(self) -> bool:
        """Transposes only the columns of a mask, without which it fails ('partial')."""
        return "mask" in self.options


def strategies() -> list[Strategy]:
    """The strategies of the native registry, in the planner's order."""
    lib = _capi.library()
    count = ctypes.c_int()
    _capi.check(lib, lib.petacomm_transpose_strategy_count(ctypes.byref(count)), "count")
    out = []
    for index in range(count.value):
        info = _capi.StrategyInfo()
        _capi.check(lib, lib.petacomm_transpose_strategy_info(index, ctypes.byref(info)), "info")
        out.append(
            Strategy(
                info.name.decode(), info.summary.decode(), tuple(info.options.decode().split())
            )
        )
    return out


def build_options(
    *,
    strategy: str = "auto",
    planner: str = "estimate",
    mask=None,
    window: int = 4,
    measure_reps: int = 3,
    node_size: int = 0,
    model=None,
    cost: dict | None = None,
):
    """Options for the C API (and the arrays they point to, to keep alive). ``cost``
    (a mapping of petacomm_transpose_cost_params fields) replaces the model's figures."""
    options = _capi.default_options()
    options.strategy = str(strategy).encode()
    options.planner = str(planner).encode()
    options.window = integer_argument(window, "window")
    # the library's bound, checked before a C int could wrap the value
    options.measure_reps = integer_argument(measure_reps, "measure_reps", (1, MAX_REPS))
    options.node_size = integer_argument(node_size, "node_size")
    if cost is None:
        from petacomm.transpose.cost import cost_params, resolve_model

        options.cost = cost_params(resolve_model(model))
    else:
        known = [name for name, _ in _capi.CostParams._fields_]
        for name, value in cost.items():
            if name not in known:
                raise ValueError(f"cost: unknown parameter {name!r} (expected {', '.join(known)})")
            setattr(options.cost, name, float(value))
    keep = None
    if mask is not None:
        flags = np.asarray(mask)
        if flags.ndim != 1:
            raise ValueError(f"mask: expected a one-dimensional array, got shape {flags.shape}")
        keep = np.ascontiguousarray(flags != 0, dtype=np.uint8)
        options.mask = keep.ctypes.data_as(ctypes.POINTER(ctypes.c_ubyte))
        options.mask_length = keep.size
    return options, keep


class _Handle:
    """A native handle freed collectively (free(), a with-block, or the finaliser)."""

    _free_function = ""

    def __init__(self):
        self._handle = _capi.Handle()
        self._lib = _capi.library()

    def free(self) -> None:
        """Collective: releases the native object."""
        if self._handle:
            free = getattr(self._lib, self._free_function)
            _capi.check(self._lib, free(ctypes.byref(self._handle)), self._free_function)

    close = free

    def _require_open(self) -> None:
        if not self._handle:
            raise PetacommError(f"{type(self).__name__}: already freed")

    def _set_elements(self, dtype, howmany, dims) -> int:
        """Sets ``dtype`` and ``howmany`` of a transpose's elements, checks them and the
        extents ``dims`` against the C API's 64-bit integers, and returns the library's code
        of the dtype (an unknown one: refused by the library, on every rank)."""
        self.dtype = numpy_dtype(dtype, "dtype")
        self.howmany = integer_argument(howmany, "howmany")
        _require_fit(dims, "shape", 64)
        _require_fit((self.howmany,), "howmany", 64)
        return dtype_code(self.dtype)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __del__(self):
        if getattr(self, "_handle", None):
            with contextlib.suppress(Exception):  # never raise from a finaliser
                self.free()


# What a constructor refuses on its own rank before the collective call (a model file that
# cannot be read is a PetacommError).
_REFUSED = (ValueError, TypeError, OverflowError, PetacommError)


def integers(values, name: str) -> tuple[int, ...]:
    """A shape, grid or modes as a tuple of ints; ValueError naming ``name`` when it is not a
    sequence of integers (int() read (4.5, 4) as (4, 4) and the text "44" as (4, 4))."""
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name}: expected a sequence of integers, got {values!r}")
    return tuple(integer_argument(value, name) for value in values)


def _require_fit(values: tuple, what: str, bits: int) -> None:
    """OverflowError naming ``what`` when a value does not fit a signed ``bits``-bit C
    integer, which the call itself could not pass."""
    bound = 2 ** (bits - 1)
    if not all(-bound <= v < bound for v in values):
        shown = values[0] if len(values) == 1 else values
        raise OverflowError(f"{what}: {shown} does not fit {bits}-bit integers")


def _run(lib, status: int, call: str, named: dict) -> None:
    """check() with the message made specific for the arguments this rank passed."""
    try:
        _capi.check(lib, status, call)
    except ValueError as err:
        raise ValueError(local_message(str(err), named)) from None


class TransposePlan(_Handle):
    """A distributed transpose of a global ``shape = (n0, n1)`` array (elements of
    ``howmany`` interleaved values of ``dtype``) distributed by rows over ``comm``: rank r
    holds rows ``local_input_offset`` .. + ``local_input_shape[0]`` (the first n0 mod p
    ranks one more row). ``execute`` produces the transposed n1 x n0 array distributed the
    same way; ``execute(..., inverse=True)`` (or ``backward``) undoes it.

    ``strategy``: "auto" or one of :func:`strategies`; ``planner``: "estimate" (cost model,
    from ``model`` or the measured machine model) or "measure" (times every applicable
    strategy at the first execution, max over ranks). ``mask``: n1 flags, column j of the
    input may be nonzero (columns outside are treated as zero; "partial" skips them).
    ``node_size``: ranks per node for two-level (default: the machine, or
    PETACOMM_NODE_SIZE). ``cost``: planner parameters (petacomm_transpose_cost_params
    fields) instead of the machine model's.
    """

    _free_function = "petacomm_transpose_plan_free"

    def __init__(
        self,
        comm,
        shape,
        dtype=np.complex128,
        *,
        howmany: int = 1,
        strategy: str = "auto",
        planner: str = "estimate",
        mask=None,
        window: int = 4,
        measure_reps: int = 3,
        node_size: int = 0,
        model=None,
        cost: dict | None = None,
    ):
        super().__init__()
        handle = communicator_handle(comm)  # without a communicator nothing can be agreed
        # Arguments refused here still take part in the library's collective check (as its
        # caller_error, the others replaced by placeholders), so every rank fails together.
        refused = None
        try:
            dims = integers(shape, "shape")
            if len(dims) != 2:
                raise ValueError(f"shape: expected (n0, n1), got {shape!r}")
            code = self._set_elements(dtype, howmany, dims)
            options, self._mask = build_options(
                strategy=strategy,
                planner=planner,
                mask=mask,
                window=window,
                measure_reps=measure_reps,
                node_size=node_size,
                model=model,
                cost=cost,
            )
        except _REFUSED as err:
            refused = err
            dims, self.howmany, code, self._mask = (1, 1), 1, 0, None
            options = _capi.default_options()
        self.shape = dims
        status = self._lib.petacomm_transpose_plan_create_ext_f(
            handle,
            dims[0],
            dims[1],
            self.howmany,
            code,
            ctypes.byref(options),
            caller_error(refused),
            ctypes.byref(self._handle),
        )
        check_creation(self._lib, status, "plan_create", refused or self.dtype)
        local = _capi.Local()
        _capi.check(
            self._lib, self._lib.petacomm_transpose_plan_local(self._handle, local), "local"
        )
        tail = (self.howmany,) if self.howmany > 1 else ()
        self.local_input_shape = (local.rows_in, dims[1], *tail)
        self.local_output_shape = (local.rows_out, dims[0], *tail)
        self.local_input_offset = local.row0_in
        self.local_output_offset = local.row0_out
        self.alloc_elements = local.alloc_elements

    # ---- buffers -------------------------------------------------------------------
    def empty_input(self) -> np.ndarray:
        return np.empty(self.local_input_shape, self.dtype)

    def empty_output(self) -> np.ndarray:
        return np.empty(self.local_output_shape, self.dtype)

    def empty_buffer(self) -> np.ndarray:
        """A flat buffer for in-place transposes: view it with input_view/output_view."""
        return np.empty(self.alloc_elements * self.howmany, self.dtype)

    def input_view(self, buffer: np.ndarray) -> np.ndarray:
        size = int(np.prod(self.local_input_shape))
        return buffer[:size].reshape(self.local_input_shape)

    def output_view(self, buffer: np.ndarray) -> np.ndarray:
        size = int(np.prod(self.local_output_shape))
        return buffer[:size].reshape(self.local_output_shape)

    # ---- execution -----------------------------------------------------------------
    def execute(self, a_in, a_out=None, *, inverse: bool = False):
        """Collective: transposes ``a_in`` (this rank's input) into ``a_out`` (allocated
        when None) and returns it. In place when both view the same buffer start."""
        self._require_open()
        if a_out is None:
            a_out = self.empty_input() if inverse else self.empty_output()
        direction = _capi.DIRECTIONS["backward" if inverse else "forward"]
        status = self._lib.petacomm_transpose_execute_array(
            self._handle,
            direction,
            ctypes.byref(descriptor(a_in)),
            ctypes.byref(descriptor(a_out)),
        )
        _run(self._lib, status, "execute", {"in": a_in, "out": a_out})
        return a_out

    def backward(self, a_in, a_out=None):
        """The inverse transpose: n1 x n0 by rows back to n0 x n1 by rows."""
        return self.execute(a_in, a_out, inverse=True)

    # ---- inspection ----------------------------------------------------------------
    @property
    def strategy(self) -> str:
        self._require_open()
        name = ctypes.c_char_p()
        status = self._lib.petacomm_transpose_plan_strategy(self._handle, ctypes.byref(name))
        _capi.check(self._lib, status, "strategy")
        return name.value.decode()

    def describe(self) -> dict:
        """Layout, the planner's candidates (predicted and measured), the choice, why."""
        self._require_open()
        return json.loads(
            _capi.describe_text(self._lib.petacomm_transpose_plan_describe, self._handle)
        )

    def stats(self) -> dict:
        """Collective: messages and bytes per forward execution and plan memory, per rank
        (min/avg/max), and the setup time (max over ranks)."""
        self._require_open()
        out = _capi.Stats()
        _capi.check(self._lib, self._lib.petacomm_transpose_plan_stats(self._handle, out), "stats")

        def spread(v):
            return {"min": v.min, "avg": v.avg, "max": v.max}

        return {
            "messages": spread(out.messages),
            "bytes": spread(out.bytes),
            "memory_bytes": spread(out.memory_bytes),
            "setup_seconds": out.setup_seconds,
        }

    def __repr__(self) -> str:
        state = self.strategy if self._handle else "freed"
        return f"TransposePlan(shape={self.shape}, dtype={self.dtype}, strategy={state!r})"


class PencilPlan(_Handle):
    """3-D pencils: a global ``shape = (n0, n1, n2)`` array on a ``grid = (p0, p1)``
    process grid (rank = i0 p1 + i1), in three layouts named by the axis each rank holds
    whole: "z" stores [n0 block][n1 block][n2], "y" [n0 block][n2 block][n1], "x"
    [n2 block][n1 block][n0]. ``execute(a, b, "z", "y")`` swaps between adjacent layouts
    (z <-> y on the row communicator, y <-> x on the column communicator)."""

    _free_function = "petacomm_transpose_pencil_free"

    def __init__(
        self,
        comm,
        shape,
        grid,
        dtype=np.complex128,
        *,
        howmany: int = 1,
        strategy: str = "auto",
        planner: str = "estimate",
        window: int = 4,
        measure_reps: int = 3,
        node_size: int = 0,
        model=None,
        cost: dict | None = None,
    ):
        super().__init__()
        handle = communicator_handle(comm)  # without a communicator nothing can be agreed
        # As TransposePlan's: arguments refused here fail on every rank together.
        refused = None
        try:
            dims = integers(shape, "shape")
            grid2 = integers(grid, "grid")
            if len(dims) != 3:
                raise ValueError(f"shape: expected (n0, n1, n2), got {shape!r}")
            if len(grid2) != 2:
                raise ValueError(f"grid: expected (p0, p1), got {grid!r}")
            code = self._set_elements(dtype, howmany, dims)
            _require_fit(grid2, "grid", 32)
            options, _ = build_options(
                strategy=strategy,
                planner=planner,
                window=window,
                measure_reps=measure_reps,
                node_size=node_size,
                model=model,
                cost=cost,
            )
        except _REFUSED as err:
            refused = err
            dims, grid2, self.howmany, code = (1, 1, 1), (1, 1), 1, 0
            options = _capi.default_options()
        self.shape, self.grid = dims, grid2
        status = self._lib.petacomm_transpose_pencil_create_ext_f(
            handle,
            (ctypes.c_int64 * 3)(*dims),
            (ctypes.c_int * 2)(*grid2),
            self.howmany,
            code,
            ctypes.byref(options),
            caller_error(refused),
            ctypes.byref(self._handle),
        )
        check_creation(self._lib, status, "pencil_create", refused or self.dtype)

    def _layout(self, layout: str, what: str) -> int:
        if layout not in _capi.LAYOUTS:
            raise ValueError(f"{what}: unknown layout {layout!r} (expected z, y or x)")
        return _capi.LAYOUTS[layout]

    def local(self, layout: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(storage shape, global offset of each storage axis) of a layout on this rank."""
        self._require_open()
        shape, offset = (ctypes.c_int64 * 3)(), (ctypes.c_int64 * 3)()
        status = self._lib.petacomm_transpose_pencil_local(
            self._handle, self._layout(layout, "layout"), shape, offset
        )
        _capi.check(self._lib, status, "local")
        tail = (self.howmany,) if self.howmany > 1 else ()
        return (*tuple(shape), *tail), tuple(offset)

    def empty(self, layout: str) -> np.ndarray:
        return np.empty(self.local(layout)[0], self.dtype)

    def execute(self, a_in, a_out, source: str, target: str):
        """Collective: ``a_in`` in layout ``source`` -> ``a_out`` in layout ``target``."""
        self._require_open()
        status = self._lib.petacomm_transpose_pencil_execute_array(
            self._handle,
            _capi.LAYOUTS.get(source, -1),
            _capi.LAYOUTS.get(target, -1),
            ctypes.byref(descriptor(a_in)),
            ctypes.byref(descriptor(a_out)),
        )
        _run(self._lib, status, "execute", {"in": a_in, "out": a_out})
        return a_out

    def describe(self) -> dict:
        self._require_open()
        return json.loads(
            _capi.describe_text(self._lib.petacomm_transpose_pencil_describe, self._handle)
        )
