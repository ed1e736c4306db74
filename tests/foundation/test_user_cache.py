"""The caches petacomm builds into (native programs, profilers): a directory that cannot be
used is refused before any build, naming the variable that chose it, never a traceback."""

import pytest

from cli_harness import expect_clean_error
from petacomm.errors import PetacommError
from petacomm.user_cache import writable_cache_directory

VARIABLE = "PETACOMM_BUILD_CACHE"


def test_missing_directories_are_created(tmp_path, monkeypatch):
    monkeypatch.setenv(VARIABLE, str(tmp_path / "a" / "b"))
    assert writable_cache_directory("native", VARIABLE) == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir() and not list((tmp_path / "a" / "b").iterdir())


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("file", "'{path}' is not a directory"),
        ("file/below", "cannot create '{path}' (Not a directory)"),
        ("/proc", "'/proc' does not allow creating files"),
        ("/proc/petacomm-cache", "'/proc' does not allow creating directories"),
    ],
)
def test_unusable_directory_is_named_with_its_variable(tmp_path, monkeypatch, where, reason):
    (tmp_path / "file").write_text("kept")
    path = where if where.startswith("/") else str(tmp_path / where)
    monkeypatch.setenv(VARIABLE, path)
    with pytest.raises(PetacommError) as err:
        writable_cache_directory("native", VARIABLE)
    prefix = f"{VARIABLE}={path}: cannot keep petacomm's native cache there: "
    assert str(err.value).startswith(prefix + reason.format(path=path)), str(err.value)
    assert (tmp_path / "file").read_text() == "kept"


def test_default_cache_names_the_variable_to_set(tmp_path, monkeypatch):
    (tmp_path / "cache-file").write_text("")
    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-file"))
    with pytest.raises(PetacommError) as err:
        writable_cache_directory("native", VARIABLE)
    assert str(err.value).startswith(f"the user cache (set {VARIABLE} to use another directory)")
    assert "cache-file/petacomm/native" in str(err.value)


def test_commands_refuse_an_unusable_build_cache(tmp_path):
    from petacomm.native import build_info

    (tmp_path / "file").write_text("kept")
    env = {"PETACOMM_BUILD_CACHE": str(tmp_path / "file")}
    expect_clean_error(
        "simulate",
        "halo",
        "--ranks",
        "4",
        "--network",
        "torus:2x2",
        names=("PETACOMM_BUILD_CACHE", "is not a directory"),
        env=env,
    )
    env = {"PETACOMM_PROF_CACHE": str(tmp_path / "file")}
    expect_clean_error(
        "profiler",
        "build",
        "--mpicc",
        build_info()["mpicc"],
        names=("PETACOMM_PROF_CACHE", "is not a directory"),
        env=env,
    )
    assert (tmp_path / "file").read_text() == "kept"
