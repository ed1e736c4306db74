"""A module imported on first use.

``petacomm map --help`` lists the registered network kinds and routing models, which live
in modules written with numpy; importing numpy would double the command's start-up. Those
modules name numpy through :class:`LazyModule`, so it is imported when one of its
attributes is first used, not when the registries are read.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for the module ``name``: the first attribute looked up imports it."""

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r}, {state}>"
