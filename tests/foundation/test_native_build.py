"""The native sources staged for builds against another MPI (petacomm.native_build)."""

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
