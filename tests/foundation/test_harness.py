"""The MPI test harness itself: every rank's output collected, at every rank count."""

import textwrap

import pytest

from mpi_harness import RANK_COUNTS, mpirun, mpirun_python
from petacomm.launch import split_rank_output

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
