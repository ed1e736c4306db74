"""Where the native part lives: shared libraries, programs and the build record.

Installed wheels carry it in ``petacomm/_native/{lib,bin,share}``. Setting
``PETACOMM_NATIVE_DIR`` to a CMake build tree (which mirrors that layout) runs the tools
against a development build instead.
"""

from __future__ import annotations

import ctypes
import json
import os
from functools import cache
from pathlib import Path

from petacomm.errors import PetacommError

_ENV = "PETACOMM_NATIVE_DIR"

# The library's PETACOMM_MAX_REPS (core.h): the most repetitions the plans' autotune and
# measure_reps may ask for, and the benchmarks' bound (petacomm.bench re-exports it).
MAX_REPS = 1000000


def native_dir() -> Path:
    override = os.environ.get(_ENV)
    if override:
        path = Path(override)
        if not path.is_dir():
            raise PetacommError(f"{_ENV}: '{override}' is not a directory")
        return path
    return Path(__file__).resolve().parent / "_native"


def library_path(name: str = "petacomm") -> Path:
    """Path of ``lib<name>.so``; raises PetacommError naming what is missing."""
    path = native_dir() / "lib" / f"lib{name}.so"
    if not path.exists():
        raise PetacommError(
            f"native library lib{name}.so not found in {path.parent} "
            f"(reinstall petacomm with 'pip install .', or set {_ENV} to a build tree)"
        )
    return path


def program_path(name: str) -> Path:
    path = native_dir() / "bin" / name
    if not path.exists():
        raise PetacommError(
            f"native program {name} not found in {path.parent} "
            f"(reinstall petacomm with 'pip install .', or set {_ENV} to a build tree)"
        )
    return path


def build_info() -> dict:
    """The record CMake wrote at build time (MPI compiler, mpiexec, compiler versions)."""
    path = native_dir() / "share" / "build-info.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as err:
        raise PetacommError(f"build record {path} not found: the native part is not built") from err


@cache
def load_library(name: str = "petacomm") -> ctypes.CDLL:
    """Loads a native library with ctypes. Loading links MPI but does not initialise it."""
    path = library_path(name)
    try:
        return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    except OSError as err:
        raise PetacommError(f"cannot load {path}: {err}") from err


def last_error(library: ctypes.CDLL) -> str:
    library.petacomm_last_error.restype = ctypes.c_char_p
    return library.petacomm_last_error().decode(errors="replace")


# core.h, shared by every family's binding: the status codes and petacomm_strategy_info.
SUCCESS, ERR_ARG, ERR_MPI, ERR_NOMEM, ERR_STATE, ERR_INTERNAL = range(6)


class StrategyInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("summary", ctypes.c_char_p),
        ("options", ctypes.c_char_p),
    ]


def communicator_handle(comm) -> int:
    """The Fortran handle of an mpi4py communicator, which the C API's ``_f`` entry points
    take; TypeError naming ``comm`` for anything else (None gave "'NoneType' object has no
    attribute 'py2f'"). Without a communicator nothing can be agreed with the other ranks,
    so this is the one check a plan's constructor makes before its collective call."""
    py2f = getattr(comm, "py2f", None)
    if py2f is None:
        raise TypeError(f"comm: expected an mpi4py communicator, got {comm!r}")
    return int(py2f())


def caller_error(refused: Exception | None) -> bytes | None:
    """What a binding refused on its own rank, as the ``caller_error`` of a creation call
    (``petacomm_*_create_ext``): the library's collective argument check then fails every
    rank together. None when nothing was refused; never empty (an empty one means none)."""
    if refused is None:
        return None
    return (str(refused) or type(refused).__name__).encode(errors="replace")


def check(
    library: ctypes.CDLL, status: int, call: str, raised: dict[int, type] | None = None
) -> None:
    """Raises for a status other than SUCCESS, with the C message: ValueError for bad
    arguments, the exception ``raised`` maps the status to, PetacommError otherwise."""
    if status == SUCCESS:
        return
    message = last_error(library) or f"{call} failed with status {status}"
    exception = {ERR_ARG: ValueError, **(raised or {})}.get(status, PetacommError)
    raise exception(message)
