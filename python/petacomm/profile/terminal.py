"""The terminal report of a profile (``petacomm report LOG``) and of two (``LOG LOG2``)."""

from __future__ import annotations

import shlex

from petacomm.profile import analysis, callsites, units
from petacomm.profile.callsites import DEFAULT_THRESHOLD_PERCENT
from petacomm.profile.compare import Comparison, relative_change
from petacomm.profile.log import Profile

WIDTH = 100  # terminal tables and lines fit this many columns


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def _table(
    headers: list[str], rows: list[list[str]], right: set[int] | None = None, width: int = WIDTH
) -> list[str]:
    """A text table within ``width`` columns: the widest left-aligned (name) columns are cut
    with '...' when the table would be wider."""
    right = right if right is not None else set(range(1, len(headers)))
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    while excess > 0:
        names = [i for i in range(len(widths)) if i not in right and widths[i] > 8]
        if not names:
            break
        widest = max(names, key=lambda i: widths[i])
        cut = min(excess, widths[widest] - 8)
        widths[widest] -= cut
        excess -= cut

    def fmt(cells: list[str]) -> str:
        parts = []
        for i, c in enumerate(cells):
            cut = _fit(c, widths[i])
            parts.append(cut.rjust(widths[i]) if i in right else cut.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    return [fmt(headers), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]


def _wrap(prefix: str, items: list[str], width: int = WIDTH) -> list[str]:
    """`prefix` then the items separated by two spaces, continued on indented lines."""
    lines, line = [], prefix
    for item in items:
        if len(line) + 2 + len(item) > width and line.strip():
            lines.append(line.rstrip())
            line = " " * len(prefix)
        line += item + "  "
    lines.append(line.rstrip())
    return lines


def short_library(text: str) -> str:
    """'Open MPI v5.0.11, package: ...' -> 'Open MPI v5.0.11'."""
    first = (text or "(unknown)").split(",")[0].strip()
    return first[:80]


def header_lines(p: Profile) -> list[str]:
    t = analysis.totals(p)
    status = "complete" if p.complete else "PARTIAL (the run did not reach MPI_Finalize)"
    lines = [
        f"profile: {p.source}  [{status}]",
        _fit(f"command: {shlex.join(p.command) if p.command else '(unknown)'}", WIDTH),
        f"MPI:     {short_library(p.mpi_library)}  thread level {p.thread_level or '?'}",
        f"ranks {t.ranks} on {t.nodes} node{'s' if t.nodes != 1 else ''}  |  "
        f"wall {units.seconds(t.wall)}  |  MPI {units.percent(t.mpi_percent)}  |  "
        f"I/O {units.percent(t.io_percent)}  |  CALC {units.percent(t.calc_percent)}",
        f"imbalance (max-mean)/max over ranks: CALC {units.percent(t.calc_imbalance)}, "
        f"MPI {units.percent(t.mpi_imbalance)}  |  peak RSS {units.size(t.rss_max_kib * 1024)}",
    ]
    if not p.complete:
        reasons = sorted(set(p.partial_reasons.values()))
        lines.append(
            f"partial logs from {len(p.partial_reasons)} of {p.ranks} ranks ({'; '.join(reasons)})"
        )
        if p.missing_ranks:
            lines.append(f"no log from ranks {p.missing_ranks_text()}")
        for rank, f in sorted(p.in_flight.items())[:8]:
            lines.append(
                _fit(
                    f"rank {rank} was inside {f['call']} (region {f['region']}) for "
                    f"{units.seconds(f['ns'] * analysis.NS)} when it stopped (counted as MPI)",
                    WIDTH,
                )
            )
        if len(p.in_flight) > 8:
            lines.append(f"... and {len(p.in_flight) - 8} more ranks inside an MPI call")
        lines += [_fit(f"note: {n}", WIDTH) for n in p.notes]
    coarsened = p.coarsened_events
    if coarsened:
        capacity = p.profiler.get("table_capacity")
        held = f" (it holds {capacity:,} keys)" if capacity else ""
        lines.append(f"note: the call table overflowed{held}: {coarsened:,} events were kept")
        lines.append(
            "      with coarser keys (raise --table-size / PETACOMM_PROF_TABLE_SIZE for detail)"
        )
    if p.merge_errors:
        lines.append("note: some ranks' data could not be merged (out of memory at finalize)")
    return lines


def rank_lines(p: Profile, limit: int = 16) -> list[str]:
    rt = analysis.rank_times(p)
    if not rt:
        return []
    ordered = sorted(rt, key=lambda t: -t.mpi)
    shown = ordered if len(ordered) <= limit else ordered[: limit // 2] + ordered[-limit // 2 :]
    rows = [
        [
            str(t.rank),
            t.host,
            units.seconds(t.wall),
            units.seconds(t.calc),
            units.seconds(t.mpi),
            units.seconds(t.io),
            units.size(t.rss_kib * 1024),
        ]
        for t in shown
    ]
    title = "ranks by MPI time"
    if len(ordered) > limit:
        title += f" (the {limit // 2} highest and lowest of {len(ordered)})"
    return [title] + _table(
        ["rank", "host", "wall", "CALC", "MPI", "I/O", "peak RSS"], rows, {0, 2, 3, 4, 5, 6}
    )


def region_lines(p: Profile) -> list[str]:
    regs = analysis.regions(p)
    rows = [
        [
            r.name,
            r.parent or "",
            units.count(r.entries),
            units.seconds(r.wall_mean),
            units.seconds(r.calc_mean),
            units.seconds(r.mpi_mean),
            units.seconds(r.io_mean),
            units.seconds(r.lbst_mean),
            units.percent(r.imbalance),
        ]
        for r in regs
    ]
    return ["regions (mean per rank, inclusive of nested regions)"] + _table(
        ["region", "parent", "entries", "wall", "CALC", "MPI", "I/O", "LBST", "imbalance"],
        rows,
        {2, 3, 4, 5, 6, 7, 8},
    )


def call_lines(p: Profile, limit: int | None = None) -> list[str]:
    cs = analysis.calls(p)
    mpi_total = sum(c.time for c in cs if c.kind != "posix") or 1.0
    shown = cs if limit is None else cs[:limit]
    rows = [
        [
            c.call,
            units.seconds(c.time),
            "" if c.kind == "posix" else units.percent(100.0 * c.time / mpi_total),
            units.count(c.count),
            units.size(c.bytes),
            units.size(c.avg_bytes),
            units.seconds(c.avg_time),
            units.seconds(c.rank_time_min) if c.ranks else "",
            units.seconds(c.rank_time_max) if c.ranks else "",
        ]
        for c in shown
    ]
    title = "calls by time (summed over ranks)"
    if limit is not None and len(cs) > limit:
        title += f": top {limit} of {len(cs)} (--all shows every call)"
    return [title] + _table(
        ["call", "time", "% MPI", "count", "bytes", "avg size", "avg time", "rank min", "rank max"],
        rows,
    )


def size_lines(p: Profile, limit: int = 6) -> list[str]:
    out = ["message sizes of the busiest data-moving calls (count per size class)"]
    moved = [c for c in analysis.calls(p, include_posix=False) if c.bytes > 0][:limit]
    for c in moved:
        hist = analysis.log2_histogram(analysis.sizes(p, c.call))
        cells = [f"{units.size_class(lo)}+:{units.count(n)}" for lo, n, _ in hist]
        out += _wrap(f"  {_fit(c.call, 24):<24} ", cells)
    return out if moved else []


def matrix_lines(p: Profile, limit: int = 8) -> list[str]:
    m = analysis.matrix(p)
    if m is None or m.bytes.sum() == 0:
        return []
    pairs = []
    n = m.bytes.shape[0]
    labels = m.labels()
    for i in range(n):
        for j in range(n):
            if m.bytes[i, j] > 0:
                pairs.append((m.bytes[i, j], m.counts[i, j], labels[i], labels[j]))
    pairs.sort(reverse=True)
    rows = [[s, d, units.size(b), units.count(int(c))] for b, c, s, d in pairs[:limit]]
    what = "rank" if m.block == 1 else f"block of {m.block} ranks"
    title = f"heaviest partner pairs ({what}; from {m.source})"
    return [title] + _table(["from", "to", "bytes", "messages"], rows, {2, 3})


def report(
    p: Profile, all_calls: bool = False, callsite_threshold: float = DEFAULT_THRESHOLD_PERCENT
) -> str:
    sections = [
        header_lines(p),
        region_lines(p),
        call_lines(p, None if all_calls else 20),
        callsites.lines(p, callsite_threshold, show_all=all_calls),
        size_lines(p),
        matrix_lines(p),
        rank_lines(p),
    ]
    return "\n\n".join("\n".join(s) for s in sections if s) + "\n"


def comparison_report(c: Comparison) -> str:
    a, b = c.before, c.after
    ta, tb = analysis.totals(a), analysis.totals(b)
    lines = [
        f"A: {a.source}  ({shlex.join(a.command)}, {ta.ranks} ranks)",
        f"B: {b.source}  ({shlex.join(b.command)}, {tb.ranks} ranks)",
        "",
    ]
    rows = [
        [label, units.seconds(va), units.seconds(vb), relative_change(va, vb)]
        for label, va, vb in c.totals()
    ]
    lines += ["totals"] + _table(["", "A", "B", "B vs A"], rows) + [""]
    rows = [
        [
            d.name,
            units.seconds(d.a_time),
            units.seconds(d.b_time),
            relative_change(d.a_time, d.b_time),
            f"{units.count(d.a_count)} -> {units.count(d.b_count)}",
            f"{units.size(d.a_bytes)} -> {units.size(d.b_bytes)}",
        ]
        for d in c.calls
    ]
    lines += ["calls (time summed over ranks), largest change first"] + _table(
        ["call", "time A", "time B", "change", "count", "bytes"], rows
    )
    rows = [
        [
            d.name,
            units.seconds(d.a_time),
            units.seconds(d.b_time),
            relative_change(d.a_time, d.b_time),
            units.seconds(d.a_mpi),
            units.seconds(d.b_mpi),
        ]
        for d in c.regions
    ]
    lines += ["", "regions (mean wall and MPI per rank)"] + _table(
        ["region", "wall A", "wall B", "change", "MPI A", "MPI B"], rows
    )
    return "\n".join(lines) + "\n"
