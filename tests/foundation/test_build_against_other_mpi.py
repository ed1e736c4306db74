"""The native part builds against any MPI with one setting, and refuses clearly without one.

These configure the real CMake project into temporary build trees (core only, to keep them
quick) and run the results: SimGrid SMPI (smpicxx/smpirun) on a simulated 2x2x2 torus, with
the SMPI tree the session shares (tests/smpi_build.py). (The build against Debian's Open
MPI through PETACOMM_MPICC, with the Fortran module, is installed and used by
test_packaging.py.)
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cli_harness import run_cli

ROOT = Path(__file__).resolve().parents[2]


def cmake() -> str:
    found = shutil.which("cmake") or str(Path(os.sys.executable).parent / "cmake")
    return found


def configure(build: Path, *defines: str) -> subprocess.CompletedProcess:
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
        check=False,
        timeout=300,
    )


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
def test_simgrid_smpi(tmp_path, smpi_build):
    (tmp_path / "platform.xml").write_text(PLATFORM)
    (tmp_path / "hosts").write_text("".join(f"node-{i}\n" for i in range(8)))
    hosts = tmp_path / "hosts"
    launch = ["smpirun", "-np", "4", "-platform", str(tmp_path / "platform.xml")]
    data = run_netbench([*launch, "-hostfile", str(hosts)], smpi_build, "8:64K", tmp_path, None)
    # Four simulated hosts: rank 0's partner lives on another node.
    assert [s["op"] for s in data["series"]][0] == "pingpong.inter"
    assert len(data["hosts"]) == 4


# Two hosts joined by one link of known latency and bandwidth. With the constant network
# model (CM02), no cross traffic (ACK) and SMPI's latency/bandwidth correction factors at 1,
# SimGrid moves n bytes from one host to the other in exactly LATENCY + n / BANDWIDTH; SMPI
# adds a fixed ~17 ns per exchange (its MPI_Wtime and call costs, 0.35 % of the latency).
LATENCY_S = 5e-6
BANDWIDTH_B_S = 1e9
TWO_HOSTS = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="1Gf"/>
    <host id="b" speed="1Gf"/>
    <link id="ab" bandwidth="{BANDWIDTH_B_S:.0f}Bps" latency="{LATENCY_S * 1e6:.0f}us"/>
    <route src="a" dst="b"><link_ctn id="ab"/></route>
  </zone>
</platform>
"""
# Four hosts, each with its own full-duplex link to a switch: a message crosses two links
# (2 x latency) at the link bandwidth, and in a ring or pairwise round every host sends one
# message and receives one without sharing a link direction.
STAR = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="{BANDWIDTH_B_S:.0f}Bps"
           lat="{LATENCY_S * 1e6 / 2}us" sharing_policy="SPLITDUPLEX"/>
</platform>
"""
EXACT_NETWORK = [
    "--cfg=network/model:CM02",
    "--cfg=network/crosstraffic:0",
    "--cfg=smpi/lat-factor:1",
    "--cfg=smpi/bw-factor:1",
    "--cfg=smpi/simulate-computation:no",
    "--cfg=smpi/allgather:ring",
    "--cfg=smpi/alltoall:pair",
]
# The fit of these exact times is exact; 1 % bounds SMPI's fixed costs with margin, while a
# round trip reported as one-way time (2x), or a unit slip (1000x), is far outside.
TOLERANCE = 0.01


def _smpi_netbench(tmp_path, tree, platform: str, ranks: int, ops: str) -> Path:
    (tmp_path / "platform.xml").write_text(platform)
    hosts = ["a", "b"] if ranks == 2 else [f"n{i}" for i in range(ranks)]
    (tmp_path / "hosts").write_text("\n".join(hosts) + "\n")
    launch = ["smpirun", "-np", str(ranks), "-platform", str(tmp_path / "platform.xml")]
    launch += ["-hostfile", str(tmp_path / "hosts"), *EXACT_NETWORK]
    raw = tmp_path / "raw.json"
    program = [str(tree / "bin" / "petacomm-netbench"), "-m", "8:4M", "-x", "1", "-i", "5"]
    done = subprocess.run(
        [*launch, *program, "-r", "2", "--ops", ops, "--json", str(raw)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return raw


def _table_row(text: str, name: str) -> list[str]:
    """The cells of the one table row whose first cells are ``name``'s words."""
    words = name.split()
    rows = [line.split() for line in text.splitlines() if line.split()[: len(words)] == words]
    assert len(rows) == 1, text
    return rows[0]


@pytest.mark.mpi
@pytest.mark.slow
def test_netbench_recovers_the_simulated_link(tmp_path, smpi_build):
    raw = _smpi_netbench(tmp_path, smpi_build, TWO_HOSTS, 2, "pingpong")
    model_file = tmp_path / "model.json"
    done = run_cli("netbench", "--raw", raw, "-o", model_file)
    assert done.returncode == 0, done.describe()
    piece = json.loads(model_file.read_text())["operations"]["pingpong.inter"]["pieces"]
    assert len(piece) == 1, piece  # one straight line: no protocol switch in the simulator
    assert piece[0]["alpha_s"] == pytest.approx(LATENCY_S, rel=TOLERANCE)  # one-way
    assert piece[0]["bandwidth_gb_s"] == pytest.approx(BANDWIDTH_B_S / 1e9, rel=TOLERANCE)
    # The printed tables: the units in their headers, the figures in those units.
    out = done.stdout
    assert "Time per operation, µs" in out and "alpha (µs)" in out and "1/beta (GB/s)" in out
    row = _table_row(out, "pingpong.inter")  # name, p, from, unit, -, to, unit, alpha, 1/beta
    assert float(row[7]) == pytest.approx(LATENCY_S * 1e6, rel=TOLERANCE)
    assert float(row[8]) == pytest.approx(BANDWIDTH_B_S / 1e9, rel=TOLERANCE)
    sizes = _table_row(out, "1 MiB")  # '1 MiB  median [min-max]'
    one_mib = LATENCY_S + (1 << 20) / BANDWIDTH_B_S
    assert float(sizes[2]) == pytest.approx(one_mib * 1e6, rel=TOLERANCE)


@pytest.mark.mpi
@pytest.mark.slow
def test_netbench_collectives_recover_the_simulated_bandwidth(tmp_path, smpi_build):
    raw = _smpi_netbench(tmp_path, smpi_build, STAR, 4, "pingpong,allgather,alltoall,bcast")
    model_file = tmp_path / "model.json"
    done = run_cli("netbench", "--raw", raw, "-o", model_file, "--json")
    assert done.returncode == 0, done.describe()
    from petacomm.model import load

    model = load(model_file)
    alpha, beta = model.alpha_beta("pingpong", nbytes=1 << 20)
    assert alpha == pytest.approx(LATENCY_S, rel=TOLERANCE)  # two links of half the latency
    assert 1 / beta == pytest.approx(BANDWIDTH_B_S, rel=TOLERANCE)
    # Ring allgather and pairwise alltoall: p-1 rounds of one n-byte message per rank, so
    # the effective per-byte cost (the fit's slope / W(p) = p-1) is the link's. SMPI adds
    # ~0.6 us of its own per round to collectives, so only the bandwidth term is compared.
    for op in ("allgather", "alltoall"):
        _, op_beta = model.alpha_beta(op, nbytes=1 << 20)
        assert 1 / op_beta == pytest.approx(BANDWIDTH_B_S, rel=TOLERANCE), op
        measured = next(pt for pt in model.operations[op].points if pt.nbytes == 1 << 20)
        assert model.predict(op, 1 << 20, 4) == pytest.approx(measured.median_s, rel=TOLERANCE)
    # A collective's time is the slowest rank's: a broadcast is not over before the data
    # reached the other ranks, which takes at least one message (two links) of n bytes. The
    # root alone can be done at once (small sends complete before they are received).
    for point in model.operations["bcast"].points:
        assert point.min_s >= LATENCY_S + point.nbytes / BANDWIDTH_B_S, point
