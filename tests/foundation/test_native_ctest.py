"""Drives the native tests (ctest, under mpiexec) from pytest, so one command runs all.

It cannot pass empty: ctest runs with --no-tests=error; the tests it lists are checked
against what the build tree was configured with (every built family that has native tests,
and the core, contributes tests labelled with its name, each at rank 1 and at an odd count
above 1 of PETACOMM_TEST_RANKS); and the run must report every listed test passed.

The build tree: PETACOMM_NATIVE_DIR (a development build, as for the Python tests), else
PETACOMM_BUILD_DIR, else the tree under build/ that the installed petacomm was built in
(tests/native_build.py).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_harness import mpi_test_env
from native_build import build_tree, tree_info


def cache_value(tree: Path, name: str) -> str:
    match = re.search(rf"^{name}:\w+=(.*)$", (tree / "CMakeCache.txt").read_text(), re.M)
    assert match, f"{name} not in {tree / 'CMakeCache.txt'}"
    return match.group(1)


def ctest() -> str:
    return shutil.which("ctest") or str(Path(sys.executable).parent / "ctest")


def listed_tests(tree: Path) -> dict[str, list[str]]:
    """Name -> labels (its family, and fixed-ranks if so) of every test ctest would run."""
    done = subprocess.run(
        [ctest(), "--test-dir", str(tree), "--show-only=json-v1"],
        capture_output=True,
        text=True,
        check=True,
    )
    tests = {}
    for test in json.loads(done.stdout)["tests"]:
        labels = [p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"]
        tests[test["name"]] = list(labels[0]) if labels else []
    return tests


@pytest.mark.mpi
def test_native_tests_pass_under_ctest():
    tree = build_tree()
    source = Path(cache_value(tree, "petacomm_SOURCE_DIR"))
    ranks = {int(n) for n in cache_value(tree, "PETACOMM_TEST_RANKS").split(";")}
    families = tree_info(tree)["families"]
    with_tests = {f for f in families if (source / "native" / "tests" / f).is_dir()} | {"core"}

    tests = listed_tests(tree)
    family = {name: [x for x in labels if x != "fixed-ranks"] for name, labels in tests.items()}
    assert all(len(f) == 1 for f in family.values()), tests
    assert {f[0] for f in family.values()} == with_tests, tests
    by_base: dict[str, set[int]] = {}
    fixed = {name.rpartition(".np")[0] for name, labels in tests.items() if "fixed-ranks" in labels}
    for name in tests:
        base, _, count = name.rpartition(".np")
        by_base.setdefault(base, set()).add(int(count))
    for base, counts in by_base.items():
        assert counts <= ranks, (base, counts)
        if base not in fixed:  # a case written for exactly its own rank counts is exempt
            assert 1 in counts and any(n % 2 and n > 1 for n in counts), (base, counts)

    # Four tests at once on two cores: oversubscribed ranks yield while they wait, and each
    # launcher's start-up is mostly waiting, so the run takes 50-54 s here against 75-77 s
    # with two at once (the same 93 tests passing).
    done = subprocess.run(
        [ctest(), "--test-dir", str(tree), "--output-on-failure", "--no-tests=error", "-j4"]
        + ["--timeout", "600"],
        capture_output=True,
        text=True,
        env=mpi_test_env(),
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    # CTest 3 writes "100% tests passed, 0 tests failed out of 93"; CTest 4 (PyPI's cmake)
    # leaves out ", 0 tests failed"
    summary = re.search(r"(\d+)% tests passed(?:, (\d+) tests failed)? out of (\d+)", done.stdout)
    assert summary, done.stdout[-3000:]
    failed = summary[2] or "0"
    assert (summary[1], failed, int(summary[3])) == ("100", "0", len(tests)), summary[0]
    passed = re.findall(r"Test\s+#\d+: (\S+) \.+\s+Passed", done.stdout)
    assert sorted(passed) == sorted(tests)
