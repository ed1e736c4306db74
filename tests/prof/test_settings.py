"""One table of profiler settings (python/petacomm/profile/prof-settings.json): the runtime's
parser is generated from it, `petacomm profile` takes its flags from it, docs/profiler.md
shows it, and sizes mean the same in Python and in the runtime ("4MB" is 4,000,000 bytes)."""

from __future__ import annotations

import ctypes
import json
import re
import subprocess

import pytest

from conftest import ROOT, mpiexec, native_build_tree, petacomm
from mpi_harness import mpi_test_env
from petacomm.errors import PetacommError
from petacomm.profile import settings
from petacomm.units import parse_byte_count

# Sizes as people write them, valid and not; both parsers must agree on each.
SIZE_TEXTS = [
    "0", "1", "4096", " 4096 ", "4K", "4k", "4KiB", "4kib", "4KB", "4kB", "4M", "4MiB", "4MB",
    "1.5M", "1.5MB", "2G", "2GiB", "2GB", "1T", "1TB", "512B", "1e3", "1E3", "1e3K", "2.5e2KB",
    ".5K", "5.", "5.K", "0.1K", "1.5", "abc", "-1", "+1", "", "K", "4 K", "4KK", "4Q", "4KiBs",
    "1e400", "1e", "1e+", "1e+3", "nan", "inf", "0x10", "1_000", "4M\n", "\t8\t", "12345678901",
]  # fmt: skip


def runtime_parser():
    from petacomm.native import library_path

    lib = ctypes.CDLL(str(library_path("petacomm-prof")), mode=ctypes.RTLD_LOCAL)
    fn = lib.petacomm_prof_parse_size
    fn.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_double), ctypes.c_char_p]
    fn.argtypes += [ctypes.c_size_t]
    fn.restype = ctypes.c_int

    def parse(text: str) -> tuple[float | None, str]:
        value, error = ctypes.c_double(), ctypes.create_string_buffer(512)
        ok = fn(text.encode(), ctypes.byref(value), error, 512) == 0
        return (value.value if ok else None), error.value.decode()

    return parse


def python_parser(text: str) -> tuple[float | None, str]:
    """petacomm.units' reading of a byte count (what every command uses)."""
    try:
        return float(parse_byte_count(text, "X")), ""
    except PetacommError as err:
        return None, str(err).removeprefix("X: ")


def test_one_size_grammar_in_python_and_the_runtime():
    parse = runtime_parser()
    for text in SIZE_TEXTS:
        py_value, py_error = python_parser(text)
        c_value, c_error = parse(text)
        assert (py_value, py_error) == (c_value, c_error), text
    assert parse("4MB")[0] == 4_000_000 and parse("4MiB")[0] == parse("4M")[0] == 4 * 2**20
    # The profile command's check of a size setting is the same reading.
    assert settings.by_env("PETACOMM_PROF_TABLE_SIZE").check("1.5MB") == 1_500_000


@pytest.mark.mpi
def test_4mb_means_the_same_table_in_the_runtime(programs, tmp_path):
    """--table-size 4MB is 4,000,000 bytes: 32,768 entries of 64 bytes (65,536 would take
    4,194,304 bytes, the default 4MiB). The banner names the command as shell words."""
    log, program = tmp_path / "4MB.json", programs / "prof_keys"
    done = petacomm(
        "profile", "-o", str(log), "--table-size", "4MB", "--", *mpiexec(1), str(program), "1"
    )
    profile = json.loads(log.read_text())["profiler"]
    assert profile["table_entries"] == 32768 and profile["table_bytes"] == 32768 * 64
    banner = [line for line in done.stderr.splitlines() if line.startswith("petacomm-prof:")]
    assert banner == [f"petacomm-prof: {program} 1"], done.stderr


@pytest.mark.mpi
def test_runtime_refuses_a_bad_value_naming_it(programs, tmp_path, profiler_lib):
    """Started without `petacomm profile` (which checks first), a bad value makes every rank
    run unprofiled, and one rank says why; the program is not disturbed."""
    for name, value, why in (
        ("PETACOMM_PROF_TABLE_SIZE", "abc", "not a byte size: 'abc'"),
        ("PETACOMM_PROF_WRAP", "p2p,bogus_kind", "'bogus_kind' names no call, kind"),
    ):
        log = tmp_path / "bad.json"
        env = {"LD_PRELOAD": str(profiler_lib), "PETACOMM_PROF_OUTPUT": str(log), name: value}
        done = subprocess.run(
            [*mpiexec(2), str(programs / "prof_keys"), "3"],
            env=mpi_test_env(env), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        errors = [line for line in done.stderr.splitlines() if "petacomm-prof" in line]
        assert len(errors) == 1, done.stderr  # one rank speaks for all
        assert errors[0].startswith(f"petacomm-prof: error: {name}='{value}': {why}")
        assert errors[0].endswith("; profiling is off for this run")
        assert not log.exists()


def test_generated_runtime_table_matches_the_settings():
    tree = native_build_tree()
    if tree is None:
        pytest.fail("no build tree: run scripts/setup.sh")
    source = next(tree.rglob("generated/prof_settings.cpp")).read_text()
    header = next(tree.rglob("generated/prof_settings.hpp")).read_text()
    runtime = [s for s in settings.settings() if s.runtime]
    row = r'\{"(PETACOMM_PROF_\w+)", \w+, offsetof\(Settings, (\w+)\), \d+, "([^"]*)"'
    rows = re.findall(row, source)
    assert rows == [(s.env, s.field, s.default) for s in runtime]
    for s in runtime:
        assert f"// {s.env}" in header
    assert not any(s.env == "PETACOMM_PROF_CACHE" for s in runtime)  # Python side only


def test_profile_flags_and_docs_come_from_the_table():
    help_text = petacomm("profile", "--help").stdout
    for s in settings.settings():
        for flag in s.flags:
            assert flag in help_text, flag
    assert "--no-banner" in help_text and "--table-size" in help_text
    docs = (ROOT / "docs" / "profiler.md").read_text()
    assert settings.markdown_table() in docs, "docs/profiler.md: regenerate the table with " + (
        "python -m petacomm.profile.settings"
    )
