"""Profilers for other MPI libraries: ``petacomm profiler build --mpicc PATH`` and the choice
of the profiler that matches a program.

A PMPI profiler must be built against the MPI library the program runs with. petacomm ships
one built against the MPI it was installed with; for a program built with another MPI (a
cluster's, Debian's) ``profiler build`` compiles one from the sources shipped in
``share/prof-src`` into a cache directory (``PETACOMM_PROF_CACHE``, default the user cache
``petacomm/profilers``), and ``petacomm profile`` picks the one whose ``libmpi`` is the
program's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from petacomm import __version__
from petacomm.errors import PetacommError
from petacomm.native import library_path, native_dir

_LIBMPI = re.compile(r"^\s*(libmpi(?:ch)?\.so[.\d]*)\s*=>\s*(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Profiler:
    library: Path
    libmpi: Path | None  # the libmpi it links, resolved
    mpicc: str
    origin: str  # "bundled" or the cache directory


def cache_root() -> Path:
    override = os.environ.get("PETACOMM_PROF_CACHE")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("petacomm")) / "profilers"


def libmpi_of(path: Path) -> Path | None:
    """The MPI library a dynamically linked ELF file loads (resolved), or None."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
        done = subprocess.run(
            ["ldd", str(path)], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _LIBMPI.search(done.stdout)
    if not match or match.group(2) == "not":
        return None
    return Path(match.group(2)).resolve()


def bundled() -> Profiler:
    lib = library_path("petacomm-prof")
    from petacomm.native import build_info

    try:
        mpicc = build_info().get("mpicc", "")
    except PetacommError:
        mpicc = ""
    return Profiler(lib, libmpi_of(lib), mpicc, "bundled")


def cached() -> list[Profiler]:
    root = cache_root()
    out = []
    if not root.is_dir():
        return out
    for record in sorted(root.glob("*/profiler.json")):
        try:
            info = json.loads(record.read_text())
            lib = record.parent / "lib" / "libpetacomm-prof.so"
        except (OSError, json.JSONDecodeError):
            continue
        if lib.exists():
            libmpi = info.get("libmpi")
            out.append(
                Profiler(lib, Path(libmpi) if libmpi else None, info.get("mpicc", ""), str(root))
            )
    return out


def available() -> list[Profiler]:
    found = []
    with contextlib.suppress(PetacommError):
        found.append(bundled())
    return found + cached()


def suggest_mpicc(libmpi: Path) -> str:
    """The mpicc most likely belonging to ``libmpi`` (for the error message)."""
    candidates = [libmpi.parent.parent / "bin" / "mpicc"]
    if str(libmpi).startswith(("/usr/lib", "/lib")):
        candidates.append(Path("/usr/bin/mpicc"))
    for c in candidates:
        if c.exists():
            return str(c)
    return "/path/to/that/mpicc"


def choose(program: Path | None) -> tuple[Profiler, str | None]:
    """The profiler for ``program`` and a note when the choice is a guess.

    Raises PetacommError saying which profiler to build when none matches the program's MPI.
    """
    profilers = available()
    if not profilers:
        raise PetacommError(
            "no profiler library found: petacomm's native part is not built "
            "(reinstall with 'pip install .', or run 'petacomm profiler build --mpicc PATH')"
        )
    libmpi = libmpi_of(program) if program else None
    if libmpi is None:
        what = f"{program}" if program else "the program"
        return profilers[0], (
            f"cannot tell which MPI library {what} uses (a script or a static binary): "
            f"using the profiler built against {profilers[0].libmpi or 'an unknown libmpi'}"
        )
    for p in profilers:
        if p.libmpi is not None and p.libmpi == libmpi:
            return p, None
    have = ", ".join(str(p.libmpi) for p in profilers)
    raise PetacommError(
        f"{program} uses {libmpi}, and no profiler is built against it (profilers here link "
        f"{have}). Build one with: petacomm profiler build --mpicc {suggest_mpicc(libmpi)}"
    )


def _source_dir() -> Path:
    src = native_dir() / "share" / "prof-src"
    if not (src / "CMakeLists.txt").exists():
        raise PetacommError(
            f"profiler sources not found in {src} (reinstall petacomm, or set "
            "PETACOMM_NATIVE_DIR to a build tree)"
        )
    return src


def _source_hash(src: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(src.rglob("*")):
        if f.is_file():
            h.update(f.relative_to(src).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if os.access(beside, os.X_OK) else shutil.which(name)


def build(mpicc: str, *, jobs: int | None = None, verbose: bool = False, log=print) -> Profiler:
    """Builds (or finds already built) the profiler for the MPI of ``mpicc``."""
    resolved = shutil.which(mpicc)
    if not resolved:
        raise PetacommError(f"--mpicc: '{mpicc}' not found or not executable")
    # Not resolved: wrappers such as Open MPI's opal_wrapper behave by the name they are run as.
    mpicc_path = Path(os.path.abspath(resolved))
    cmake = _tool("cmake")
    if not cmake:
        raise PetacommError("cmake not found: install it (pip install cmake) to build profilers")
    src = _source_dir()
    key = hashlib.sha256(f"{mpicc_path}|{_source_hash(src)}".encode()).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(mpicc_path.parent).strip("/")) or "mpi"
    target = cache_root() / f"{name}-{key}"
    record = target / "profiler.json"
    lib = target / "lib" / "libpetacomm-prof.so"
    if record.exists() and lib.exists():
        info = json.loads(record.read_text())
        log(f"profiler for {mpicc_path} already built: {lib}")
        return Profiler(
            lib, Path(info["libmpi"]) if info.get("libmpi") else None, str(mpicc_path), str(target)
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    build_dir = work / "build"
    ninja = _tool("ninja")
    configure = [
        cmake,
        "-S",
        str(src),
        "-B",
        str(build_dir),
        f"-DPETACOMM_MPICC={mpicc_path}",
        f"-DPETACOMM_VERSION={__version__}",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DPython3_EXECUTABLE={sys.executable}",
    ]
    if ninja:
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    steps = [configure, [cmake, "--build", str(build_dir), "-j", str(jobs or os.cpu_count() or 1)]]
    log(f"building the profiler for {mpicc_path} in {target} ...")
    for step in steps:
        done = subprocess.run(step, capture_output=not verbose, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join(((done.stdout or "") + (done.stderr or "")).splitlines()[-25:])
            shutil.rmtree(work, ignore_errors=True)
            raise PetacommError(
                f"building the profiler for {mpicc_path} failed ({' '.join(step[:2])} ...):\n{tail}"
            )
    built = build_dir / "lib" / "libpetacomm-prof.so"
    libmpi = libmpi_of(built)
    (work / "lib").mkdir()
    shutil.copy2(built, work / "lib" / built.name)
    static = build_dir / "lib" / "libpetacomm-prof.a"
    if static.exists():
        shutil.copy2(static, work / "lib" / static.name)
    bench = build_dir / "bin" / "petacomm-prof-overhead"
    if bench.exists():
        (work / "bin").mkdir()
        shutil.copy2(bench, work / "bin" / bench.name)
    (work / "profiler.json").write_text(
        json.dumps(
            {
                "mpicc": str(mpicc_path),
                "libmpi": str(libmpi) if libmpi else None,
                "petacomm_version": __version__,
                "source": key,
            },
            indent=2,
        )
    )
    shutil.rmtree(build_dir, ignore_errors=True)
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)
    os.replace(work, target)
    lib = target / "lib" / "libpetacomm-prof.so"
    log(f"built {lib} (links {libmpi or 'no libmpi?'})")
    return Profiler(lib, libmpi, str(mpicc_path), str(target))
