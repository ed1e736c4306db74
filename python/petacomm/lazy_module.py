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
        # Called only for names not yet looked up: each is kept on the instance, so the
        # next lookup of np.add or np.zeros is a plain attribute read (this method ran
        # 25,000 times in one petacomm map of 1,024 ranks).
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        value = getattr(module, attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r}, {state}>"
