"""SimGrid SMPI: finding it, building petacomm's programs with it, running one simulation.

Programs are built once per source version with ``smpicc``/``smpicxx`` (CMake option
``PETACOMM_SMPI``) into the native build cache (``petacomm.native_build``), and run with
``smpirun`` on a platform file and a hostfile (``petacomm.sim.platform``).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from petacomm.errors import PetacommError

INSTALL_HINT = (
    "install SimGrid's SMPI: apt-get install libsimgrid-dev simgrid (Debian/Ubuntu; "
    "'bash scripts/setup.sh --test' does it), or put the bin directory of a SimGrid "
    "installation (smpicc, smpicxx, smpirun) on PATH"
)

# The network model under which a simulated message of n bytes over one link takes exactly
# latency + n / bandwidth (tests/sim checks it): SimGrid's constant-factor model CM02, no
# TCP acknowledgement traffic, SMPI's latency/bandwidth correction factors at 1, and compute
# bursts not simulated, so the simulated time is communication alone. ``calibrated`` keeps
# SimGrid's and SMPI's defaults (factors calibrated on real clusters; compute is simulated
# at the host speed).
NETWORK_MODELS = {
    "exact": (
        "--cfg=network/model:CM02",
        "--cfg=network/crosstraffic:0",
        "--cfg=smpi/lat-factor:1",
        "--cfg=smpi/bw-factor:1",
        "--cfg=smpi/simulate-computation:no",
    ),
    "calibrated": (),
}
# Collectives: the algorithms Open MPI's tuned component would pick (SMPI's "ompi" selector).
# SMPI charges 100 us of simulated time per MPI_Iprobe and MPI_Test call by default (to keep
# polling loops from spinning); a real call costs ~100 ns, and petacomm's NBX discovery
# polls: the default made a 16-rank directory setup 18x slower than with 100 ns.
# Broadcasts by binomial tree (Open MPI's tuned choice for small messages, which is all the
# presets broadcast, outside their timed parts): SMPI 3.32 broadcasts a new communicator's
# id at every MPI_Comm_dup/split/Cart_create, and through the ompi selector that bcast
# first builds SMP-aware communicators with an allgather ring, p(p-1) messages: a 1024-rank
# halo simulation took 44.7 s instead of 1.4 s, with the same simulated times.
COMMON_OPTIONS = (
    "--cfg=smpi/coll-selector:ompi",
    "--cfg=smpi/bcast:binomial_tree",
    "--cfg=smpi/iprobe:1e-7",
    "--cfg=smpi/test:1e-7",
    "--cfg=smpi/display-timing:no",
)


@dataclass(frozen=True)
class SmpiTools:
    smpicc: str
    smpicxx: str
    smpirun: str
    lib_dir: str | None = None  # a SimGrid installed in a prefix (--simgrid): its libsimgrid


def find_tools(prefix: str | None = None) -> SmpiTools:
    """smpicc, smpicxx and smpirun on PATH, or in ``prefix``/bin when given (``--simgrid``,
    e.g. the build of scripts/build-simgrid.sh); PetacommError saying what to install
    otherwise."""
    names = ("smpicc", "smpicxx", "smpirun")
    if prefix is None:
        found = {name: shutil.which(name) for name in names}
        missing = [name for name, path in found.items() if path is None]
        if missing:
            raise PetacommError(
                f"SimGrid SMPI not found ({', '.join(missing)} not on PATH): {INSTALL_HINT}"
            )
        return SmpiTools(**found)
    root = Path(prefix).expanduser().resolve()
    found = {name: root / "bin" / name for name in names}
    missing = [name for name, path in found.items() if not os.access(path, os.X_OK)]
    if missing:
        raise PetacommError(
            f"--simgrid: {', '.join(missing)} not found in {root / 'bin'} (give the prefix "
            "a SimGrid was installed in, e.g. by scripts/build-simgrid.sh)"
        )
    # The compilers' real paths key the build cache: a prefix linking to another SimGrid's
    # compilers shares its builds.
    return SmpiTools(
        smpicc=str(found["smpicc"].resolve()),
        smpicxx=str(found["smpicxx"].resolve()),
        smpirun=str(found["smpirun"]),
        lib_dir=str(root / "lib"),
    )


def build_programs(tools: SmpiTools, families: tuple[str, ...], targets: tuple[str, ...], log):
    """The programs ``targets`` of ``families`` built with SMPI: the build tree, holding bin/
    and lib/. One tree per SMPI installation, source version, family set and build tools
    (cmake, ninja, Python), each program built there at its first use: presets of the same
    families (halo, graph and sweep3d; sparse-reduce and the map-maker) share one
    libpetacomm, compiled once."""
    from petacomm.native_build import build_cache, source_tree
    from petacomm.profile.builder import shared_cmake_tree

    tree, existed = shared_cmake_tree(
        tools.smpicc,
        source_tree(),
        build_cache(),
        defines=(
            "-DPETACOMM_SMPI=ON",
            f"-DCMAKE_C_COMPILER={tools.smpicc}",
            f"-DCMAKE_CXX_COMPILER={tools.smpicxx}",
            f"-DPETACOMM_FAMILIES={';'.join(families)}",
            "-DPETACOMM_BUILD_TESTS=OFF",
            "-DPETACOMM_FORTRAN=OFF",
        ),
        targets=targets,
        jobs=2,
        log=log,
    )
    if not existed:
        log(f"built {', '.join(targets)} with SimGrid SMPI in {tree}")
    return tree


@dataclass
class SmpiResult:
    stdout: str
    stderr: str
    returncode: int
    wall_s: float
    cpu_s: float  # user + system time of smpirun and its children: steadier than wall time


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stop_session(process: subprocess.Popen) -> None:
    """Kills every process of ``process``'s session (smpirun and its simulator) and reaps it."""
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def run(
    tools: SmpiTools,
    tree: Path,
    ranks: int,
    platform_file: Path,
    hostfile: Path,
    argv: list[str],
    options: tuple[str, ...],
    timeout: float | None = None,
) -> SmpiResult:
    """Runs ``argv`` (its program from ``tree``/bin) on ``ranks`` simulated ranks."""
    program = tree / "bin" / argv[0]
    if not program.exists():
        raise PetacommError(f"{program} is missing from the SMPI build (rebuild: remove {tree})")
    command = [tools.smpirun, "-np", str(ranks), "-platform", str(platform_file)]
    command += ["-hostfile", str(hostfile), *COMMON_OPTIONS, *options, str(program), *argv[1:]]
    env = dict(os.environ)
    # The programs' rpath names their build directory, gone once the build was cached.
    # A SimGrid of --simgrid: its libsimgrid before any other on the system.
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(tree / "lib"), tools.lib_dir, env.get("LD_LIBRARY_PATH", "")) if p
    )
    start, cpu = time.monotonic(), _children_cpu_s()
    # smpirun is a shell script whose simulator (smpimain) is its child: in a session of its
    # own, so that a timeout (or an interrupt) stops the simulator too, not only the script.
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        cwd=platform_file.parent,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as err:
        _stop_session(process)
        raise PetacommError(
            f"the simulation of {ranks} ranks did not finish within {timeout:.0f} s"
        ) from err
    except BaseException:
        _stop_session(process)
        raise
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    return SmpiResult(
        done.stdout,
        done.stderr,
        done.returncode,
        time.monotonic() - start,
        _children_cpu_s() - cpu,
    )
