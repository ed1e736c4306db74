"""Communication profiling: the profile logs written by libpetacomm-prof, their analysis,
terminal and HTML reports, and profiler regions for Python programs.

Importing this package never initialises MPI, and loads the log reader only when one of its
names is used (``petacomm profile`` starts without it).
"""

from __future__ import annotations

import importlib

# Imported now: the function `region` must shadow the submodule of the same name.
from petacomm.profile.region import region

__all__ = ["SCHEMA_VERSION", "Profile", "load", "region"]
_FROM_LOG = ("SCHEMA_VERSION", "Profile", "load")


def __getattr__(name: str):
    if name not in _FROM_LOG:
        raise AttributeError(f"module 'petacomm.profile' has no attribute {name!r}")
    return getattr(importlib.import_module("petacomm.profile.log"), name)
