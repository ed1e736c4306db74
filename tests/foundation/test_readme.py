"""The README's promises: CI runs exactly its test command, and its examples run."""

import re
from pathlib import Path

import pytest

from mpi_harness import mpirun_python

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, re.S)


def test_ci_runs_exactly_the_readme_test_command():
    setup_command, test_command = (block.strip() for block in shell_blocks()[:2])
    assert setup_command == "bash scripts/main.sh"
    ci = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))
    ]
    assert ci == [test_command]


@pytest.mark.mpi
def test_sparse_reduce_example_runs(tmp_path):
    block = next(
        b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "SparseReducePlan" in b
    )
    script = tmp_path / "example.py"
    script.write_text(block)
    result = mpirun_python(3, str(script), timeout=120)
    assert all(lines for lines in result.by_rank.values()) and len(result.by_rank) == 3
