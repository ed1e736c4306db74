"""The job side of ``petacomm bench transpose``: every contender on the same buffers, in one
MPI job, interleaved repetition by repetition.

Runs under the Python whose mpi4py is built against the MPI of the race (Debian's
``/usr/bin/python3`` for Debian's Open MPI, which FFTW-MPI and mpi4py-fft link), with
``PETACOMM_NATIVE_DIR`` pointing at a petacomm built against that MPI. It imports only
numpy, mpi4py, ctypes and petacomm.transpose, so the interpreter needs nothing else.

Contenders, each transposing this rank's n0/p rows of an n0 x n1 array into its n1/p rows
of the transpose:
  petacomm:<strategy>  a TransposePlan per strategy, "auto" (the cost model) and
                       "measure" (timed at the first execution);
  fftw-mpi             fftw_mpi_plan_many_transpose (FFTW_MEASURE), called through ctypes;
  mpi4py-fft           Pencil.transfer(...).forward (MPI_Alltoallw with subarray types)
                       followed by the local transpose giving the same layout;
  floor                one MPI_Alltoall of the same bytes (no reordering at all).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import sys
import time

MARK = "TRANSPOSEBENCH "
FFTW_MEASURE = 0


def _fftw_contender(comm, n0: int, n1: int, itemsize: int, a_in):
    """A callable running FFTW-MPI's transpose of a copy of a_in, and its output array."""
    import numpy as np
    from mpi4py import MPI

    name = ctypes.util.find_library("fftw3_mpi")
    if name is None:
        return None, None, "libfftw3_mpi not found (Debian: libfftw3-mpi-dev)"
    mpi_lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    mpi_lib.fftw_mpi_init()
    size = comm.Get_size()
    if n0 % size or n1 % size:
        return None, None, "FFTW's default blocks differ from petacomm's when p does not divide"
    doubles = itemsize // 8  # complex128: howmany = 2 doubles per element
    src = np.empty(a_in.size * doubles, np.float64)
    dst = np.empty((n1 // size) * n0 * doubles, np.float64)
    plan_fn = mpi_lib.fftw_mpi_plan_many_transpose
    plan_fn.restype = ctypes.c_void_p
    plan_fn.argtypes = [ctypes.c_ssize_t] * 5 + [ctypes.c_void_p] * 3 + [ctypes.c_uint]
    handle = MPI._handleof(comm)
    plan = plan_fn(n0, n1, doubles, 0, 0, src.ctypes.data, dst.ctypes.data, handle, FFTW_MEASURE)
    if not plan:
        return None, None, "fftw_mpi_plan_many_transpose returned NULL"
    src[...] = a_in.view(np.float64).ravel()  # MEASURE overwrote the arrays while planning
    execute = mpi_lib.fftw_execute
    execute.argtypes = [ctypes.c_void_p]
    out = dst.view(a_in.dtype).reshape(n1 // size, n0)

    def run():
        execute(plan)  # reads src: the closure keeps it alive

    run.buffers = (src, dst)
    return run, out, ""


def _mpi4py_fft_contender(comm, n0: int, n1: int, a_in):
    try:
        import numpy as np
        from mpi4py_fft.pencil import Pencil, Subcomm
    except ImportError as err:
        return None, None, f"mpi4py-fft not importable ({err}; Debian: python3-mpi4py-fft)"
    sub = Subcomm(comm, [0, 1])
    rows = Pencil(sub, (n0, n1), axis=1)  # distributed along axis 0, axis 1 whole
    columns = rows.pencil(0)  # distributed along axis 1, axis 0 whole
    if rows.subshape != a_in.shape:
        return None, None, f"mpi4py-fft's layout {rows.subshape} differs from {a_in.shape}"
    transfer = rows.transfer(columns, a_in.dtype)
    a = a_in.copy()
    b = np.empty(columns.subshape, a_in.dtype)
    out = np.empty((columns.subshape[1], n0), a_in.dtype)

    def run():
        transfer.forward(a, b)
        np.copyto(out, b.T)  # the local transpose that gives petacomm's (and FFTW's) layout

    return run, out, ""


def _measure(comm, contenders: dict, reps: int, warmup: int) -> dict[str, list[float]]:
    """Seconds (max over ranks) per repetition, contenders interleaved and rotated."""
    from mpi4py import MPI

    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(warmup + reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            comm.Barrier()
            start = MPI.Wtime()
            contenders[name]()
            elapsed = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
            if rep >= warmup:
                times[name].append(elapsed)
    return times


def _case(comm, config: dict, n0: int, n1: int) -> dict:
    import numpy as np

    from petacomm.transpose import TransposePlan

    dtype = np.dtype(config["dtype"])
    size, rank = comm.Get_size(), comm.Get_rank()
    cost = config.get("cost")
    plans, contenders, outputs, notes = {}, {}, {}, {}
    first = None
    planners = ["auto", "measure"] if config.get("planners", True) else []
    for strategy in [*config["strategies"], *planners]:
        name = "auto" if strategy == "measure" else strategy
        if name == "xor" and size & (size - 1):
            notes[f"petacomm:{strategy}"] = "needs a power-of-two number of ranks"
            continue
        plan = TransposePlan(
            comm,
            (n0, n1),
            dtype,
            strategy=name,
            planner="measure" if strategy == "measure" else "estimate",
            cost=cost,
        )
        if first is None:
            rng = np.random.default_rng([rank, n0, n1])
            a_in = rng.standard_normal(plan.local_input_shape).astype(dtype)
            if dtype.kind == "c":
                a_in += 1j * rng.standard_normal(plan.local_input_shape)
            first = a_in
        out = plan.empty_output()
        plan.execute(first, out)  # "measure" times the candidates here
        key = f"petacomm:{strategy}"
        plans[key], outputs[key] = plan, out
        contenders[key] = lambda plan=plan, out=out, a=first: plan.execute(a, out)
    peers = config.get("peers", [])
    if "fftw-mpi" in peers:
        run, out, note = _fftw_contender(comm, n0, n1, dtype.itemsize, first)
        if run:
            run()
            contenders["fftw-mpi"], outputs["fftw-mpi"] = run, out
        else:
            notes["fftw-mpi"] = note
    if "mpi4py-fft" in peers:
        run, out, note = _mpi4py_fft_contender(comm, n0, n1, first)
        if run:
            run()
            contenders["mpi4py-fft"], outputs["mpi4py-fft"] = run, out
        else:
            notes["mpi4py-fft"] = note
    # The floor: one MPI_Alltoall of this rank's bytes in p equal blocks (the remainder,
    # under p bytes, left out when p does not divide them).
    send = np.ascontiguousarray(first).view(np.uint8).ravel()
    send = send[: send.size // size * size]
    recv = np.empty_like(send)
    contenders["floor"] = lambda: comm.Alltoall(send, recv)
    # Every contender's output must equal the first petacomm strategy's, on every rank.
    reference = outputs[next(iter(outputs))]
    agrees = {
        name: bool(comm.allreduce(int(np.array_equal(out, reference)), op=_min()))
        for name, out in outputs.items()
    }
    times = _measure(comm, contenders, config["reps"], config["warmup"])
    rows = []
    for name, samples in times.items():
        ordered = sorted(samples)
        rows.append(
            {
                "name": name,
                "kind": "petacomm" if name.startswith("petacomm:") else name,
                "seconds_median": ordered[len(ordered) // 2],
                "seconds_best": ordered[0],
                "agrees": agrees.get(name, True),
            }
        )
    chosen = {}
    for planner in planners:
        decision = plans[f"petacomm:{planner}"].describe()["transpose"]["decision"]
        chosen[planner] = {"choice": decision["choice"], "reason": decision["reason"]}
    bytes_per_rank = {
        name: plan.stats()["bytes"]["max"] for name, plan in plans.items() if ":" in name
    }
    for plan in plans.values():
        plan.free()
    return {
        "n0": n0,
        "n1": n1,
        "dtype": dtype.name,
        "array_bytes": n0 * n1 * dtype.itemsize,
        "contenders": rows,
        "notes": notes,
        "bytes_per_rank": bytes_per_rank,
        **chosen,
    }


def _min():
    from mpi4py import MPI

    return MPI.MIN


def worker_main(config_text: str) -> int:
    from mpi4py import MPI

    config = json.loads(config_text)
    comm = MPI.COMM_WORLD
    started = time.monotonic()
    cases = [_case(comm, config, n0, n1) for n0, n1 in config["cases"]]
    if comm.Get_rank() == 0:
        result = {
            "ranks": comm.Get_size(),
            "mpi_library": MPI.Get_library_version().split(",")[0].strip(),
            "python": sys.executable,
            "cases": cases,
            "wall_seconds": time.monotonic() - started,
        }
        print(MARK + json.dumps(result), flush=True)
    return 0
