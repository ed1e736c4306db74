"""A module imported on first use.

``petacomm map --help`` lists the registered network kinds and routing models, which live
in modules written with numpy; importing numpy would double the command's start-up. Those
modules name numpy through :class:`LazyModule`, so it is imported when one of its
attributes is first used, not when the registries are read.

A ``petacomm`` command also defers numpy's subpackages that no command uses
(:func:`defer_unused_numpy_subpackages`): scipy 1.16 and 1.17 look up every attribute of
numpy when they are imported (``array_api_compat.clone_module``), and numpy imports a
subpackage when it is looked up, f2py and its 137 regular expressions among them.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys

# Looked up by scipy's import, used by no petacomm command (numpy.random, .linalg, .fft and
# .typing, which scipy itself uses, are not deferred).
UNUSED_NUMPY_SUBPACKAGES = (
    "numpy.f2py",
    "numpy.testing",
    "numpy.ma",
    "numpy.ctypeslib",
    "numpy.rec",
    "numpy.char",
    "numpy.strings",
    "numpy.polynomial",
    "numpy.matlib",
)


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


class _DeferredModules:
    """A finder of ``sys.meta_path`` (not derived from ``importlib.abc``, whose import costs
    20 ms) that finds the named modules as the import system would, and has them loaded on first
    attribute use (``importlib.util.LazyLoader``): an import binds the name without running
    the module."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, name, path, target=None):
        if name not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None  # the other finders take it, and it is imported as usual
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def defer_unused_numpy_subpackages() -> None:
    """From now on in this process, the modules of :data:`UNUSED_NUMPY_SUBPACKAGES` not yet
    imported run on their first attribute use instead of when imported (what scipy's import
    does to them: ``scipy.sparse`` 0.105 s before, 0.046-0.050 s after, numpy 2.4 and scipy
    1.17). Called by the ``petacomm`` command, not on import of the library: the process is
    the command's own."""
    if not any(isinstance(finder, _DeferredModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DeferredModules(UNUSED_NUMPY_SUBPACKAGES))
