"""Call sites of a profile (``petacomm profile --callsites DEPTH``): where the program called
MPI, as file:line:function.

The profiler keeps each site as the return addresses of the program's innermost stack frames,
written to the log as (module, offset) pairs: the offset is an address of the module's ELF
file, so sites are resolved here, offline, from the modules' debug information with
``addr2line`` (binutils), as mpiP does while the program runs. A return address follows the
call instruction, so the address looked up is the one before it (the call's own line). A
module without debug information (or no longer on disk) is shown as ``module+0xOFFSET``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from petacomm.profile import units
from petacomm.profile.log import Profile

WIDTH = 100
DEFAULT_THRESHOLD_PERCENT = 1.0


@dataclass(frozen=True)
class Frame:
    module: str
    offset: int
    function: str = "??"
    file: str = "??"
    line: int = 0

    @property
    def resolved(self) -> bool:
        return self.file != "??" and self.line > 0

    def text(self) -> str:
        """``file:line:function`` (the file's name only), or ``module+0xOFFSET``."""
        if self.resolved:
            return f"{Path(self.file).name}:{self.line}:{self.function}"
        name = Path(self.module).name or "?"
        if self.function != "??":
            return f"{name}+{self.offset:#x}:{self.function}"
        return f"{name}+{self.offset:#x}"


@dataclass(frozen=True)
class Site:
    call: str
    frames: tuple[Frame, ...]  # innermost first
    count: int
    bytes: int
    time_ns: int
    min_ns: int
    max_ns: int
    ranks: int


def _addr2line(module: str, offsets: list[int]) -> list[tuple[str, str, int]]:
    """(function, file, line) for each offset of ``module`` (one addr2line run)."""
    tool = shutil.which("addr2line")
    if not tool or not Path(module).is_file() or not offsets:
        return [("??", "??", 0)] * len(offsets)
    addresses = [f"{max(o - 1, 0):#x}" for o in offsets]
    try:
        done = subprocess.run(
            [tool, "-f", "-C", "-e", module, *addresses],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return [("??", "??", 0)] * len(offsets)
    out = done.stdout.splitlines()
    if done.returncode != 0 or len(out) != 2 * len(offsets):
        return [("??", "??", 0)] * len(offsets)
    result = []
    for k in range(len(offsets)):
        function, where = out[2 * k], out[2 * k + 1]
        where = where.split(" (discriminator")[0]
        file, _, line = where.rpartition(":")
        result.append((function, file or "??", int(line) if line.isdigit() else 0))
    return result


def resolve(pairs: set[tuple[str, int]]) -> dict[tuple[str, int], Frame]:
    """Every (module, offset) as a Frame, one addr2line run per module."""
    by_module: dict[str, list[int]] = {}
    for module, offset in pairs:
        by_module.setdefault(module, []).append(offset)
    frames = {}
    for module, offsets in by_module.items():
        offsets = sorted(set(offsets))
        for offset, (function, file, line) in zip(
            offsets, _addr2line(module, offsets), strict=True
        ):
            frames[(module, offset)] = Frame(module, offset, function, file, line)
    return frames


def sites(p: Profile) -> list[Site]:
    """The profile's call sites, resolved, largest time first ([] when call sites were off)."""
    rows = p.callsite_rows or []
    pairs = {(str(m), int(o)) for r in rows for m, o in r["frames"]}
    frames = resolve(pairs)
    out = [
        Site(
            call=r["call"],
            frames=tuple(frames[(str(m), int(o))] for m, o in r["frames"]),
            count=int(r["count"]),
            bytes=int(r["bytes"]),
            time_ns=int(r["time_ns"]),
            min_ns=int(r["min_ns"]),
            max_ns=int(r["max_ns"]),
            ranks=int(r["ranks"]),
        )
        for r in rows
    ]
    out.sort(key=lambda s: (-s.time_ns, s.call, [f.text() for f in s.frames]))
    return out


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def lines(
    p: Profile, threshold_percent: float = DEFAULT_THRESHOLD_PERCENT, show_all: bool = False
) -> list[str]:
    """The terminal section: sites with at least ``threshold_percent`` of the time at call
    sites (every site with ``show_all``), each with its frames, innermost first."""
    if p.callsite_rows is None:
        return []
    found = sites(p)
    total = sum(s.time_ns for s in found) or 1
    shown = [s for s in found if show_all or 100.0 * s.time_ns / total >= threshold_percent]
    head = (
        f"call sites ({p.callsite_depth} frame{'s' if p.callsite_depth != 1 else ''}, "
        "innermost first; time summed over ranks"
    )
    head += ")" if show_all else f"; sites with >= {threshold_percent:g} % of it)"
    out = [head]
    if not found:
        return out + ["  (no MPI call was recorded with a call site)"]
    header = f"  {'call':<26} {'time':>10} {'%':>7} {'calls':>10} {'bytes':>10}"
    out.append(header)
    for s in shown:
        out.append(
            f"  {_cut(s.call, 26):<26} {units.seconds(s.time_ns * 1e-9):>10} "
            f"{units.percent(100.0 * s.time_ns / total):>7} {units.count(s.count):>10} "
            f"{units.size(s.bytes):>10}"
        )
        if not s.frames:
            out.append("      at (other: the profiler's site table was full)")
        for k, frame in enumerate(s.frames):
            out.append(_cut(f"      {'at' if k == 0 else 'from'} {frame.text()}", WIDTH))
    hidden = len(found) - len(shown)
    if hidden:
        rest = sum(s.time_ns for s in found) - sum(s.time_ns for s in shown)
        out.append(
            f"  ... {hidden} more site{'s' if hidden != 1 else ''} below {threshold_percent:g} % "
            f"({units.seconds(rest * 1e-9)} in all; --callsite-threshold 0 or --all shows them)"
        )
    return out
