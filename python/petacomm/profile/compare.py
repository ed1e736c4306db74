"""What changed between two runs: call by call and region by region."""

from __future__ import annotations

from dataclasses import dataclass

from petacomm.profile import analysis
from petacomm.profile.log import Profile


@dataclass(frozen=True)
class CallDelta:
    name: str
    a_time: float
    b_time: float
    a_count: int
    b_count: int
    a_bytes: int
    b_bytes: int

    @property
    def change(self) -> float:
        return self.b_time - self.a_time


@dataclass(frozen=True)
class RegionDelta:
    name: str
    a_time: float  # mean wall per rank
    b_time: float
    a_mpi: float
    b_mpi: float


@dataclass(frozen=True)
class Comparison:
    before: Profile
    after: Profile
    calls: list[CallDelta]
    regions: list[RegionDelta]

    def totals(self) -> list[tuple[str, float, float]]:
        """(what, A's seconds, B's seconds) for the table of totals, in its order."""
        ta, tb = analysis.totals(self.before), analysis.totals(self.after)
        return [
            ("wall (slowest rank)", ta.wall, tb.wall),
            ("MPI (sum over ranks)", ta.mpi, tb.mpi),
            ("I/O (sum over ranks)", ta.io, tb.io),
            ("CALC (sum over ranks)", ta.calc, tb.calc),
        ]


def compare(before: Profile, after: Profile) -> Comparison:
    ca = {c.call: c for c in analysis.calls(before)}
    cb = {c.call: c for c in analysis.calls(after)}
    calls = []
    for name in sorted(set(ca) | set(cb)):
        x, y = ca.get(name), cb.get(name)
        calls.append(
            CallDelta(
                name,
                x.time if x else 0.0,
                y.time if y else 0.0,
                x.count if x else 0,
                y.count if y else 0,
                x.bytes if x else 0,
                y.bytes if y else 0,
            )
        )
    calls.sort(key=lambda d: (-abs(d.change), d.name))
    ra = {r.name: r for r in analysis.regions(before)}
    rb = {r.name: r for r in analysis.regions(after)}
    order = list(ra) + [n for n in rb if n not in ra]
    regions = [
        RegionDelta(
            n,
            ra[n].wall_mean if n in ra else 0.0,
            rb[n].wall_mean if n in rb else 0.0,
            ra[n].mpi_mean if n in ra else 0.0,
            rb[n].mpi_mean if n in rb else 0.0,
        )
        for n in order
    ]
    return Comparison(before, after, calls, regions)


def relative_change(a: float, b: float) -> str:
    """Change from A to B for the comparison tables: '+12.5 %', 'new', 'gone' or '='."""
    if a == 0 and b == 0:
        return "="
    if a == 0:
        return "new"
    if b == 0:
        return "gone"
    return f"{100.0 * (b - a) / a:+.1f} %"
