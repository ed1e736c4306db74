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
import sys
import threading
import types

# Looked up by scipy's import, used by no petacomm command (numpy.random, .linalg, .fft and
# .typing, which scipy itself uses, and numpy.ctypeslib, which the Scotch binding uses, are
# not deferred).
UNUSED_NUMPY_SUBPACKAGES = (
    "numpy.f2py",
    "numpy.testing",
    "numpy.ma",
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
    20 ms) that finds the named modules as the import system would, with a loader that
    defers running them (:class:`_DeferredLoader`)."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, name, path, target=None):
        if name not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None  # the other finders take it, and it is imported as usual
        spec.loader = _DeferredLoader(spec.loader)
        return spec


class _DeferredLoader:
    """Binds a module without running it: :class:`_DeferredModule` runs it, with the
    original loader, when one of its attributes is first used. (Not stdlib's
    ``importlib.util.LazyLoader``: on Python 3.11 a second thread using such a module while
    the first runs it sees it half run, ``np.ma`` without ``masked_array``.)"""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return None  # the usual module object

    def exec_module(self, module):
        spec = module.__spec__
        spec.loader = module.__loader__ = self.loader
        spec.loader_state = {
            "lock": threading.RLock(),
            "running": False,
            "bound": dict(module.__dict__),  # what the module held before it ran
        }
        module.__class__ = _DeferredModule


class _DeferredModule(types.ModuleType):
    """A module bound but not run yet. Its first attribute use runs it under a lock, which
    other threads wait for; the thread running it sees it as an eager import shows a module
    being run."""

    def __getattribute__(self, attr):
        spec = object.__getattribute__(self, "__spec__")
        state = spec.loader_state
        with state["lock"]:
            if type(self) is _DeferredModule and not state["running"]:
                state["running"] = True
                namespace = object.__getattribute__(self, "__dict__")
                # What was set on the module after it was bound (a submodule imported
                # meanwhile) is set again after it ran, as it would have been set after.
                bound = state["bound"]
                set_since = {
                    k: v for k, v in namespace.items() if k not in bound or bound[k] is not v
                }
                try:
                    spec.loader.exec_module(self)
                    namespace.update(set_since)
                finally:
                    self.__class__ = types.ModuleType
        return types.ModuleType.__getattribute__(self, attr)


def defer_unused_numpy_subpackages() -> None:
    """From now on in this process, the modules of :data:`UNUSED_NUMPY_SUBPACKAGES` not yet
    imported (those of source files) run on their first attribute use instead of when
    imported, which is what scipy's import does to them: ``scipy.sparse`` 0.105 s before,
    0.046-0.050 s after (numpy 2.4, scipy 1.17). Called by the ``petacomm`` command, not on
    import of the library: the process is the command's own."""
    if not any(isinstance(finder, _DeferredModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DeferredModules(UNUSED_NUMPY_SUBPACKAGES))
