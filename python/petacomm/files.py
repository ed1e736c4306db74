"""Writing files the way every petacomm tool must: atomically, with a clear error.

A file is written to a temporary name in the same directory, flushed to disk, then renamed
over the target, so a reader never sees it half-written and an existing file survives any
failure.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from petacomm.errors import PetacommError


def write_text_atomically(path: str | os.PathLike, text: str, argument: str = "output") -> Path:
    """Writes ``text`` to ``path``; PetacommError names ``argument`` and the reason on failure.
    Missing parent directories are created."""
    target = Path(path)
    if target.is_dir():
        raise PetacommError(f"{argument}: '{target}' is a directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as err:
        raise PetacommError(f"{argument}: cannot write '{target}': {err.strerror}") from err
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException as err:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise PetacommError(f"{argument}: cannot write '{target}': {err.strerror}") from err
        raise
    return target
