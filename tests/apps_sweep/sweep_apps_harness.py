"""Finds and runs petacomm-sweep3d and petacomm-halo for the tests (the installed wheel's
programs, or a build tree's through PETACOMM_NATIVE_DIR)."""

from __future__ import annotations

from mpi_harness import MpiResult, mpirun


def program(name: str) -> str:
    from petacomm.native import program_path

    return str(program_path(name))


# Open MPI 5 prints a harmless osc/ucx error for every shared-memory window (the node-aware
# transports create one) on machines without UCX transports; the node layer does not use it.
QUIET = {"OMPI_MCA_osc": "^ucx"}


def run_app(name: str, ranks: int, *args, check: bool = True, timeout: float = 120) -> MpiResult:
    return mpirun(
        ranks,
        [program(name), *map(str, args)],
        check=check,
        tag_output=False,
        timeout=timeout,
        env=QUIET,
    )


def expect_app_error(done: MpiResult, name: str, *texts: str) -> str:
    """A clean refusal: exit status 2 and exactly one error line (rank 0's) containing every
    one of ``texts``; no output on standard output."""
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith(f"{name}: error:")]
    assert len(lines) == 1, done.stderr
    for text in texts:
        assert text in lines[0], lines[0]
    assert done.stdout.strip() == "", done.stdout
    return lines[0]
