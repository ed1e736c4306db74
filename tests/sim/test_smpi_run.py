"""petacomm.sim.smpi.run: a simulation past its timeout is stopped whole.

smpirun is a shell script that starts the simulator (smpimain) as its child; stopping only
the script once left simulators running for hours. A stand-in smpirun here does the same:
it starts a child that would run for minutes and waits for it."""

import os
import time

import pytest

from petacomm.errors import PetacommError
from petacomm.sim.smpi import SmpiTools, run


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _stand_in(tmp_path, script: str, ranks: int, timeout=None):
    """smpi.run with `script` as smpirun (a name the tests' launcher guard lets through)."""
    smpirun = tmp_path / "stand-in-smpirun"
    smpirun.write_text("#!/bin/sh\n" + script)
    smpirun.chmod(0o755)
    tree = tmp_path / "tree"
    (tree / "bin").mkdir(parents=True)
    (tree / "bin" / "program").write_text("")
    platform = tmp_path / "platform.xml"
    platform.write_text("")
    tools = SmpiTools(smpicc="smpicc", smpicxx="smpicxx", smpirun=str(smpirun))
    return run(tools, tree, ranks, platform, tmp_path / "hosts", ["program"], (), timeout=timeout)


def test_timeout_stops_the_simulator_too(tmp_path):
    child_pid = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(PetacommError, match="the simulation of 2 ranks did not finish within 1 s"):
        _stand_in(tmp_path, f'sleep 300 &\necho $! > "{child_pid}"\nwait\n', 2, timeout=1)
    assert time.monotonic() - started < 30
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the simulator (the stand-in's child) outlived the timeout"


def test_a_finished_run_returns_its_output(tmp_path):
    result = _stand_in(tmp_path, 'echo "out $2"\necho err >&2\nexit 3\n', 5)
    assert (result.stdout, result.stderr, result.returncode) == ("out 5\n", "err\n", 3)
