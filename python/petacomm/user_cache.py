"""Where petacomm keeps what it can rebuild: the user's cache directory, per purpose."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from petacomm.errors import PetacommError


def cache_directory(purpose: str, override_variable: str) -> Path:
    """The directory for one purpose (``native``, ``profilers``...): the environment
    variable ``override_variable`` when set, else ``purpose`` in the user's cache directory
    (``~/.cache/petacomm`` on Linux). It may not exist yet."""
    override = os.environ.get(override_variable)
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("petacomm")) / purpose


def writable_cache_directory(purpose: str, override_variable: str) -> Path:
    """cache_directory, created when missing. A directory that cannot be created or written
    is a PetacommError naming where it came from (the variable, or the user's cache), before
    any work that would be lost."""
    from petacomm.files import why_no_file_can_be_created

    path = cache_directory(purpose, override_variable)
    reason = None
    try:  # not exists() first: it raises when a parent cannot be searched
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        reason = f"'{path}' is not a directory"
    except OSError as err:
        parent = Path(err.filename or path).parent
        if err.errno == errno.ENOENT and os.path.isdir(parent):  # /proc answers ENOENT
            reason = f"'{parent}' does not allow creating directories"
        else:
            reason = f"cannot create '{err.filename or path}' ({err.strerror or err})"
    if reason is None:
        reason = why_no_file_can_be_created(path, ".probe-", output=False)
        if reason is None:
            return path
    origin = (
        f"{override_variable}={os.environ[override_variable]}"
        if os.environ.get(override_variable)
        else f"the user cache (set {override_variable} to use another directory)"
    )
    raise PetacommError(f"{origin}: cannot keep petacomm's {purpose} cache there: {reason}")
