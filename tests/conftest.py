import os
import sys
import tempfile
from pathlib import Path

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
