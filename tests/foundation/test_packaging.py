"""Other projects build against an installed petacomm, as docs/packaging.md shows.

Two installations: the wheel this suite tests (PyPI Open MPI, which has no Fortran wrapper,
so no Fortran module), and a build against Debian's Open MPI with the Fortran module,
installed into a temporary prefix (xchg and transpose, no native tests). Against each, the
consumer in tests/foundation/consumer is built with CMake (find_package) and with pkg-config,
by the commands of docs/packaging.md, run at 1 and 3 ranks (the Fortran transposes also at
4 and 7), and its figures are checked against the reference below. The Fortran module's bind(C)
types and constants are compared with the C headers' by the C and Fortran compilers
themselves.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env, mpirun
from prerequisites import require, require_program

ROOT = Path(__file__).resolve().parents[2]
CONSUMER = Path(__file__).parent / "consumer"
DOCS = (ROOT / "docs" / "packaging.md").read_text()
DEBIAN_MPICC = Path("/usr/bin/mpicc.openmpi")
DEBIAN_MPIFORT = Path("/usr/bin/mpifort.openmpi")
RANKS = (1, 3)


def cmake() -> str:
    return shutil.which("cmake") or str(Path(sys.executable).parent / "cmake")


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, f"{argv}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def docs_block(name: str) -> str:
    """The shell block of docs/packaging.md after the marker <!-- consumer: NAME -->."""
    match = re.search(rf"<!-- consumer: {re.escape(name)} -->\n```sh\n(.*?)```", DOCS, re.S)
    assert match, f"docs/packaging.md has no block marked 'consumer: {name}'"
    return match.group(1)


def run_docs_block(name: str, prefix: Path, workdir: Path) -> None:
    """Runs a documented block in a copy of the consumer, with PREFIX = the installation."""
    if not workdir.exists():
        shutil.copytree(CONSUMER, workdir)
    cmake_dir = str(Path(cmake()).parent)
    env = mpi_test_env({"PREFIX": str(prefix), "PATH": f"{cmake_dir}:{mpi_test_env()['PATH']}"})
    run(["bash", "-euo", "pipefail", "-c", docs_block(name)], cwd=workdir, env=env)


# ---- the reference: what every consumer program must print -------------------------------


def keys_of(rank: int, ranks: int) -> list[int]:
    return [7, 1000 + rank, 1000 + (rank + 1) % ranks, 7, 20 + 3 * rank]


def value_of(rank: int, position: int, component: int) -> int:
    return (rank + 1) * 10 * (-1) ** position + position + 100 * component


def reduced(key: int, component: int, ranks: int) -> int:
    """Sum over every rank and position holding ``key`` (a plain loop, no petacomm)."""
    return sum(
        value_of(q, j, component)
        for q in range(ranks)
        for j, k in enumerate(keys_of(q, ranks))
        if k == key
    )


def checksum(rank: int, ranks: int, components: int) -> int:
    """Sum of one rank's reduced values over its positions and ``components`` components."""
    return sum(reduced(k, c, ranks) for k in keys_of(rank, ranks) for c in range(components))


def expected_figures(program: str, rank: int, ranks: int) -> dict[str, int]:
    one, two = checksum(rank, ranks, 1), checksum(rank, ranks, 2)
    figures = {"key7": reduced(7, 0, ranks), "errors": 0}
    if program == "reduce_c":  # float64, 2 components
        figures["checksum"] = two
    elif program == "reduce_cxx":  # int64, 1 component
        figures["checksum"] = one
    else:  # Fortran: real64 and int64 as (2, n), the others (n); complex: real - imaginary
        figures |= {"real64": two, "real32": one, "int32": one, "int64": two}
        figures |= {"complex64": 2 * one, "complex128": 2 * one}
    return figures


STRATEGY = {"reduce_cxx": "directory", "reduce_f": "owner"}  # reduce_c: the planner's choice
LINE = re.compile(r"^(\w+) rank (\d+) of (\d+): strategy (\S+) (.*)$")


def check_consumer(program: Path, ranks: int, mpiexec: str) -> None:
    result = mpirun(ranks, [str(program)], mpiexec=mpiexec, timeout=120)
    seen = set()
    for lines in result.by_rank.values():
        for line in lines:
            match = LINE.match(line)
            if not match:
                continue
            name, rank, size, strategy, rest = match.groups()
            words = rest.split()
            figures = {k: int(v) for k, v in zip(words[::2], words[1::2], strict=True)}
            assert (name, int(size)) == (program.name, ranks), line
            assert figures == expected_figures(name, int(rank), ranks), line
            assert strategy == STRATEGY.get(name, strategy), line
            seen.add(int(rank))
    assert seen == set(range(ranks)), result.stdout + result.stderr


def count_of(n: int, r: int, p: int) -> int:
    """Rows of n on rank r of p (docs/transpose.md: the first n mod p ranks hold one more)."""
    return n // p + (1 if r < n % p else 0)


def grid_of(p: int) -> tuple[int, int]:
    """transpose.f90's process grid: the largest divisor d of p with d * d <= p, by p / d."""
    d = max(d for d in range(1, p + 1) if d * d <= p and p % d == 0)
    return d, p // d


def transpose_checked(rank: int, ranks: int) -> int:
    """How many elements transpose.f90 checks on ``rank``: each part's local array sizes,
    from the block layouts of docs/transpose.md."""
    n0, n1 = 7, 5  # the slabs: complex128 forward and back, real32 x 2, real64, complex64
    rows, cols = count_of(n0, rank, ranks), count_of(n1, rank, ranks)
    slabs = cols * n0 + rows * n1 + 2 * cols * n0 + cols * n0 + rows * n1
    g0, g1 = grid_of(ranks)
    i0, i1 = divmod(rank, g1)
    m0, m1, m2 = 5, 6, 4  # the pencils: Y and X once, Z after the round trip
    y = count_of(m0, i0, g0) * count_of(m2, i1, g1) * m1
    x = count_of(m2, i1, g1) * count_of(m1, i0, g0) * m0
    z = count_of(m0, i0, g0) * count_of(m1, i1, g1) * m2
    field = count_of(2, i0, g0) * count_of(8, i1, g1) * 8  # the filter, three variants
    return slabs + y + x + z + 3 * field


TRANSPOSE_LINE = re.compile(
    r"^transpose_f rank (\d+) of (\d+): strategy (\S+) checked (\d+) errors (\d+) "
    r"registry (\S+)$"
)


def check_transpose_consumer(program: Path, ranks: int, mpiexec: str) -> None:
    from petacomm.transpose import strategies

    registry = ",".join(s.name for s in strategies())
    result = mpirun(ranks, [str(program)], mpiexec=mpiexec, timeout=120)
    seen = set()
    for lines in result.by_rank.values():
        for line in lines:
            match = TRANSPOSE_LINE.match(line)
            if not match:
                continue
            rank, size, strategy, checked, errors, names = match.groups()
            assert int(size) == ranks and strategy == "pairwise", line
            assert int(checked) == transpose_checked(int(rank), ranks), line
            assert int(errors) == 0 and names == registry, line
            seen.add(int(rank))
    assert seen == set(range(ranks)), result.stdout + result.stderr


# ---- the installations -------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel_prefix() -> Path:
    """The installed petacomm this suite tests (its native directory is an install prefix)."""
    from petacomm.native import native_dir

    prefix = native_dir()
    assert (prefix / "lib/cmake/petacomm/petacommConfig.cmake").exists(), prefix
    assert (prefix / "lib/pkgconfig/petacomm.pc").exists(), prefix
    return prefix


@pytest.fixture(scope="module")
def debian_prefix(tmp_path_factory) -> Path:
    """petacomm (xchg, transpose and the Fortran module) built against Debian's Open MPI,
    installed.
    Unoptimised (Debug without -g): a third of the compile time, and without the mini-apps
    (a third of the sources): the packaging is what is tested here."""
    require(DEBIAN_MPICC.exists(), "Debian's Open MPI: apt-get install libopenmpi-dev")
    require(DEBIAN_MPIFORT.exists(), "Debian's Open MPI Fortran wrapper: apt-get install gfortran")
    require_program("gfortran", "apt-get install gfortran")
    build, prefix = tmp_path_factory.mktemp("debian-build"), tmp_path_factory.mktemp("debian")
    run(
        [
            cmake(),
            "-S",
            str(ROOT),
            "-B",
            str(build),
            f"-DPETACOMM_MPICC={DEBIAN_MPICC}",
            "-DPETACOMM_FAMILIES=xchg,transpose",
            "-DPETACOMM_BUILD_TESTS=OFF",
            "-DPETACOMM_BUILD_APPS=OFF",
            "-DPETACOMM_FORTRAN=ON",
            "-DCMAKE_BUILD_TYPE=Debug",
            "-DCMAKE_C_FLAGS_DEBUG=",
            "-DCMAKE_CXX_FLAGS_DEBUG=",
            "-DCMAKE_Fortran_FLAGS_DEBUG=",
        ]
    )
    run([cmake(), "--build", str(build), "-j2"])
    run([cmake(), "--install", str(build), "--prefix", str(prefix)])
    return prefix


def build_info(prefix: Path) -> dict:
    return json.loads((prefix / "share" / "build-info.json").read_text())


@pytest.fixture(scope="module")
def wheel_consumers(wheel_prefix, tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel-consumer") / "src"
    run_docs_block("cmake", wheel_prefix, work)
    run_docs_block("pkg-config c", wheel_prefix, work)
    return work


@pytest.fixture(scope="module")
def debian_consumers(debian_prefix, tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("debian-consumer") / "src"
    run_docs_block("cmake", debian_prefix, work)
    run_docs_block("pkg-config fortran", debian_prefix, work)
    return work


# ---- the tests -----------------------------------------------------------------------------


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", RANKS)
def test_consumers_of_the_wheel(wheel_consumers, wheel_prefix, ranks):
    mpiexec = build_info(wheel_prefix)["mpiexec"]
    for program in ("build/reduce_c", "build/reduce_cxx", "reduce_c"):  # CMake, pkg-config
        check_consumer(wheel_consumers / program, ranks, mpiexec)
    # No Fortran wrapper in the PyPI Open MPI: the wheel has no module, CMake built no reduce_f.
    assert build_info(wheel_prefix)["mpifort"] == ""
    assert not (wheel_consumers / "build" / "reduce_f").exists()
    assert not (wheel_consumers / "build" / "transpose_f").exists()


def test_profiler_package_files(wheel_prefix):
    """petacomm-prof.pc and petacomm::prof name the profiler library that is installed."""
    env = dict(mpi_test_env(), PKG_CONFIG_PATH=str(wheel_prefix / "lib" / "pkgconfig"))
    flags = run(["pkg-config", "--libs", "petacomm-prof"], env=env).stdout.split()
    libdir = Path(next(f[2:] for f in flags if f.startswith("-L")))
    assert "-lpetacomm-prof" in flags and (libdir / "libpetacomm-prof.so").exists()
    targets = (wheel_prefix / "lib/cmake/petacomm/petacommTargets-release.cmake").read_text()
    pattern = r"petacomm::prof PROPERTIES\s+IMPORTED_LOCATION_RELEASE \"(.*?)\""
    location = re.search(pattern, targets)
    assert location and location[1] == "${_IMPORT_PREFIX}/lib/libpetacomm-prof.so", location


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", (*RANKS, 4, 7))
def test_consumers_with_the_fortran_module(debian_consumers, debian_prefix, ranks):
    info = build_info(debian_prefix)
    assert info["mpifort"] == str(DEBIAN_MPIFORT) and info["families"] == ["xchg", "transpose"]
    if ranks in RANKS:
        for program in ("build/reduce_c", "build/reduce_cxx", "build/reduce_f", "reduce_f"):
            check_consumer(debian_consumers / program, ranks, info["mpiexec"])
    # The transposes (CMake, pkg-config): every element against its global indices.
    for program in ("build/transpose_f", "transpose_f"):
        check_transpose_consumer(debian_consumers / program, ranks, info["mpiexec"])
    # docs/transpose.md's example: it counts its wrong elements over every rank.
    example = str(debian_consumers / "build" / "transpose_example")
    result = mpirun(ranks, [example], mpiexec=info["mpiexec"], timeout=120)
    done = [line for line in result.rank_lines(0) if line.endswith(" wrong elements")]
    assert len(done) == 1 and re.fullmatch(r"strategy \S+: 0 wrong elements", done[0]), done


@pytest.mark.mpi
def test_debian_open_mpi_build_runs_netbench(debian_prefix, tmp_path):
    info = build_info(debian_prefix)
    assert info["mpicc"] == str(DEBIAN_MPICC)
    assert info["mpiexec"] == "/usr/bin/mpiexec.openmpi"  # beside mpicc.openmpi, by suffix
    raw = tmp_path / "raw.json"
    program = [str(debian_prefix / "bin" / "petacomm-netbench"), "-m", "8:1K", "-i", "3"]
    mpirun(3, [*program, "-r", "2", "--json", str(raw)], mpiexec=info["mpiexec"], timeout=300)
    data = json.loads(raw.read_text())
    assert data["ranks"] == 3 and "Open MPI v4" in data["mpi_library"]


def test_doctor_fails_on_an_mpi_mismatch(debian_prefix):
    """libpetacomm built against Debian's Open MPI 4, mpi4py on the PyPI Open MPI 5."""
    done = subprocess.run(
        [sys.executable, "-m", "petacomm.cli", "doctor"],
        capture_output=True,
        text=True,
        env=mpi_test_env({"PETACOMM_NATIVE_DIR": str(debian_prefix)}),
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    mismatch = [line for line in done.stdout.splitlines() if "MPI MISMATCH" in line]
    assert len(mismatch) == 1 and "[FAIL]" in mismatch[0], done.stdout
    assert "Open MPI v4" in mismatch[0] and "Open MPI v5" in mismatch[0], mismatch


# ---- the Fortran module against the C headers ---------------------------------------------

FORTRAN_SOURCES = sorted((ROOT / "native" / "fortran").glob("*.f90"))
# Passed by value as integer(c_int) by the module: these C types must be that size.
C_INT_SCALARS = (
    "MPI_Fint",
    "petacomm_status",
    "petacomm_xchg_dtype",
    "petacomm_xchg_op",
    "petacomm_transpose_dtype",
    "petacomm_transpose_direction",
    "petacomm_pencil_layout",
    "petacomm_fftfilter_variant",
)


def bind_c_types() -> dict[str, list[str]]:
    """Every `type, bind(C)` of the module's sources: its name and component names."""
    types = {}
    for source in FORTRAN_SOURCES:
        text = source.read_text()
        pattern = r"^\s*type, bind\(C\)(?:, public)? :: (\w+)\n(.*?)^\s*end type"
        for name, body in re.findall(pattern, text, re.M | re.S | re.I):
            fields = []
            for line in body.splitlines():
                if "::" in line and not line.strip().startswith("!"):
                    names = re.sub(r"\(.*?\)", "", line.split("::")[1].split("!")[0])
                    fields += [f.strip() for f in names.split(",")]  # shape(4): shape
            types[name] = fields
    return types


def named_constants() -> list[str]:
    names = []
    for source in FORTRAN_SOURCES:
        names += re.findall(r"parameter, public :: (\w+) =", source.read_text())
    return names


def layout_programs(include: Path) -> tuple[str, str]:
    """A C program (every installed header) and a Fortran program (`use petacomm`) that print
    the same lines when they agree: sizes, offsets, constant values."""
    headers = sorted((include / "petacomm").glob("*.h"))
    c = ["#include <stddef.h>", "#include <stdio.h>", "#include <mpi.h>"]
    c += [f"#include <petacomm/{header.name}>" for header in headers] + ["int main(void) {"]
    f = ["program layout", "  use, intrinsic :: iso_c_binding", "  use petacomm", "  implicit none"]
    body = []
    for i, (name, fields) in enumerate(bind_c_types().items()):
        f.append(f"  type({name}), target :: v{i}")
        c.append(f'  printf("size {name} %zu\\n", sizeof({name}));')
        body.append(f"  print '(a, i0)', 'size {name} ', c_sizeof(v{i})")
        for field in fields:
            c.append(f'  printf("offset {name}.{field} %zu\\n", offsetof({name}, {field}));')
            where = f"c_loc(v{i}%{field}), c_loc(v{i})"
            body.append(f"  print '(a, i0)', 'offset {name}.{field} ', offset({where})")
    for name in named_constants():
        c.append(f'  printf("value {name} %lld\\n", (long long){name});')
        body.append(f"  print '(a, i0)', 'value {name} ', {name}")
    for name in C_INT_SCALARS:
        c.append(f'  printf("size {name} %zu\\n", sizeof({name}));')
        body.append(f"  print '(a, i0)', 'size {name} ', c_sizeof(0_c_int)")
    c += ["  return 0;", "}"]
    f += body + [
        "contains",
        "  integer(c_intptr_t) function offset(field, base)",
        "    type(c_ptr), intent(in) :: field, base",
        "    offset = transfer(field, 0_c_intptr_t) - transfer(base, 0_c_intptr_t)",
        "  end function offset",
        "end program layout",
    ]
    return "\n".join(c) + "\n", "\n".join(f) + "\n"


def test_fortran_types_and_constants_match_the_c_headers(debian_prefix, tmp_path):
    include = debian_prefix / "include"
    c_source, f_source = layout_programs(include)
    # The parser found every module's types (xchg's, the transposes', the registry entry).
    types = bind_c_types()
    assert {"petacomm_xchg_options", "petacomm_transpose_options"} <= set(types), types
    assert {"petacomm_transpose_stats", "petacomm_strategy_info"} <= set(types), types
    assert all(types.values())
    (tmp_path / "layout.c").write_text(c_source)
    (tmp_path / "layout.f90").write_text(f_source)
    run([str(DEBIAN_MPICC), "-I", str(include), "layout.c", "-o", "layout_c"], cwd=tmp_path)
    modules = include / "petacomm" / "fortran"
    run(["gfortran", "-I", str(modules), "layout.f90", "-o", "layout_f"], cwd=tmp_path)
    from_c = run([str(tmp_path / "layout_c")]).stdout.splitlines()
    from_fortran = [line.strip() for line in run([str(tmp_path / "layout_f")]).stdout.splitlines()]
    assert from_fortran == from_c
    assert len(from_c) > 100  # every field of every type, the constants, the scalars


# ---- the families --------------------------------------------------------------------------


def all_families() -> list[str]:
    text = (ROOT / "CMakeLists.txt").read_text()
    body = re.search(r"set\(PETACOMM_ALL_FAMILIES\n(.*?)\n\)", text, re.S).group(1)
    return [line.split("#")[0].strip() for line in body.splitlines() if line.split("#")[0].strip()]


def test_families_list_is_the_family_directories(wheel_prefix):
    """PETACOMM_ALL_FAMILIES names exactly the family directories of native/src, and the
    wheel builds all of them."""
    directories = {p.name for p in (ROOT / "native" / "src").iterdir() if p.is_dir()}
    assert set(all_families()) == directories - {"core", "netbench"}
    assert build_info(wheel_prefix)["families"] == all_families()


def test_unknown_family_is_refused(tmp_path):
    done = subprocess.run(
        [cmake(), "-S", str(ROOT), "-B", str(tmp_path), "-DPETACOMM_FAMILIES=xchg,nosuch"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    message = " ".join(done.stderr.split())
    known = ", ".join(all_families())
    assert f"PETACOMM_FAMILIES: unknown family 'nosuch' (known: {known};" in message, message


def test_docs_show_the_consumer_that_is_built():
    shown = re.search(r"<!-- example: consumer CMakeLists.txt -->\n```cmake\n(.*?)```", DOCS, re.S)
    assert shown and shown.group(1) == (CONSUMER / "CMakeLists.txt").read_text()
