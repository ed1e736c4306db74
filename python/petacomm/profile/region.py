"""Profiler regions from Python (mpi4py programs).

``region("name")`` is a context manager and a decorator::

    from petacomm.profile import region

    with region("solve"):
        comm.Allreduce(...)

    @region("exchange")
    def exchange(): ...

With petacomm's profiler preloaded (``petacomm profile -- mpiexec ... python app.py``) it
calls the profiler's ``petacomm_prof_region_begin/end``; with another PMPI profiler (IPM) it
calls ``MPI_Pcontrol(1, "name")`` / ``MPI_Pcontrol(-1, "name")``, as IPM expects. mpi4py's
own ``MPI.Pcontrol(level)`` takes levels 0 to 2 and no name, so it cannot open regions: use
it only to pause (``MPI.Pcontrol(0)``) and resume (``MPI.Pcontrol(2)``) recording.
Without a profiler, or before MPI is initialised, a region costs a function call and does
nothing. Names are UTF-8 text without NUL characters (at most 79 bytes are kept).
"""

from __future__ import annotations

import ctypes
from contextlib import ContextDecorator
from functools import cache


@cache
def _api():
    """(begin, end) taking a name: petacomm's region API, else MPI_Pcontrol(+-1, name);
    None when neither is loaded globally (no profiler preloaded)."""
    try:
        process = ctypes.CDLL(None)
    except OSError:
        return None
    try:
        begin, end = process.petacomm_prof_region_begin, process.petacomm_prof_region_end
        for fn in (begin, end):
            fn.argtypes = [ctypes.c_char_p]
            fn.restype = ctypes.c_int
        return begin, end
    except AttributeError:
        pass
    try:
        pcontrol = process.MPI_Pcontrol
    except AttributeError:
        return None
    pcontrol.restype = ctypes.c_int
    return (
        lambda name: pcontrol(ctypes.c_int(1), ctypes.c_char_p(name)),
        lambda name: pcontrol(ctypes.c_int(-1), ctypes.c_char_p(name)),
    )


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
        try:
            self._encoded = name.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(f"region name: not UTF-8 text, got {name!r}") from err
        self.name = name
        self._opened: list[bool] = []

    def __enter__(self):
        api = _api()
        opened = api is not None and _mpi_ready()
        if opened:
            api[0](self._encoded)
        self._opened.append(opened)
        return self

    def __exit__(self, *exc):
        if self._opened.pop():
            api = _api()
            if api is not None and _mpi_ready():
                api[1](self._encoded)
        return False
