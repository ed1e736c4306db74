"""The native part builds against any MPI with one setting, and refuses clearly without one.

These configure the real CMake project into temporary build trees (core + netbench only,
to keep them quick) and run the results: SimGrid SMPI (smpicxx/smpirun) on a simulated
2x2x2 torus. (The build against Debian's Open MPI through PETACOMM_MPICC, with the Fortran
module, is installed and used by test_packaging.py.)
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from prerequisites import require_program

ROOT = Path(__file__).resolve().parents[2]


def cmake() -> str:
    found = shutil.which("cmake") or str(Path(os.sys.executable).parent / "cmake")
    return found


def configure(build: Path, *defines: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            cmake(),
            "-S",
            str(ROOT),
            "-B",
            str(build),
            "-DPETACOMM_FAMILIES=",
            "-DPETACOMM_BUILD_TESTS=OFF",
            *defines,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


def build(build_dir: Path) -> None:
    done = subprocess.run(
        [cmake(), "--build", str(build_dir), "-j2"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def run_netbench(launch: list[str], build_dir: Path, sizes: str, tmp_path: Path, env) -> dict:
    """Runs the built petacomm-netbench with a launcher prefix; returns its raw JSON."""
    raw = tmp_path / "raw.json"
    program = [str(build_dir / "bin" / "petacomm-netbench"), "-m", sizes, "-i", "3", "-r", "2"]
    done = subprocess.run(
        [*launch, *program, "--json", str(raw)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(raw.read_text())


def test_refuses_without_mpi(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("mpicc", "mpicxx"):
        wrapper = fake / name
        wrapper.write_text("#!/bin/sh\nexit 1\n")
        wrapper.chmod(0o755)
    done = configure(tmp_path / "b", f"-DPETACOMM_MPICC={fake / 'mpicc'}")
    assert done.returncode != 0
    assert "petacomm: no MPI found to build against" in done.stderr
    assert "PETACOMM_MPICC=" in done.stderr


def test_refuses_missing_wrapper(tmp_path):
    done = configure(tmp_path / "b", f"-DPETACOMM_MPICC={tmp_path / 'nope' / 'mpicc'}")
    assert done.returncode != 0 and "does not exist" in done.stderr


PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="torus" prefix="node-" suffix="" radical="0-7" speed="1Gf" bw="10GBps"
           lat="1us" topology="TORUS" topo_parameters="2,2,2"/>
</platform>
"""


@pytest.mark.mpi
@pytest.mark.slow
def test_simgrid_smpi(tmp_path):
    require_program("smpicxx", "SimGrid SMPI: apt-get install libsimgrid-dev")
    out = tmp_path / "b"
    env = dict(os.environ, CC="smpicc", CXX="smpicxx")
    done = configure(out, "-DPETACOMM_SMPI=ON", env=env)
    assert done.returncode == 0, done.stderr
    build(out)
    (tmp_path / "platform.xml").write_text(PLATFORM)
    (tmp_path / "hosts").write_text("".join(f"node-{i}\n" for i in range(8)))
    hosts = tmp_path / "hosts"
    launch = ["smpirun", "-np", "4", "-platform", str(tmp_path / "platform.xml")]
    data = run_netbench([*launch, "-hostfile", str(hosts)], out, "8:64K", tmp_path, None)
    # Four simulated hosts: rank 0's partner lives on another node.
    assert [s["op"] for s in data["series"]][0] == "pingpong.inter"
    assert len(data["hosts"]) == 4
