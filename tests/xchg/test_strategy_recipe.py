"""Follows docs/sparse-reduce.md "Adding a strategy" (and docs/architecture.md's recipe) on a
copy of the native sources: one new strategy_*.cpp file and one registry line, nothing else.
The xchg family is then built alone, and the new strategy must be listed by the C API, run
by the native test matrix against its reference at 1 and 3 ranks, and priced by the
planner. The new file is a renamed copy of the owner strategy: what is under test is the
recipe (that one file and one line suffice), not a new algorithm.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env, mpiexec_argv

ROOT = Path(__file__).resolve().parents[2]
NEW = "recipe-owner"


def _follow_the_recipe(tree: Path) -> None:
    xchg = tree / "native/src/xchg"
    owner = (xchg / "strategy_owner.cpp").read_text()
    entry = 'extern const XchgStrategy kOwnerStrategy{\n    {"owner",'
    assert entry in owner, "strategy_owner.cpp no longer has the entry this recipe copies"
    copied = owner.replace(entry, f'extern const XchgStrategy kRecipeStrategy{{\n    {{"{NEW}",')
    (xchg / "strategy_recipe.cpp").write_text(copied)  # step 1: the strategy's file
    registry = (xchg / "registry.cpp").read_text()
    entries = list(re.finditer(r"(  X\(k\w+Strategy\)[^\n]*)\n", registry))
    assert entries, "registry.cpp no longer lists its strategies as X(k...Strategy) lines"
    last = entries[-1]
    assert not last.group(1).rstrip().endswith("\\"), "the last registry line continues"
    added = last.group(1).rstrip().rstrip("\\").rstrip() + " \\\n  X(kRecipeStrategy)\n"
    (xchg / "registry.cpp").write_text(registry.replace(last.group(0), added))  # step 2


@pytest.fixture(scope="module")
def recipe_build(tmp_path_factory):
    from petacomm.native import build_info

    tree = tmp_path_factory.mktemp("recipe")
    shutil.copy(ROOT / "CMakeLists.txt", tree)
    for part in ("cmake", "native"):
        shutil.copytree(ROOT / part, tree / part)
    _follow_the_recipe(tree)
    build = tree / "build"
    cmake = shutil.which("cmake") or str(Path(sys.executable).parent / "cmake")
    configure = [cmake, "-S", str(tree), "-B", str(build), "-DPETACOMM_FAMILIES=xchg"]
    # Unoptimised (Debug without -g): about 30 % less compile time than Release, and the
    # recipe is what is tested here, not speed
    configure += [f"-DPETACOMM_MPICC={build_info()['mpicc']}", "-DCMAKE_BUILD_TYPE=Debug"]
    configure += ["-DCMAKE_C_FLAGS_DEBUG=", "-DCMAKE_CXX_FLAGS_DEBUG="]
    if shutil.which("ninja") or (Path(sys.executable).parent / "ninja").exists():
        configure += ["-G", "Ninja"]
    for command in (
        configure,
        [cmake, "--build", str(build), "-j2", "--target", "test_xchg_matrix"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return build


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 3])
def test_new_strategy_runs_in_the_native_matrix(recipe_build, ranks):
    matrix = next(recipe_build.rglob("test_xchg_matrix"))
    done = subprocess.run(
        [*mpiexec_argv(ranks), str(matrix)], capture_output=True, text=True, env=mpi_test_env()
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("test_xchg_matrix:"))
    assert "passed" in line and "0 failures" in line, line
    assert NEW in line.split("strategies ")[1].split(","), line


def test_new_strategy_is_listed_and_priced(recipe_build):
    program = (
        "import json, numpy as np\n"
        "from petacomm.xchg import offline, strategy_names\n"
        "stats = offline.statistics([np.arange(10), np.arange(5, 15), np.arange(30, 40)])\n"
        "predicted, decision = offline.decide(stats)\n"
        "print(json.dumps({'names': list(strategy_names()), 'predicted': predicted,\n"
        "                  'candidates': [c['name'] for c in decision['candidates']]}))\n"
    )
    env = dict(os.environ, PETACOMM_NATIVE_DIR=str(recipe_build))
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["names"][-1] == NEW  # registry order: the line was appended last
    assert NEW in seen["candidates"]
    # A renamed copy of owner: the planner prices it with the same terms as owner.
    assert seen["predicted"][NEW] == seen["predicted"]["owner"]
