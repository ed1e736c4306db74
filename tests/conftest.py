import atexit
import contextlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Tests are imported with --import-mode=importlib (families may reuse basenames such as
# test_cli.py); helper modules beside them (mpi_harness, reference implementations) are
# found through these path entries. The package itself comes from the installed wheel
# (or from python/ when PETACOMM_NATIVE_DIR points at a development build).
_TESTS = Path(__file__).parent
for directory in [_TESTS, *sorted(p for p in _TESTS.iterdir() if p.is_dir())]:
    if directory.name != "__pycache__" and str(directory) not in sys.path:
        sys.path.insert(0, str(directory))

# Open MPI 5's launcher keeps its session directory in $TMPDIR/ompi.<launcher pid> and cannot
# start ("The PMIx server's listener thread failed to start") when a directory of that name
# is left over from a launcher killed earlier whose pid is now reused. The programs the tests
# start get a fresh TMPDIR of their own, so no earlier leftover can collide; this process
# keeps the system one (tempfile caches it here) for pytest's own directories.
_SYSTEM_TMP = tempfile.gettempdir()
os.environ["TMPDIR"] = tempfile.mkdtemp(prefix="pcmpi-", dir=_SYSTEM_TMP)
atexit.register(shutil.rmtree, os.environ["TMPDIR"], ignore_errors=True)

# Tests must not depend on (or overwrite) the machine model netbench wrote for this user:
# point the default model path at a file that does not exist, so planners use the defaults.
os.environ["PETACOMM_MODEL"] = str(Path(tempfile.gettempdir()) / "petacomm-tests-no-model.json")
# Model contents found valid are remembered in this session's own directory (not the user's).
os.environ["PETACOMM_MODEL_CACHE"] = str(Path(os.environ["TMPDIR"]) / "validated-models")


# Every test that starts MPI ranks is marked @pytest.mark.mpi, and that stays true. In a test
# without the marker, starting an MPI launcher fails the test: from the test process (an
# audit hook sees every subprocess), and from the petacomm command in a child process
# (PETACOMM_MPIEXEC, and PATH for launchers found there, lead to stand-ins that refuse).
# Asking a launcher for its version starts no ranks and is allowed.
_LAUNCHER = re.compile(r"^(mpiexec|mpirun|orterun|prterun|smpirun)([.-].*)?$")
_STAND_INS = ("mpiexec", "mpirun", "smpirun")
_VERSION_FLAGS = {"--version", "-version", "-V"}
_UNMARKED = "petacomm tests: {test} starts MPI ranks ({command}) but is not marked @pytest.mark.mpi"
_unmarked_test: str | None = None


def _refuse_launch_in_unmarked_test(event: str, args: tuple) -> None:
    if event != "subprocess.Popen" or _unmarked_test is None:
        return
    executable, argv = args[0], args[1]
    words = [argv] if isinstance(argv, str | bytes | os.PathLike) else list(argv)
    words = [os.fsdecode(word) for word in ([executable] if executable else []) + words]
    for at, word in enumerate(words):
        if _LAUNCHER.match(os.path.basename(word)) and not _VERSION_FLAGS & set(words[at:]):
            command = " ".join(words)
            pytest.fail(_UNMARKED.format(test=_unmarked_test, command=command), pytrace=False)


sys.addaudithook(_refuse_launch_in_unmarked_test)


@pytest.fixture(scope="session")
def _refusing_launchers(tmp_path_factory) -> Path:
    """A directory of stand-ins for the launchers: each answers a version query like the
    real one (for the launcher detection) and starts nothing."""
    from petacomm.errors import PetacommError
    from petacomm.launch import find_mpiexec

    directory = tmp_path_factory.mktemp("unmarked")
    for name in _STAND_INS:
        real = shutil.which(name)
        if name == "mpiexec":
            with contextlib.suppress(PetacommError):
                real = str(find_mpiexec().path)
        if not real:
            continue  # nothing to stand in for (and `which` must keep saying so)
        message = _UNMARKED.format(test="this test", command=f"{name} $*")
        stand_in = directory / name
        stand_in.write_text(
            "#!/bin/sh\n"
            f'case "$1" in --version|-version|-V) exec "{real}" "$@" ;; esac\n'
            f'echo "{message}" >&2\n'
            "exit 97\n"
        )
        stand_in.chmod(0o755)
    return directory


@pytest.fixture(scope="session")
def smpi_build() -> Path:
    """A SimGrid SMPI build of libpetacomm with petacomm-netbench and
    petacomm-xchg-setup-bench, shared by the tests that run them (tests/smpi_build.py)."""
    from smpi_build import smpi_build_tree

    return smpi_build_tree()


@pytest.fixture(autouse=True)
def _mpi_marker_enforced(request, monkeypatch, _refusing_launchers):
    global _unmarked_test
    if request.node.get_closest_marker("mpi"):
        yield
        return
    monkeypatch.setenv("PETACOMM_MPIEXEC", str(_refusing_launchers / "mpiexec"))
    monkeypatch.setenv("PATH", f"{_refusing_launchers}{os.pathsep}{os.environ.get('PATH', '')}")
    _unmarked_test = request.node.nodeid
    try:
        yield
    finally:
        _unmarked_test = None
