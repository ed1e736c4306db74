"""The SimGrid SMPI build tree of libpetacomm that tests running SMPI programs directly share
(the netbench driver, the sparse-reduce setup driver; `petacomm simulate` builds its own).

One tree per session, configured with the xchg family and only those two programs built:
about 20 s here, where a full xchg tree and a separate core + netbench one took 48 s.
PETACOMM_SMPI_BUILD names a tree that has them instead (one without them fails the tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prerequisites import require_program

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ("petacomm-netbench", "petacomm-xchg-setup-bench")


def smpi_build_tree(directory: Path) -> Path:
    """The tree (bin/ with PROGRAMS, lib/libpetacomm.so, CMakeCache.txt) in ``directory``,
    built with smpicc/smpicxx, or the one PETACOMM_SMPI_BUILD names."""
    given = os.environ.get("PETACOMM_SMPI_BUILD")
    if given:
        missing = [p for p in PROGRAMS if not (Path(given) / "bin" / p).exists()]
        if missing:
            pytest.fail(f"PETACOMM_SMPI_BUILD={given} has no bin/{', bin/'.join(missing)}")
        return Path(given)
    require_program("smpicxx", "SimGrid SMPI: apt-get install libsimgrid-dev")
    cmake = shutil.which("cmake") or str(Path(sys.executable).parent / "cmake")
    env = dict(os.environ, CC="smpicc", CXX="smpicxx")
    for argv in (
        [cmake, "-S", str(ROOT), "-B", str(directory), "-DPETACOMM_SMPI=ON"]
        + ["-DPETACOMM_FAMILIES=xchg", "-DPETACOMM_BUILD_TESTS=OFF"],
        [cmake, "--build", str(directory), "-j2", "--target", *PROGRAMS],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return directory
