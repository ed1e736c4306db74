"""`petacomm bench profiler-overhead` runs and prints its figures with units (the figures
themselves are measured by the command, not asserted: this machine is shared and noisy)."""

import json

import pytest

from conftest import petacomm

pytestmark = pytest.mark.mpi


def test_overhead_command_prints_figures(tmp_path):
    out = tmp_path / "overhead.json"
    done = petacomm(
        "bench", "profiler-overhead", "--iterations", "20", "--calls", "2000", "--reps", "1",
        "--compute-us", "10", "--json", str(out),
    )  # fmt: skip
    assert "slowdown" in done.stdout and " %" in done.stdout
    assert "added per call" in done.stdout and " ns" in done.stdout
    figures = json.loads(out.read_text())
    assert figures["raw"]["profiler_active"] is True
    assert figures["calls_with_profiler_s"] > 0 and figures["mix_without_profiler_s"] > 0


def test_overhead_command_checks_arguments():
    done = petacomm("bench", "profiler-overhead", "--reps", "0", check=False)
    assert done.returncode == 2 and "--reps: must be a positive integer" in done.stderr
