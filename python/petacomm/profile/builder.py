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
import shlex
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


def cache_root(writable: bool = False) -> Path:
    """Where built profilers are kept: PETACOMM_PROF_CACHE, else the user cache. With
    ``writable`` (to build into it): created, an error naming it when it cannot be written."""
    from petacomm.user_cache import cache_directory, writable_cache_directory

    find = writable_cache_directory if writable else cache_directory
    return find("profilers", "PETACOMM_PROF_CACHE")


def libmpi_of(path: Path) -> Path | None:
    """The MPI library a dynamically linked ELF file loads (resolved), or None. Remembered per
    file and LD_LIBRARY_PATH (probes.py): ``ldd`` runs once per program."""
    from petacomm.profile import probes

    found = probes.remembered(
        "ldd-libmpi", path, lambda: _ldd_libmpi(path), extra=probes.library_path_key()
    )
    return Path(found) if found else None


def _ldd_libmpi(path: Path) -> str | None:
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
    return str(Path(match.group(2)).resolve())


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


def mpi_family(libmpi: Path | None) -> str:
    """A readable name for the MPI implementation of a libmpi (from its file name)."""
    if libmpi is None:
        return "an unknown MPI"
    name = libmpi.name
    if name.startswith("libmpich"):
        return "MPICH"
    if name.startswith("libmpi.so.40") or "openmpi" in str(libmpi).lower():
        return "Open MPI"
    if name.startswith("libmpi.so.12"):
        return "an MPICH-ABI MPI (MPICH, Intel MPI)"
    return "an MPI"


def _show(mpicc: Path) -> str:
    """The compile line an MPI compiler wrapper runs (MPICH/Intel ``-show``, Open MPI too)."""
    try:
        done = subprocess.run(
            [str(mpicc), "-show"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def libmpi_of_mpicc(mpicc: Path) -> Path | None:
    """The MPI library ``mpicc`` links programs against (resolved), from its ``-show`` line."""
    try:
        words = shlex.split(_show(mpicc))
    except ValueError:
        return None
    dirs = [Path(w[2:]) for w in words if w.startswith("-L") and len(w) > 2]
    dirs += [Path(p) for p in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib")]
    for lib in (w[2:] for w in words if w.startswith("-l")):
        if lib in ("mpi", "mpich"):
            for d in dirs:
                if (d / f"lib{lib}.so").exists():
                    return (d / f"lib{lib}.so").resolve()
    return None


def suggest_mpicc(libmpi: Path) -> str | None:
    """The mpicc that links ``libmpi`` (checked with its ``-show`` line), or None."""
    prefix = libmpi.parent.parent
    candidates = [
        # Debian's MPIs by their own names first: /usr/bin/mpicc is whichever one the
        # alternatives system points to today.
        Path("/usr/bin/mpicc.openmpi"),
        Path("/usr/bin/mpicc.mpich"),
        prefix / "bin" / "mpicc",
        prefix.parent / "bin" / "mpicc",
        Path(shutil.which("mpicc") or "/usr/bin/mpicc"),
    ]
    seen = set()
    for c in candidates:
        if c in seen or not os.access(c, os.X_OK):
            continue
        seen.add(c)
        if _same_library(libmpi_of_mpicc(c), libmpi):
            return str(c)
    return None


def _same_library(a: Path | None, b: Path) -> bool:
    """Same file, or the same library in the same directory (the linker's libmpi.so need not
    be a link to the runtime's libmpi.so.40: the Open MPI wheel's is a linker script)."""
    if a is None:
        return False
    return a == b or (a.parent == b.parent and a.name.split(".so")[0] == b.name.split(".so")[0])


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
    family = mpi_family(libmpi)
    have = "; ".join(f"{mpi_family(p.libmpi)} ({p.libmpi})" for p in profilers)
    mpicc = suggest_mpicc(libmpi)
    how = (
        f"petacomm profiler build --mpicc {mpicc}"
        if mpicc
        else f"petacomm profiler build --mpicc /path/to/mpicc (the mpicc that links {libmpi.name})"
    )
    raise PetacommError(
        f"{program} is built against {family} ({libmpi}), and no profiler here is: it needs "
        f"a profiler built for {family}. Build it once with:\n    {how}\nthen run this "
        f"command again (or add --mpicc to 'petacomm profile'). Profilers available: {have}"
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
    # Byte-code caches appear when the generator runs from the installed sources; they are
    # not sources, and hashing them made the first build after every reinstall a rebuild.
    h = hashlib.sha256()
    for f in sorted(src.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
            h.update(f.relative_to(src).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if os.access(beside, os.X_OK) else shutil.which(name)


def _compiler_and_cmake(mpicc: str) -> tuple[Path, str]:
    """The absolute path of ``mpicc`` and the cmake to build with; errors naming what is
    missing."""
    resolved = shutil.which(mpicc)
    if not resolved:
        raise PetacommError(f"--mpicc: '{mpicc}' not found or not executable")
    # Not resolved: wrappers such as Open MPI's opal_wrapper behave by the name they are run as.
    mpicc_path = Path(os.path.abspath(resolved))
    cmake = _tool("cmake")
    if not cmake:
        raise PetacommError(
            "cmake not found: install it (pip install cmake) to build for another MPI"
        )
    return mpicc_path, cmake


def _cache_key(mpicc_path: Path, source: Path, defines: tuple[str, ...]) -> tuple[str, str]:
    """(name from the MPI's directory, hash of the MPI, the sources and the defines)."""
    fingerprint = f"{mpicc_path}|{_source_hash(source)}|{'|'.join(defines)}"
    key = hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(mpicc_path.parent).strip("/")) or "mpi", key


def _configure_command(cmake, mpicc_path: Path, source: Path, build_dir: Path, defines):
    configure = [
        cmake,
        "-S",
        str(source),
        "-B",
        str(build_dir),
        f"-DPETACOMM_MPICC={mpicc_path}",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DPython3_EXECUTABLE={sys.executable}",
        *defines,
    ]
    ninja = _tool("ninja")
    if ninja:
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    return configure


def _build_command(cmake, build_dir: Path, targets, jobs):
    build = [cmake, "--build", str(build_dir), "-j", str(jobs or os.cpu_count() or 1)]
    return build + ["--target", *targets] if targets else build


def _run_build_step(step: list[str], mpicc_path: Path, verbose: bool) -> None:
    done = subprocess.run(step, capture_output=not verbose, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(((done.stdout or "") + (done.stderr or "")).splitlines()[-25:])
        raise PetacommError(f"building for {mpicc_path} failed ({' '.join(step[:2])} ...):\n{tail}")


def cached_cmake_build(
    mpicc: str,
    source: Path,
    cache: Path,
    *,
    defines: tuple[str, ...] = (),
    targets: tuple[str, ...] = (),
    collect,
    record_name: str,
    jobs: int | None = None,
    verbose: bool = False,
    log=print,
) -> tuple[Path, dict, bool]:
    """Configures and builds the CMake project ``source`` against the MPI of ``mpicc`` into
    ``cache``/<MPI directory>-<hash of mpicc, sources and defines>, once.

    ``targets``: only these CMake targets (default: all). ``collect(build_dir, work_dir)``
    copies what is kept from the build tree into the new
    cache entry and returns fields for its record (``record_name``, JSON). Returns (entry
    directory, record, True when it was already built). The entry appears atomically.
    """
    mpicc_path, cmake = _compiler_and_cmake(mpicc)
    name, key = _cache_key(mpicc_path, source, defines)
    target = cache / f"{name}-{key}"
    record = target / record_name
    if record.exists():
        return target, json.loads(record.read_text()), True
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    build_dir = work / "build"
    log(f"building {source.name} for {mpicc_path} in {target} ...")
    steps = [
        _configure_command(cmake, mpicc_path, source, build_dir, defines),
        _build_command(cmake, build_dir, targets, jobs),
    ]
    for step in steps:
        try:
            _run_build_step(step, mpicc_path, verbose)
        except PetacommError:
            shutil.rmtree(work, ignore_errors=True)
            raise
    info = {"mpicc": str(mpicc_path), "petacomm_version": __version__, "source": key}
    info.update(collect(build_dir, work))
    (work / record_name).write_text(json.dumps(info, indent=2))
    shutil.rmtree(build_dir, ignore_errors=True)
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)
    os.replace(work, target)
    return target, info, False


def shared_cmake_tree(
    mpicc: str,
    source: Path,
    cache: Path,
    *,
    defines: tuple[str, ...] = (),
    targets: tuple[str, ...],
    jobs: int | None = None,
    log=print,
) -> tuple[Path, bool]:
    """Builds ``targets`` in the one CMake build tree of (``mpicc``, sources, ``defines``,
    and the cmake, ninja and Python it is configured with: their paths are written into the
    tree) under ``cache``, configured at its first use: each call builds only what its
    targets need and the tree does not have yet, so calls for different targets share the
    library and the objects they have in common (where cached_cmake_build makes one tree per
    target list). Builds in one tree wait for each other (a lock file beside it); what a
    finished build made is never rewritten, since the sources are part of the tree's key.
    Returns (the tree, True when its targets were built already)."""
    import fcntl

    mpicc_path, cmake = _compiler_and_cmake(mpicc)
    tools = (f"cmake={cmake}", f"ninja={_tool('ninja') or ''}", f"python={sys.executable}")
    name, key = _cache_key(mpicc_path, source, (*defines, *tools))
    tree = cache / f"{name}-{key}-tree"
    built = tree / ".built-targets"  # one line per target built to the end

    def done_already() -> bool:
        with contextlib.suppress(OSError):
            return set(targets) <= set(built.read_text().split())
        return False

    if done_already():
        return tree, True
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{name}-{key}-tree.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another build in {tree} ...")
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done_already():  # built by the process this one waited for
            return tree, True
        configured = tree / ".configured"
        log(f"building {', '.join(targets)} for {mpicc_path} in {tree} ...")
        if not configured.exists():
            # A configure that failed or was stopped leaves a tree CMake may refuse.
            shutil.rmtree(tree, ignore_errors=True)
            _run_build_step(
                _configure_command(cmake, mpicc_path, source, tree, defines), mpicc_path, False
            )
            configured.write_text("".join(f"{t}\n" for t in tools))
        try:
            _run_build_step(_build_command(cmake, tree, targets, jobs), mpicc_path, False)
        except PetacommError as err:
            raise PetacommError(
                f"{err}\n(building {', '.join(targets)} in {tree}; removing that directory "
                "makes the next run configure it anew)"
            ) from None
        with open(built, "a") as record:
            record.write("".join(f"{t}\n" for t in targets))
    return tree, False


def build(mpicc: str, *, jobs: int | None = None, verbose: bool = False, log=print) -> Profiler:
    """Builds (or finds already built) the profiler for the MPI of ``mpicc``."""

    def collect(build_dir: Path, work: Path) -> dict:
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
        return {"libmpi": str(libmpi) if libmpi else None}

    target, info, existed = cached_cmake_build(
        mpicc,
        _source_dir(),
        cache_root(writable=True),
        defines=(f"-DPETACOMM_VERSION={__version__}",),
        collect=collect,
        record_name="profiler.json",
        jobs=jobs,
        verbose=verbose,
        log=log,
    )
    lib = target / "lib" / "libpetacomm-prof.so"
    libmpi = Path(info["libmpi"]) if info.get("libmpi") else None
    if existed:
        log(f"profiler for {info['mpicc']} already built: {lib}")
    else:
        log(f"built {lib} (links {libmpi or 'no libmpi?'})")
    return Profiler(lib, libmpi, info["mpicc"], str(target))
