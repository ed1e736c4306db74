"""Facts that take a subprocess to learn, remembered per file so that ``petacomm profile``
starts fast: the MPI library an executable loads (``ldd``, about 45 ms) and the kind of a
launcher (``mpiexec --version``, 15 ms to seconds).

A fact is keyed by what it is about (the file's resolved path, size, modification time and
inode, and for ``ldd`` the ``LD_LIBRARY_PATH``), so a rebuilt program or a changed library
path is probed again. The facts live in ``probes.json`` in the profilers' cache directory
(``PETACOMM_PROF_CACHE``); a cache that cannot be read or written only costs the probe.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

SCHEMA = "petacomm.probes"
SCHEMA_VERSION = 1
MAX_FACTS = 256  # the oldest are dropped beyond this


def _file_key(kind: str, path: Path, extra: str) -> str | None:
    try:
        resolved = path.resolve()
        st = resolved.stat()
    except OSError:
        return None
    return f"{kind}|{resolved}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{extra}"


def _cache_file() -> Path:
    from petacomm.profile.builder import cache_root

    return cache_root() / "probes.json"


def _read(cache: Path) -> dict:
    try:
        data = json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}
    if data.get("schema") != SCHEMA or data.get("schema_version") != SCHEMA_VERSION:
        return {}
    facts = data.get("facts")
    return facts if isinstance(facts, dict) else {}


def remembered(kind: str, path: Path, probe: Callable[[], object], extra: str = ""):
    """``probe()``'s answer about ``path``, from the cache when the file has not changed."""
    key = _file_key(kind, path, extra)
    if key is None:
        return probe()
    cache = _cache_file()
    facts = _read(cache)
    if key in facts:
        return facts[key]
    value = probe()
    facts[key] = value
    while len(facts) > MAX_FACTS:
        facts.pop(next(iter(facts)))
    with contextlib.suppress(Exception):
        from petacomm.files import write_text_atomically

        text = json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "facts": facts})
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(cache, text + "\n", "probe cache")
    return value


def library_path_key() -> str:
    return os.environ.get("LD_LIBRARY_PATH", "")
