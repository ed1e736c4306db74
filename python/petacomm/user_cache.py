"""Where petacomm keeps what it can rebuild: the user's cache directory, per purpose."""

from __future__ import annotations

import os
from pathlib import Path


def cache_directory(purpose: str, override_variable: str) -> Path:
    """The directory for one purpose (``native``, ``profilers``...): the environment
    variable ``override_variable`` when set, else ``purpose`` in the user's cache directory
    (``~/.cache/petacomm`` on Linux). It may not exist yet."""
    override = os.environ.get(override_variable)
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("petacomm")) / purpose
