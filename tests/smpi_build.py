"""The SimGrid SMPI build of libpetacomm that tests running SMPI programs directly share
(the netbench driver, the sparse-reduce setup driver).

It is the tree `petacomm simulate` builds its xchg presets in (sim.smpi.build_programs: one
tree per family set in the native build cache, each program built at its first use), with
these two programs built there too: the sparse-reduce preset's program is one of them, so
the suite compiles libpetacomm's xchg family for SMPI once. A full xchg tree and a separate
core + netbench one used to take 48 s here; the preset's tree takes about 20 s.
PETACOMM_SMPI_BUILD names a tree that has them instead (one without them fails the tests).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prerequisites import require_program

PROGRAMS = ("petacomm-netbench", "petacomm-xchg-setup-bench")


def smpi_build_tree() -> Path:
    """The tree (bin/ with PROGRAMS, lib/libpetacomm.so, CMakeCache.txt) built with
    smpicc/smpicxx, or the one PETACOMM_SMPI_BUILD names."""
    given = os.environ.get("PETACOMM_SMPI_BUILD")
    if given:
        missing = [p for p in PROGRAMS if not (Path(given) / "bin" / p).exists()]
        if missing:
            pytest.fail(f"PETACOMM_SMPI_BUILD={given} has no bin/{', bin/'.join(missing)}")
        return Path(given)
    require_program("smpicxx", "SimGrid SMPI: apt-get install libsimgrid-dev")
    from petacomm.sim.smpi import build_programs, find_tools

    return build_programs(find_tools(), ("xchg",), PROGRAMS, lambda _message: None)
