"""The native sources staged for builds against another MPI (petacomm.native_build)."""

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import petacomm.native
from petacomm import native_build

ROOT = Path(__file__).resolve().parents[2]


def test_commands_starting_together_stage_the_sources_once(tmp_path, monkeypatch):
    # A build tree (no shipped sources): source_tree() copies the repository's native parts
    # into the cache. Two `petacomm simulate` runs started at once shared one staging
    # directory and one failed with FileExistsError while the other copied.
    tree = tmp_path / "build"
    tree.mkdir()
    (tree / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={ROOT}\n")
    monkeypatch.setattr(petacomm.native, "native_dir", lambda: tree)
    monkeypatch.setenv("PETACOMM_BUILD_CACHE", str(tmp_path / "cache"))
    start = threading.Barrier(4)

    def stage(_):
        start.wait()
        return native_build.source_tree()

    with ThreadPoolExecutor(4) as pool:
        staged = list(pool.map(stage, range(4)))
    assert len(set(staged)) == 1
    (source,) = set(staged)
    assert (source / "CMakeLists.txt").read_bytes() == (ROOT / "CMakeLists.txt").read_bytes()
    assert (source / "native" / "src").is_dir() and not list(source.rglob("tests"))
    # Nothing half-copied is left beside it, and a second call reuses it.
    assert [p.name for p in source.parent.iterdir()] == [source.name]
    assert native_build.source_tree() == source


TINY_PROJECT = {
    "CMakeLists.txt": (
        "cmake_minimum_required(VERSION 3.16)\nproject(tiny C)\n"
        "add_library(common STATIC common.c)\n"
        "add_executable(one one.c)\ntarget_link_libraries(one common)\n"
        "add_executable(two two.c)\ntarget_link_libraries(two common)\n"
        "add_executable(broken broken.c)\n"
    ),
    "common.c": "int common(void) { return 1; }\n",
    "one.c": "int common(void);\nint main(void) { return common() - 1; }\n",
    "two.c": "int common(void);\nint main(void) { return common() - 1; }\n",
    "broken.c": "int main(void) { return undeclared; }\n",
}


def tiny_project(directory: Path) -> Path:
    directory.mkdir()
    for name, text in TINY_PROJECT.items():
        (directory / name).write_text(text)
    return directory


def test_shared_tree_builds_each_target_once_and_shares_the_rest(tmp_path):
    from petacomm.profile.builder import shared_cmake_tree

    source, cache = tiny_project(tmp_path / "src"), tmp_path / "cache"
    tree, existed = shared_cmake_tree("cc", source, cache, targets=("one",), log=lambda _m: None)
    assert not existed and (tree / "one").exists() and not (tree / "two").exists()
    common = tree / "libcommon.a"
    first = (common.stat().st_mtime_ns, (tree / "one").stat().st_mtime_ns)
    again, existed = shared_cmake_tree("cc", source, cache, targets=("two",), log=lambda _m: None)
    # The second target is built in the same tree, on the library the first one built.
    assert again == tree and not existed and (tree / "two").exists()
    assert (common.stat().st_mtime_ns, (tree / "one").stat().st_mtime_ns) == first
    assert shared_cmake_tree("cc", source, cache, targets=("one", "two"))[1] is True
    # Other defines or other sources: another tree.
    other = shared_cmake_tree("cc", source, cache, defines=("-DX=1",), targets=("one",))[0]
    assert other != tree
    (source / "common.c").write_text("int common(void) { return 2 - 1; }\n")
    assert shared_cmake_tree("cc", source, cache, targets=("one",))[0] not in (tree, other)


def test_shared_tree_belongs_to_the_tools_that_configured_it(tmp_path, monkeypatch):
    # The tree records the cmake, ninja and Python it was configured with: another set
    # (another virtual environment; the first one deleted) gets a tree of its own instead
    # of failing in one whose build tool is gone.
    from petacomm.profile import builder

    source, cache = tiny_project(tmp_path / "src"), tmp_path / "cache"
    tree = builder.shared_cmake_tree("cc", source, cache, targets=("one",), log=lambda _m: None)[0]
    assert "ninja=" in (tree / ".configured").read_text()
    real = builder._tool
    monkeypatch.setattr(builder, "_tool", lambda name: None if name == "ninja" else real(name))
    other, existed = builder.shared_cmake_tree(
        "cc", source, cache, targets=("two",), log=lambda _m: None
    )
    assert other != tree and not existed and (other / "two").exists()
    assert (other / "Makefile").exists() and not (tree / "two").exists()


def test_shared_tree_failed_target_is_named_and_not_recorded(tmp_path):
    from petacomm.errors import PetacommError
    from petacomm.profile.builder import shared_cmake_tree

    source, cache = tiny_project(tmp_path / "src"), tmp_path / "cache"
    with pytest.raises(PetacommError, match=r"(?s)building for \S+ failed.*undeclared"):
        shared_cmake_tree("cc", source, cache, targets=("broken",), log=lambda _m: None)
    tree, existed = shared_cmake_tree("cc", source, cache, targets=("one",), log=lambda _m: None)
    assert not existed and (tree / ".built-targets").read_text() == "one\n"
    with pytest.raises(PetacommError, match="undeclared"):  # tried again, not taken as built
        shared_cmake_tree("cc", source, cache, targets=("broken",), log=lambda _m: None)


def test_shared_tree_builds_started_together_wait_for_each_other(tmp_path):
    from petacomm.profile.builder import shared_cmake_tree

    source, cache = tiny_project(tmp_path / "src"), tmp_path / "cache"
    start = threading.Barrier(3)

    def build(_):
        start.wait()
        return shared_cmake_tree("cc", source, cache, targets=("one",), log=lambda _m: None)

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(build, range(3)))
    assert len({tree for tree, _ in results}) == 1
    assert sorted(existed for _, existed in results) == [False, True, True]
    assert (results[0][0] / ".built-targets").read_text() == "one\n"
