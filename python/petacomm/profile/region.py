"""Profiler regions from Python (mpi4py programs).

``region("name")`` is a context manager and a decorator::

    from petacomm.profile import region

    with region("solve"):
        comm.Allreduce(...)

    @region("exchange")
    def exchange(): ...

It calls the C ``MPI_Pcontrol(1, "name")`` / ``MPI_Pcontrol(-1, "name")`` of the process,
which a preloaded profiler (petacomm's, or IPM) turns into regions. mpi4py's own
``MPI.Pcontrol(level)`` cannot pass a name, hence ctypes. Without a profiler, or before MPI
is initialised, a region costs a function call and does nothing.
"""

from __future__ import annotations

import ctypes
from contextlib import ContextDecorator
from functools import cache


@cache
def _pcontrol():
    """The process's MPI_Pcontrol, or None when no MPI library is loaded globally."""
    try:
        process = ctypes.CDLL(None)
        fn = process.MPI_Pcontrol
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    return fn


def _mpi_ready() -> bool:
    try:
        from mpi4py import MPI
    except ImportError:
        return False
    return MPI.Is_initialized() and not MPI.Is_finalized()


class region(ContextDecorator):  # noqa: N801 - reads like a keyword: `with region("x")`
    """Opens the profiler region ``name`` for the duration of a block or a function call."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name:
            raise ValueError(f"region name: must be a non-empty string, got {name!r}")
        if "\0" in name:
            raise ValueError(f"region name: must not contain NUL characters, got {name!r}")
        self.name = name
        self._encoded = name.encode("utf-8")
        self._opened: list[bool] = []

    def __enter__(self):
        fn = _pcontrol()
        opened = fn is not None and _mpi_ready()
        if opened:
            fn(ctypes.c_int(1), ctypes.c_char_p(self._encoded))
        self._opened.append(opened)
        return self

    def __exit__(self, *exc):
        if self._opened.pop():
            fn = _pcontrol()
            if fn is not None and _mpi_ready():
                fn(ctypes.c_int(-1), ctypes.c_char_p(self._encoded))
        return False
