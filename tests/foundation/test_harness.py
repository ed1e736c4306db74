"""The MPI test harness itself: every rank's output collected, at every rank count."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpi_harness import RANK_COUNTS, mpi_test_env, mpirun, mpirun_python
from petacomm.launch import split_rank_output
from petacomm.native import build_info

HELLO = textwrap.dedent(
    """
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    total = comm.allreduce(comm.rank)
    print(f"rank {comm.rank} of {comm.size} sum {total}", flush=True)
    """
)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_every_rank_reports(tmp_path, ranks):
    script = tmp_path / "hello.py"
    script.write_text(HELLO)
    result = mpirun_python(ranks, str(script))
    assert sorted(result.by_rank) == list(range(ranks))
    expected_sum = ranks * (ranks - 1) // 2
    for rank in range(ranks):
        assert result.rank_lines(rank) == [f"rank {rank} of {ranks} sum {expected_sum}"]


@pytest.mark.mpi
def test_failure_reports_output(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import sys\nprint('about to fail')\nsys.exit(3)\n")
    with pytest.raises(AssertionError, match="about to fail"):
        mpirun(2, ["python3", str(script)])


def test_split_rank_output_formats():
    openmpi = "[1,0]<stdout>: a\n[1,2]<stderr>: b\nuntagged\n[1,0]<stdout>: c"
    assert split_rank_output(openmpi) == {0: ["a", "c"], 2: ["b"]}
    mpich = "[0] x\n[3] y"
    assert split_rank_output(mpich) == {0: ["x"], 3: ["y"]}


HANGS = textwrap.dedent(
    """
    import os, sys, time
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    open(os.path.join(sys.argv[1], f"pid-{comm.rank}"), "w").write(str(os.getpid()))
    print(f"rank {comm.rank} waiting", flush=True)
    if comm.rank == 0:
        comm.recv(source=MPI.ANY_SOURCE)  # nobody sends: a hang
    else:
        time.sleep(3600)
    """
)


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.mpi
def test_timeout_fails_showing_each_rank_and_kills_every_rank(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(HANGS)
    with pytest.raises(AssertionError) as failure:
        mpirun_python(2, str(script), str(tmp_path), timeout=8)
    message = str(failure.value)
    assert "did not finish within 8 s" in message
    for rank in (0, 1):
        assert f"--- rank {rank}\nrank {rank} waiting" in message, message
    pids = [int((tmp_path / f"pid-{rank}").read_text()) for rank in (0, 1)]
    assert not [pid for pid in pids if _alive(pid)], "ranks left running after the timeout"


@pytest.mark.mpi
def test_exception_on_one_rank_aborts_the_job(tmp_path):
    """Rank 1 raises while rank 0 waits for it forever: the job must end (mpi4py aborts it),
    not run into the harness timeout (which would fail the test)."""
    script = tmp_path / "raises.py"
    script.write_text(
        "from mpi4py import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "if comm.rank == 1:\n"
        "    raise ValueError('worker failed on purpose')\n"
        "comm.recv(source=1)\n"
    )
    result = mpirun_python(2, str(script), timeout=120, check=False)
    assert result.returncode != 0
    assert "ValueError: worker failed on purpose" in result.stdout + result.stderr


def test_unmarked_test_cannot_start_ranks(tmp_path):
    """This test has no mpi marker (tests/conftest.py): starting ranks fails it, directly or
    through the petacomm command; asking the launcher for its version does not."""
    launcher = build_info()["mpiexec"]
    assert subprocess.run([launcher, "--version"], capture_output=True).returncode == 0
    with pytest.raises(pytest.fail.Exception, match="is not marked @pytest.mark.mpi"):
        subprocess.run([launcher, "-n", "1", "true"], capture_output=True)
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "netbench", "-n", "2", "-o", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
    )
    assert done.returncode != 0 and "is not marked @pytest.mark.mpi" in done.stderr, done.stderr
