"""petacomm's native sources for builds against another MPI, and where such builds are cached.

``petacomm bench transpose`` (against Debian's Open MPI) and ``petacomm simulate`` (with
SimGrid's smpicc) build the native part again, with ``petacomm.profile.builder``'s
``cached_cmake_build``, from the sources an installed petacomm ships in
``share/petacomm-src`` (or, run from a build tree, that tree's sources copied into the cache).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from petacomm.errors import PetacommError

# What the build needs from a source tree: the top-level project and the native tree (the
# tests are not built; installed as share/petacomm-src by native/src/transpose/CMakeLists.txt).
SOURCE_PARTS = ("CMakeLists.txt", "cmake", "native")
SKIPPED = shutil.ignore_patterns("tests", "__pycache__")


def build_cache() -> Path:
    """Root of the cached native builds: PETACOMM_BUILD_CACHE, else the user cache (created;
    an error naming it when it cannot be written)."""
    from petacomm.user_cache import writable_cache_directory

    return writable_cache_directory("native", "PETACOMM_BUILD_CACHE")


def source_tree() -> Path:
    """The petacomm sources to build: shipped in share/petacomm-src, or (from a build tree)
    the parts of its source tree copied into the build cache."""
    from petacomm.native import native_dir

    shipped = native_dir() / "share" / "petacomm-src"
    if (shipped / "CMakeLists.txt").exists():
        return shipped
    cache = native_dir() / "CMakeCache.txt"
    root = None
    if cache.exists():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                root = Path(line.split("=", 1)[1])
    if root is None or not (root / "native" / "src").is_dir():
        raise PetacommError(
            f"petacomm sources not found in {shipped} (reinstall petacomm, or set "
            "PETACOMM_NATIVE_DIR to a build tree)"
        )
    # Staged under a name of its own and renamed into place whole: two commands starting
    # at once (two `petacomm simulate` runs) once shared one staging directory, and one
    # removed it while the other copied into it. A tree already in place is the same
    # sources (the name is their hash), so it is used as it is.
    import hashlib
    import tempfile

    digest = hashlib.sha256()
    for part in SOURCE_PARTS:
        path = root / part
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for f in files:
            if f.is_file() and not {"tests", "__pycache__"} & set(f.relative_to(root).parts):
                digest.update(f.relative_to(root).as_posix().encode())
                digest.update(f.read_bytes())
    staging = build_cache() / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    staged = staging / f"petacomm-src-{digest.hexdigest()[:16]}"
    if staged.is_dir():
        return staged
    work = Path(tempfile.mkdtemp(prefix=".petacomm-src-", dir=staging))
    try:
        for part in SOURCE_PARTS:
            if (root / part).is_dir():
                shutil.copytree(root / part, work / part, ignore=SKIPPED)
            else:
                shutil.copy2(root / part, work / part)
        try:
            work.rename(staged)
        except OSError:
            if not staged.is_dir():  # not another command's identical tree: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # Trees of older sources (a day untouched: no command still building from them).
    import time

    for old in staging.glob("petacomm-src-*"):
        if old != staged and old.stat().st_mtime < time.time() - 86400:
            shutil.rmtree(old, ignore_errors=True)
    return staged
