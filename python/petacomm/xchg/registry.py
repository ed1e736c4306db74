"""The sparse-reduction strategies as the native registry lists them (name, summary, the
options each reads), for SparseReducePlan's validation, ``bench sparse-reduce`` and the
strategy table of docs/sparse-reduce.md. Nothing here copies the list.

``python -m petacomm.xchg.registry`` prints that table (tests/xchg/test_registry.py checks
that the page shows exactly it).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from functools import cache

from petacomm.xchg import _capi


@dataclass(frozen=True)
class Strategy:
    """A registered strategy."""

    name: str
    summary: str
    options: tuple[str, ...]


@cache
def strategies() -> tuple[Strategy, ...]:
    """Every registered strategy, in registry order (the planner's tie-break order)."""
    lib = _capi.library()
    count = ctypes.c_int()
    _capi.check(lib, lib.petacomm_xchg_strategy_count(ctypes.byref(count)), "strategy_count")
    out = []
    for index in range(count.value):
        info = _capi.StrategyInfo()
        status = lib.petacomm_xchg_strategy_info(index, ctypes.byref(info))
        _capi.check(lib, status, "strategy_info")
        out.append(
            Strategy(
                info.name.decode(), info.summary.decode(), tuple(info.options.decode().split())
            )
        )
    return tuple(out)


def strategy_names() -> tuple[str, ...]:
    """The names ``strategy`` accepts: "auto" and every registered strategy."""
    return ("auto", *(s.name for s in strategies()))


def markdown_table() -> str:
    """The strategy table of docs/sparse-reduce.md."""
    lines = ["| strategy | options it reads | what it does |", "|---|---|---|"]
    for s in strategies():
        options = ", ".join(f"`{o}`" for o in s.options) or "none"
        lines.append(f"| `{s.name}` | {options} | {s.summary} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
