import os
import re
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

# Tests must not depend on (or overwrite) the machine model netbench wrote for this user:
# point the default model path at a file that does not exist, so planners use the defaults.
os.environ["PETACOMM_MODEL"] = str(Path(tempfile.gettempdir()) / "petacomm-tests-no-model.json")


# Every test that starts MPI ranks is marked @pytest.mark.mpi, and that stays true: in a test
# without the marker, starting an MPI launcher from the test process fails the test (an
# audit hook sees every subprocess), and so does a launch by the petacomm command in a
# child process (PETACOMM_MPIEXEC points at a stand-in that refuses to start ranks).
_LAUNCHER = re.compile(r"^(mpiexec|mpirun|orterun|prterun|smpirun)([.-].*)?$")
_UNMARKED = "petacomm tests: {test} starts MPI ranks ({command}) but is not marked @pytest.mark.mpi"
_unmarked_test: str | None = None


def _refuse_launch_in_unmarked_test(event: str, args: tuple) -> None:
    if event != "subprocess.Popen" or _unmarked_test is None:
        return
    executable, argv = args[0], args[1]
    words = [argv] if isinstance(argv, str | bytes | os.PathLike) else list(argv)
    for word in [executable, *words]:
        name = os.path.basename(os.fsdecode(word)) if word is not None else ""
        if _LAUNCHER.match(name):
            command = " ".join(os.fsdecode(w) for w in words)
            pytest.fail(_UNMARKED.format(test=_unmarked_test, command=command), pytrace=False)


sys.addaudithook(_refuse_launch_in_unmarked_test)


@pytest.fixture(scope="session")
def _refusing_mpiexec(tmp_path_factory) -> Path:
    """A stand-in mpiexec that answers --version like the real one and starts nothing."""
    from petacomm.errors import PetacommError
    from petacomm.launch import find_mpiexec

    try:
        real = str(find_mpiexec().path)
    except PetacommError:
        real = ""
    stand_in = tmp_path_factory.mktemp("unmarked") / "mpiexec"
    message = _UNMARKED.format(test="this test", command="mpiexec $*")
    stand_in.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ] && [ -n "{real}" ]; then exec "{real}" --version; fi\n'
        f'echo "{message}" >&2\n'
        "exit 97\n"
    )
    stand_in.chmod(0o755)
    return stand_in


@pytest.fixture(autouse=True)
def _mpi_marker_enforced(request, monkeypatch, _refusing_mpiexec):
    global _unmarked_test
    if request.node.get_closest_marker("mpi"):
        yield
        return
    monkeypatch.setenv("PETACOMM_MPIEXEC", str(_refusing_mpiexec))
    _unmarked_test = request.node.nodeid
    try:
        yield
    finally:
        _unmarked_test = None
