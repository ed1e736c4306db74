"""MPI worker: TransposePlan, PencilPlan, the packed FFT and FourierFilter against numpy
references every rank computes from the same global arrays. One run loops over the whole
matrix: every strategy (from the registry) + auto + measure x dtype x howmany x
in/out-of-place x direction on uneven shapes, masks, two-level on virtual nodes, pencils
on every grid of the rank count, the filter's three variants. Prints 'matrix ok N'."""

import sys

import numpy as np
from mpi4py import MPI

import petacomm
from petacomm.transpose import irfft_packed, rfft_packed, strategies

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
NAMES = [s.name for s in strategies()]
POWER_OF_TWO = size & (size - 1) == 0
checks = 0


def block(n: int, p: int, r: int) -> tuple[int, int]:
    """(count, offset) of rank r: the first n mod p ranks hold one more (the documented rule)."""
    return n // p + (r < n % p), r * (n // p) + min(r, n % p)


def global_array(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-1000, 1000, shape).astype(np.float64)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.integers(-1000, 1000, shape)
    return values.astype(dtype)


def expect_equal(got, want, label):
    global checks
    checks += 1
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"rank {rank}: {label}: got {got.ravel()[:6]} want {want.ravel()[:6]}")


def slab_cases():
    # Every strategy x dtype on an uneven shape; howmany > 1 through every strategy on a
    # shape that leaves ranks without rows or columns at 7 and 8 ranks (the native matrix
    # covers every strategy x dtype x howmany through the C API).
    for dtype in DTYPES:
        full = global_array((7, 5, 1), dtype, seed=7)
        for strategy in [*NAMES, "auto"]:
            run_slab((7, 5), dtype, 1, full, strategy, None, 0)
    full = global_array((5, 3, 2), np.complex64, seed=3)
    for strategy in [*NAMES, "auto", "measure"]:
        run_slab((5, 3), np.complex64, 2, full, strategy, None, 0)
    # Masks through every strategy: columns j % 3 == 1 are treated as zero.
    shape = (10, 12)
    mask = np.arange(12) % 3 != 1
    full = global_array((*shape, 1), np.complex128, seed=5)
    for strategy in [*NAMES, "auto", "measure"]:
        run_slab(shape, np.complex128, 1, full, strategy, mask, 0)
    for node_size in (1, 2, 3):  # two-level on virtual nodes
        full = global_array((11, 13, 1), np.float64, 9)
        run_slab((11, 13), np.float64, 1, full, "two-level", None, node_size)


def run_slab(shape, dtype, howmany, full, strategy, mask, node_size):
    label = f"{shape} {np.dtype(dtype).name} howmany={howmany} {strategy} mask={mask is not None}"
    planner = "measure" if strategy == "measure" else "estimate"
    name = "auto" if strategy == "measure" else strategy
    if (name == "xor" and not POWER_OF_TWO) or (name == "partial" and mask is None):
        try:
            petacomm.TransposePlan(comm, shape, dtype, howmany=howmany, strategy=name, mask=mask)
        except ValueError as err:
            assert "strategy" in str(err), err
            return
        raise AssertionError(f"rank {rank}: {label}: expected a ValueError")
    plan = petacomm.TransposePlan(
        comm,
        shape,
        dtype,
        howmany=howmany,
        strategy=name,
        planner=planner,
        mask=mask,
        node_size=node_size,
        window=2,
        measure_reps=1,
    )
    rows, row0 = block(shape[0], size, rank)
    cols, col0 = block(shape[1], size, rank)
    assert plan.local_input_shape[:2] == (rows, shape[1]), (label, plan.local_input_shape)
    assert plan.local_output_shape[:2] == (cols, shape[0]), (label, plan.local_output_shape)
    source = full if mask is None else full * mask[None, :, None]
    tail = (howmany,) if howmany > 1 else ()
    mine = full[row0 : row0 + rows].reshape(rows, shape[1], *tail).copy()
    want_out = source.transpose(1, 0, 2)[col0 : col0 + cols].reshape(cols, shape[0], *tail)
    want_back = source[row0 : row0 + rows].reshape(rows, shape[1], *tail)
    # Out of place, both directions.
    before = mine.copy()
    out = plan.execute(mine)
    expect_equal(mine, before, label + " input untouched")
    expect_equal(out, want_out, label + " forward")
    expect_equal(plan.backward(out), want_back, label + " backward")
    # In place in one buffer.
    buffer = plan.empty_buffer()
    plan.input_view(buffer)[...] = mine
    plan.execute(plan.input_view(buffer), plan.output_view(buffer))
    expect_equal(plan.output_view(buffer), want_out, label + " forward in place")
    plan.execute(plan.output_view(buffer), plan.input_view(buffer), inverse=True)
    expect_equal(plan.input_view(buffer), want_back, label + " backward in place")
    if strategy not in ("auto", "measure"):
        assert plan.strategy == strategy, (label, plan.strategy)
    info = plan.describe()
    chosen = info["transpose"]["decision"]
    assert chosen["choice"] == plan.strategy and chosen["reason"], info
    if strategy == "measure":
        timed = [c for c in chosen["candidates"] if c["applicable"]]
        assert chosen["measured"] and all(c["measured_seconds"] > 0 for c in timed), chosen
    stats = plan.stats()
    assert stats["bytes"]["max"] >= 0 and stats["setup_seconds"] > 0, stats
    plan.free()


def pencil_index(layout, o, shape):
    """Global (a0, a1, a2) index arrays of a layout's local storage."""
    x, y, z = np.meshgrid(
        *(np.arange(s) + off for s, off in zip(shape, o, strict=True)), indexing="ij"
    )
    return {"z": (x, y, z), "y": (x, z, y), "x": (z, y, x)}[layout]


def pencil_cases():
    n = (5, 6, 7)
    full = global_array(n, np.complex128, seed=11)
    for p0 in (g for g in range(1, size + 1) if size % g == 0):
        p1 = size // p0
        for strategy in ("auto", "alltoallw"):
            plan = petacomm.PencilPlan(comm, n, (p0, p1), np.complex128, strategy=strategy)
            i0, i1 = divmod(rank, p1)
            c0, o0 = block(n[0], p0, i0)
            c1, o1 = block(n[1], p1, i1)
            c2, o2 = block(n[2], p1, i1)
            c1x, o1x = block(n[1], p0, i0)
            expected = {
                "z": ((c0, c1, n[2]), (o0, o1, 0)),
                "y": ((c0, c2, n[1]), (o0, o2, 0)),
                "x": ((c2, c1x, n[0]), (o2, o1x, 0)),
            }
            arrays = {}
            for layout, (shape, offset) in expected.items():
                assert plan.local(layout) == (shape, offset), (layout, plan.local(layout))
                arrays[layout] = full[pencil_index(layout, offset, shape)]
            current = arrays["z"].copy()
            for source, target in (("z", "y"), ("y", "x"), ("x", "y"), ("y", "z")):
                current = plan.execute(current, plan.empty(target), source, target)
                expect_equal(current, arrays[target], f"pencil {p0}x{p1} {strategy} {target}")
            plan.free()


def fft_cases():
    rng = np.random.default_rng(rank)
    for n in (2, 8, 30, 64):
        x = rng.standard_normal((4, n))
        packed = rfft_packed(x)
        reference = np.fft.rfft(x)
        assert packed.shape == (4, n // 2)
        assert np.allclose(packed[:, 0].real, reference[:, 0].real, rtol=1e-13, atol=1e-12)
        assert np.allclose(packed[:, 0].imag, reference[:, n // 2].real, rtol=1e-13, atol=1e-12)
        assert np.allclose(packed[:, 1:], reference[:, 1 : n // 2], rtol=1e-13, atol=1e-12)
        back = irfft_packed(packed)
        error = np.abs(back - x).max() / np.abs(x).max()
        assert error < 1e-14, (n, error)


def serial_filter(field, modes):
    n_chi, n_phi = field.shape[1:]
    spectrum = np.fft.fft2(field, axes=(1, 2))
    m = np.minimum(np.arange(n_chi), n_chi - np.arange(n_chi))
    k = np.minimum(np.arange(n_phi), n_phi - np.arange(n_phi))
    keep = (m[:, None] <= modes[0]) & (k[None, :] <= modes[1])
    return np.fft.ifft2(spectrum * keep, axes=(1, 2)).real


def filter_cases():
    global checks
    shape = (3, 12, 16)
    field = np.random.default_rng(3).standard_normal(shape)
    divisors = [g for g in range(2, size) if size % g == 0]
    middle = [(divisors[0], size // divisors[0])] if divisors else []
    grids = list(dict.fromkeys([(1, size), *middle, (size, 1)]))
    for modes in ((2, 3), (6, 8)):
        want = serial_filter(field, modes)
        for grid in grids:
            for variant in ("plain", "packed", "packed-partial"):
                f = petacomm.FourierFilter(comm, shape, modes, variant=variant, grid=grid)
                (s, c, _), (s0, c0, _) = f.local_shape, f.local_offset
                mine = field[s0 : s0 + s, c0 : c0 + c].copy()
                out = f.apply(mine)
                assert np.array_equal(mine, field[s0 : s0 + s, c0 : c0 + c]), "input modified"
                f.apply(mine, mine)  # in place
                local = want[s0 : s0 + s, c0 : c0 + c]
                sums = comm.allreduce(
                    np.array(
                        [np.sum((out - local) ** 2), np.sum((mine - local) ** 2), np.sum(local**2)]
                    )
                )
                error = np.sqrt(max(sums[0], sums[1]) / sums[2])
                assert error <= 1e-12, f"rank {rank}: {variant} {grid} {modes}: error {error}"
                checks += 1
                stats = f.stats()
                assert stats["applications"] == 2 and stats["total_seconds"] > 0, stats
                f.free()


def main() -> int:
    slab_cases()
    pencil_cases()
    fft_cases()
    filter_cases()
    print(f"matrix ok {checks}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
