"""FourierFilter: the NEMORB Fourier filter of a real field f(s, chi, phi) distributed over
s and chi, keeping the modes |m| <= M (chi) and |n| <= N (phi). See docs/transpose.md."""

from __future__ import annotations

import ctypes
import json

import numpy as np

from petacomm.native import caller_error, communicator_handle
from petacomm.transpose import _capi
from petacomm.transpose.arrays import check_creation, descriptor
from petacomm.transpose.plan import (
    _REFUSED,
    _Handle,
    _require_fit,
    _run,
    build_options,
    integers,
)


class FourierFilter(_Handle):
    """``shape = (n_s, n_chi, n_phi)`` (n_chi, n_phi even) on ``grid = (p_s, p_chi)``
    (default (1, p)); rank r = i_s p_chi + i_chi holds ``local_shape`` from
    ``local_offset``. ``variant``: "plain" (complexified c2c, full transposes), "packed"
    (r2c with the packed half-complex format: half the bytes) or "packed-partial" (also
    skips the modes the filter removes in the transposes and the chi FFTs). ``strategy``,
    ``planner``: the transposes' (plain and packed variants)."""

    _free_function = "petacomm_fftfilter_free"

    def __init__(
        self,
        comm,
        shape,
        modes,
        *,
        variant: str = "packed-partial",
        grid=None,
        strategy: str = "auto",
        planner: str = "estimate",
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
            kept = integers(modes, "modes")
            grid2 = (1, comm.Get_size()) if grid is None else integers(grid, "grid")
            if len(dims) != 3:
                raise ValueError(f"shape: expected (n_s, n_chi, n_phi), got {shape!r}")
            if len(kept) != 2:
                raise ValueError(f"modes: expected (M, N), got {modes!r}")
            if len(grid2) != 2:
                raise ValueError(f"grid: expected (p_s, p_chi), got {grid!r}")
            if variant not in _capi.VARIANTS:
                raise ValueError(
                    f"variant: unknown variant {variant!r} (expected {', '.join(_capi.VARIANTS)})"
                )
            _require_fit(dims, "shape", 64)
            _require_fit(kept, "modes", 64)
            _require_fit(grid2, "grid", 32)
            options, _ = build_options(
                strategy=strategy, planner=planner, node_size=node_size, model=model, cost=cost
            )
        except _REFUSED as err:
            refused = err
            dims, kept, grid2, variant = (1, 2, 2), (0, 0), (1, 1), "plain"
            options = _capi.default_options()
        self.shape, self.modes, self.grid, self.variant = dims, kept, grid2, variant
        status = self._lib.petacomm_fftfilter_create_ext_f(
            handle,
            (ctypes.c_int64 * 3)(*dims),
            (ctypes.c_int * 2)(*grid2),
            (ctypes.c_int64 * 2)(*kept),
            _capi.VARIANTS[variant],
            ctypes.byref(options),
            caller_error(refused),
            ctypes.byref(self._handle),
        )
        check_creation(self._lib, status, "fftfilter_create", refused)
        shape3, offset3 = (ctypes.c_int64 * 3)(), (ctypes.c_int64 * 3)()
        _capi.check(
            self._lib, self._lib.petacomm_fftfilter_local(self._handle, shape3, offset3), "local"
        )
        self.local_shape = tuple(shape3)
        self.local_offset = tuple(offset3)

    def apply(self, field, out=None):
        """Collective: filters this rank's block (float64, local_shape) into ``out``
        (allocated when None; ``out`` may be ``field``) and returns it."""
        self._require_open()
        if out is None:
            out = np.empty(self.local_shape, np.float64)
        status = self._lib.petacomm_fftfilter_apply_array(
            self._handle, ctypes.byref(descriptor(field)), ctypes.byref(descriptor(out))
        )
        _run(self._lib, status, "apply", {"in": field, "out": out})
        return out

    def stats(self) -> dict:
        """This rank's totals over all applications: seconds per phase, bytes, messages."""
        self._require_open()
        out = _capi.FilterStats()
        _capi.check(self._lib, self._lib.petacomm_fftfilter_stats_get(self._handle, out), "stats")
        return {name: getattr(out, name) for name, _ in _capi.FilterStats._fields_}

    def describe(self) -> dict:
        self._require_open()
        return json.loads(_capi.describe_text(self._lib.petacomm_fftfilter_describe, self._handle))
