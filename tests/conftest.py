import sys
from pathlib import Path

# The harness module sits beside the tests; the package comes from the installed wheel
# (or from python/ when PETACOMM_NATIVE_DIR points at a development build).
sys.path.insert(0, str(Path(__file__).parent))
