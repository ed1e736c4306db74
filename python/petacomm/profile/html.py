"""The HTML report: one self-contained file (inline SVG, CSS and a little JavaScript; no
network access), readable at thousands of ranks (ranks and matrix cells are aggregated).

Sections: per-rank CALC/MPI/I/O (sorted, imbalance marked), regions, calls (every call,
sortable), message-size histograms, communication matrix (bytes or messages), time against
message size per call with the machine model's alpha + n*beta when given; and for two logs,
what changed.
"""

from __future__ import annotations

import html as _html
import math
import shlex

from petacomm import __version__
from petacomm.profile import analysis, units
from petacomm.profile.compare import Comparison, relative_change
from petacomm.profile.log import Profile

COLOURS = {"CALC": "#4e79a7", "MPI": "#e15759", "I/O": "#f28e2b", "LBST": "#59a14f"}
SERIES = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"]
MAX_BARS = 512

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;
background:#fafafa}
header{background:#20313f;color:#fff;padding:18px 28px}
header h1{margin:0 0 6px;font-size:20px} header .cmd{font-family:monospace;opacity:.85}
main{padding:8px 28px 40px;max-width:1240px}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:18px 0;padding:14px 18px}
h2{font-size:17px;margin:2px 0 10px} .note{color:#666;font-size:13px}
.warn{background:#fff4e5;border:1px solid #f0b86e;padding:8px 12px;border-radius:4px}
.kpis{display:flex;flex-wrap:wrap;gap:10px;margin-top:12px}
.kpi{background:rgba(255,255,255,.12);padding:6px 12px;border-radius:4px}
.kpi b{display:block;font-size:18px}
table{border-collapse:collapse;font-size:13px;margin-top:8px}
th,td{padding:3px 9px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f3f3f3;cursor:pointer;user-select:none}
th:first-child,td:first-child{text-align:left}
.legend span{display:inline-block;margin-right:14px} .legend i{display:inline-block;width:11px;
height:11px;margin-right:5px;vertical-align:-1px}
svg text{font:11px system-ui,sans-serif;fill:#333} .grid line{stroke:#e8e8e8}
.small-multiples{display:flex;flex-wrap:wrap;gap:14px}
button{font:13px system-ui;margin-right:6px;padding:3px 10px;border:1px solid #bbb;background:#fff;
border-radius:4px;cursor:pointer} button.on{background:#20313f;color:#fff}
"""

JS = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
    var rows=Array.prototype.slice.call(t.tBodies[0].rows);
    var asc=th.dataset.asc!=='1'; th.dataset.asc=asc?'1':'0';
    rows.sort(function(a,b){var x=a.cells[i].dataset.v||a.cells[i].textContent,
      y=b.cells[i].dataset.v||b.cells[i].textContent; var nx=parseFloat(x),ny=parseFloat(y);
      var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y); return asc?c:-c;});
    rows.forEach(function(r){t.tBodies[0].appendChild(r);});});});});
document.querySelectorAll('[data-toggle]').forEach(function(b){b.addEventListener('click',
  function(){var g=b.dataset.toggle; document.querySelectorAll('[data-group="'+g+'"]').forEach(
  function(e){e.style.display=e.dataset.show===b.dataset.show?'':'none';});
  document.querySelectorAll('[data-toggle="'+g+'"]').forEach(function(o){
  o.classList.toggle('on',o===b);});});});
document.body.dataset.ready='1';
"""


def esc(text: object) -> str:
    return _html.escape(str(text), quote=True)


# ---- SVG helpers ---------------------------------------------------------------------


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * exp:
            return m * exp
    return 10 * exp


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(label)}">'
        + "".join(body)
        + "</svg>"
    )


def _legend(names: list[str], colours: list[str]) -> str:
    items = "".join(
        f'<span><i style="background:{c}"></i>{esc(n)}</span>'
        for n, c in zip(names, colours, strict=True)
    )
    return f'<div class="legend">{items}</div>'


def _log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0**e for e in range(a, b + 1)]


def _byte_ticks(lo: float, hi: float, most: int = 9) -> list[float]:
    """Powers of two between lo and hi (1 B, 16 B, 256 B, 4 KiB...): exact byte labels."""
    a, b = max(math.floor(math.log2(lo)), 0), math.ceil(math.log2(hi))
    step = max(1, math.ceil((b - a + 1) / most))
    return [2.0**e for e in range(a, b + 1) if e % step == 0]


TEXT_PX = 6.4  # width of one character of the 11 px labels, for spacing them


def _label_step(labels: list[str], slot_px: float) -> int:
    """Every how many slots a label fits without overlapping its neighbours."""
    longest = max((len(s) for s in labels), default=1)
    return max(1, math.ceil((longest * TEXT_PX + 6) / max(slot_px, 1e-9)))


def _nice_step(n: int, most: int) -> int:
    """A round step (1, 2, 5, 10, 20, ...) giving at most `most` ticks over n items."""
    raw = max(1.0, n / most)
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * exp:
            return int(m * exp)
    return int(10 * exp)


# ---- sections ---------------------------------------------------------------------------


def _header(p: Profile) -> str:
    t = analysis.totals(p)
    kpis = [
        ("ranks", f"{t.ranks} on {t.nodes} node{'s' if t.nodes != 1 else ''}"),
        ("wall time", units.seconds(t.wall)),
        ("MPI", units.percent(t.mpi_percent)),
        ("I/O", units.percent(t.io_percent)),
        ("CALC", units.percent(t.calc_percent)),
        ("CALC imbalance", units.percent(t.calc_imbalance)),
        ("peak RSS / rank", units.size(t.rss_max_kib * 1024)),
    ]
    cmd = shlex.join(p.command) if p.command else "(unknown command)"
    k = "".join(f'<div class="kpi">{esc(a)}<b>{esc(b)}</b></div>' for a, b in kpis)
    return (
        f"<header><h1>petacomm profile: {esc(p.label)}</h1>"
        f'<div class="cmd">{esc(cmd)}</div><div class="note" style="color:#cdd">'
        f"{esc(p.mpi_library)} &middot; thread level {esc(p.thread_level)}</div>"
        f'<div class="kpis">{k}</div></header>'
    )


def _warnings(p: Profile) -> str:
    notes = []
    if not p.complete:
        reasons = "; ".join(sorted(set(p.partial_reasons.values())))
        notes.append(
            f"This run did not reach MPI_Finalize: partial logs of "
            f"{len(p.partial_reasons)} of {p.ranks} ranks ({esc(reasons)})."
        )
        if p.missing_ranks:
            notes.append(f"No log from {len(p.missing_ranks)} ranks.")
        for rank, f in sorted(p.in_flight.items())[:8]:
            notes.append(
                f"Rank {rank} was inside {esc(f['call'])} (region {esc(f['region'])}) for "
                f"{esc(units.seconds(f['ns'] * analysis.NS))} when it stopped (counted as MPI)."
            )
    notes += [esc(n) for n in p.notes]
    coarsened = p.coarsened_events
    if coarsened:
        capacity = p.profiler.get("table_capacity")
        held = f" (it holds {capacity:,} keys per rank)" if capacity else ""
        notes.append(
            f"The call table overflowed{held}: {coarsened:,} events kept with coarser keys "
            "(raise --table-size / PETACOMM_PROF_TABLE_SIZE)."
        )
    if not notes:
        return ""
    return '<section class="warn">' + "<br>".join(notes) + "</section>"


def rank_chart(p: Profile) -> str:
    rt = analysis.rank_times(p)
    if not rt:
        return ""
    group = max(1, math.ceil(len(rt) / MAX_BARS))
    bars = []  # (first rank, last rank, calc, mpi, io): consecutive ranks, means per group
    for i in range(0, len(rt), group):
        chunk = rt[i : i + group]
        n = len(chunk)
        bars.append(
            (
                chunk[0].rank,
                chunk[-1].rank,
                sum(t.calc for t in chunk) / n,
                sum(t.mpi for t in chunk) / n,
                sum(t.io for t in chunk) / n,
            )
        )
    width, height, left, bottom, top = 1100, 300, 60, 48, 14
    plot_w, plot_h = width - left - 20, height - bottom - top
    ymax = _nice_max(max(c + m + i for _, _, c, m, i in bars))
    bw = plot_w / len(bars)
    body = ['<g class="grid">']
    for k in range(6):
        y = top + plot_h - plot_h * k / 5
        body.append(f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}"/>')
        body.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{esc(units.seconds(ymax * k / 5))}</text>"
        )
    body.append("</g>")
    for idx, (first, last, calc, mpi, io) in enumerate(bars):
        x = left + idx * bw
        y = top + plot_h
        label = f"rank {first}" if first == last else f"ranks {first}-{last} (mean)"
        host = f" ({rt[idx].host})" if first == last else ""
        for name, v in (("CALC", calc), ("MPI", mpi), ("I/O", io)):
            h = plot_h * v / ymax
            y -= h
            body.append(
                f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(bw - (1 if bw > 3 else 0), 0.5):.2f}" '
                f'height="{h:.2f}" fill="{COLOURS[name]}"><title>{esc(label + host)}: {name} '
                f"{esc(units.seconds(v))}</title></rect>"
            )
    # Rank numbers on the axis: round values, as many as fit.
    step = _nice_step(len(rt), min(20, max(1, int(plot_w / (TEXT_PX * 6)))))
    for rank in range(0, len(rt), step):
        x = left + (rank // group + 0.5) * bw
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + plot_h}" y2="{top + plot_h + 4}" '
            'stroke="#666"/>'
        )
        body.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{rank}</text>')
    walls = [t.wall for t in rt]
    mean_wall = sum(walls) / len(walls)
    calcs = [t.calc for t in rt]
    # Mean and maximum wall: the maximum's label above its line, the mean's below.
    for value, name, dash, dy in (
        (mean_wall, "mean wall", "6,4", 13),
        (max(walls), "max wall", "2,3", -4),
    ):
        y = top + plot_h - plot_h * value / ymax
        body.append(
            f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" stroke="#222" '
            f'stroke-dasharray="{dash}"/><text x="{width - 22}" y="{y + dy:.1f}" '
            f'text-anchor="end">{name} {esc(units.seconds(value))}</text>'
        )
    body.append(
        f'<text x="{left}" y="{height - 6}">rank &#8594;'
        f"{esc(f'  (bars are means of {group} consecutive ranks)' if group > 1 else '')}</text>"
    )
    svg = _svg(width, height, body, "time per rank")
    t = analysis.totals(p)
    spread = f"{units.seconds(min(calcs))} to {units.seconds(max(calcs))}"
    return (
        "<section><h2>Time per rank: CALC, MPI and I/O</h2>"
        + _legend(["CALC", "MPI", "I/O"], [COLOURS["CALC"], COLOURS["MPI"], COLOURS["I/O"]])
        + svg
        + f'<div class="note">Load imbalance (max - mean)/max: CALC '
        f"{units.percent(t.calc_imbalance)} (per-rank CALC from {spread}), MPI "
        f"{units.percent(t.mpi_imbalance)}. Time a rank waits in MPI for slower ranks shows "
        f"as MPI time. Hover over a bar for its rank and figures.</div></section>"
    )


def region_section(p: Profile) -> str:
    regs = analysis.regions(p)
    if not regs:
        return ""
    width, row_h, left = 1100, 26, 220
    height = 20 + row_h * len(regs)
    xmax = _nice_max(max(r.wall_mean for r in regs))
    plot_w = width - left - 150
    body = []
    for i, r in enumerate(regs):
        y = 10 + i * row_h
        x = left
        depth = 0
        parent = r.parent
        names = {q.name: q for q in regs}
        while parent and parent in names and depth < 8:
            depth += 1
            parent = names[parent].parent
        room = int((left - 14 - 12 * depth) / TEXT_PX)
        shown = r.name if len(r.name) <= room else r.name[: max(room - 3, 1)] + "..."
        body.append(
            f'<text x="{8 + 12 * depth}" y="{y + 15}"><title>{esc(r.name)}</title>'
            f"{esc(shown)}</text>"
        )
        for name, v in (("CALC", r.calc_mean), ("MPI", r.mpi_mean), ("I/O", r.io_mean)):
            w = plot_w * v / xmax
            body.append(
                f'<rect x="{x:.2f}" y="{y + 3}" width="{w:.2f}" height="{row_h - 8}" '
                f'fill="{COLOURS[name]}"><title>{esc(r.name)}: {name} '
                f"{esc(units.seconds(v))} (mean per rank)</title></rect>"
            )
            x += w
        if r.lbst_mean > 0:
            w = plot_w * r.lbst_mean / xmax
            body.append(
                f'<rect x="{left}" y="{y + row_h - 6}" width="{w:.2f}" height="3" '
                f'fill="{COLOURS["LBST"]}"><title>LBST {esc(units.seconds(r.lbst_mean))}'
                "</title></rect>"
            )
        body.append(f'<text x="{x + 6:.1f}" y="{y + 15}">{esc(units.seconds(r.wall_mean))}</text>')
    svg = _svg(width, height, body, "regions")
    rows = "".join(
        f"<tr><td>{esc(r.name)}</td><td>{esc(r.parent or '')}</td>"
        f'<td data-v="{r.entries}">{r.entries:,}</td>'
        f'<td data-v="{r.wall_mean}">{esc(units.seconds(r.wall_mean))}</td>'
        f'<td data-v="{r.wall_max}">{esc(units.seconds(r.wall_max))}</td>'
        f'<td data-v="{r.calc_mean}">{esc(units.seconds(r.calc_mean))}</td>'
        f'<td data-v="{r.mpi_mean}">{esc(units.seconds(r.mpi_mean))}</td>'
        f'<td data-v="{r.io_mean}">{esc(units.seconds(r.io_mean))}</td>'
        f'<td data-v="{r.lbst_mean}">{esc(units.seconds(r.lbst_mean))}</td>'
        f'<td data-v="{r.imbalance}">{esc(units.percent(r.imbalance))}</td></tr>'
        for r in regs
    )
    table = (
        '<table class="sortable"><thead><tr><th>region</th><th>parent</th><th>entries</th>'
        "<th>wall (mean)</th><th>wall (max)</th><th>CALC</th><th>MPI</th><th>I/O</th>"
        f"<th>LBST</th><th>wall imbalance</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return (
        "<section><h2>Regions</h2>"
        + _legend(list(COLOURS), list(COLOURS.values()))
        + svg
        + table
        + '<div class="note">Mean per rank, inclusive of nested regions. LBST: time in the '
        "barrier that closed the region (load imbalance).</div></section>"
    )


def calls_section(p: Profile, model=None) -> str:
    cs = analysis.calls(p)
    if not cs:
        return "<section><h2>Calls</h2><p>No calls were recorded.</p></section>"
    mpi_total = sum(c.time for c in cs if c.kind != "posix") or 1.0
    top = cs[:15]
    width, row_h, left = 1100, 22, 200
    height = 10 + row_h * len(top)
    xmax = _nice_max(max(c.time for c in top))
    body = []
    for i, c in enumerate(top):
        y = 5 + i * row_h
        w = (width - left - 260) * c.time / xmax
        colour = COLOURS["I/O"] if c.kind.startswith(("io", "posix")) else COLOURS["MPI"]
        body.append(f'<text x="6" y="{y + 14}">{esc(c.call)}</text>')
        body.append(
            f'<rect x="{left}" y="{y + 3}" width="{w:.2f}" height="{row_h - 6}" fill="{colour}">'
            f"<title>{esc(c.call)}: {esc(units.seconds(c.time))}, {c.count:,} calls, "
            f"{esc(units.size(c.bytes))}</title></rect>"
        )
        body.append(
            f'<text x="{left + w + 6:.1f}" y="{y + 14}">{esc(units.seconds(c.time))} &middot; '
            f"{c.count:,} calls &middot; avg {esc(units.size(c.avg_bytes))}</text>"
        )
    svg = _svg(width, height, body, "calls by time")
    rows = []
    for c in cs:
        pct = "" if c.kind == "posix" else units.percent(100 * c.time / mpi_total)
        rows.append(
            f"<tr><td>{esc(c.call)}</td><td>{esc(c.kind)}</td>"
            f'<td data-v="{c.time}">{esc(units.seconds(c.time))}</td><td>{pct}</td>'
            f'<td data-v="{c.count}">{c.count:,}</td>'
            f'<td data-v="{c.bytes}">{esc(units.size(c.bytes))}</td>'
            f'<td data-v="{c.avg_bytes}">{esc(units.size(c.avg_bytes))}</td>'
            f'<td data-v="{c.avg_time}">{esc(units.seconds(c.avg_time))}</td>'
            f'<td data-v="{c.min_call}">{esc(units.seconds(c.min_call))}</td>'
            f'<td data-v="{c.max_call}">{esc(units.seconds(c.max_call))}</td>'
            f'<td data-v="{c.rank_time_min}">{esc(units.seconds(c.rank_time_min))}</td>'
            f'<td data-v="{c.rank_time_max}">{esc(units.seconds(c.rank_time_max))}</td></tr>'
        )
    table = (
        '<table class="sortable"><thead><tr><th>call</th><th>kind</th><th>time</th>'
        "<th>% MPI</th><th>count</th><th>bytes</th><th>avg size</th><th>avg time</th>"
        "<th>fastest call</th><th>slowest call</th><th>rank min</th><th>rank max</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return (
        "<section><h2>Calls by time (summed over ranks)</h2>"
        + svg
        + '<div class="note">Every call the program made (click a column to sort). Rank '
        "min/max: the least and most time one rank spent in the call.</div>" + table + "</section>"
    )


def histogram_section(p: Profile) -> str:
    moving = [c for c in analysis.calls(p, include_posix=False) if c.bytes > 0][:12]
    if not moving:
        return ""
    charts = []
    for c in moving:
        hist = analysis.log2_histogram(analysis.sizes(p, c.call))
        width, height, left, bottom = 330, 170, 44, 40
        plot_w, plot_h = width - left - 10, height - bottom - 22
        cmax = max(n for _, n, _ in hist) or 1
        bw = plot_w / len(hist)
        step = _label_step([units.size_class(lo) for lo, _, _ in hist], bw)
        body = [f'<text x="{left}" y="13" style="font-weight:600">{esc(c.call)}</text>']
        for i, (lo, n, b) in enumerate(hist):
            h = plot_h * n / cmax
            x = left + i * bw
            body.append(
                f'<rect x="{x + 1:.1f}" y="{22 + plot_h - h:.1f}" width="{max(bw - 2, 1):.1f}" '
                f'height="{h:.1f}" fill="{COLOURS["MPI"]}"><title>'
                f"{esc(units.size_class(lo))} and up: {n:,} calls, {esc(units.size(b))}"
                "</title></rect>"
            )
            if i % step == 0:
                body.append(
                    f'<text x="{x + bw / 2:.1f}" y="{height - 24}" text-anchor="middle">'
                    f"{esc(units.size_class(lo))}</text>"
                )
        body.append(f'<text x="{left - 4}" y="28" text-anchor="end">{cmax:,}</text>')
        body.append(f'<text x="{left}" y="{height - 6}">message size (power-of-two classes)</text>')
        charts.append(_svg(width, height, body, f"sizes of {c.call}"))
    return (
        '<section><h2>Message sizes per call</h2><div class="small-multiples">'
        + "".join(charts)
        + '</div><div class="note">Number of calls per message-size class (bytes per '
        "call as recorded: sent, or received for receives).</div></section>"
    )


def _heat(v: float, vmax: float) -> str:
    if v <= 0 or vmax <= 0:
        return "#ffffff"
    f = math.log1p(v) / math.log1p(vmax)
    stops = [(255, 245, 235), (253, 174, 107), (230, 85, 13), (127, 39, 4)]
    pos = f * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    t = pos - i
    rgb = [round(a + (b - a) * t) for a, b in zip(stops[i], stops[i + 1], strict=True)]
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _colour_ticks(vmax: float, base: int) -> list[float]:
    """Tick values of the logarithmic colour bar: 0 and powers of `base` (1024 for bytes,
    10 for counts; 2 when that gives too few) up to vmax, at most about 7."""
    if vmax <= 0:
        return [0.0]
    ticks = [float(base) ** e for e in range(0, int(math.log(vmax, base) + 1e-9) + 1)]
    if len(ticks) < 3:
        ticks = [2.0**e for e in range(0, int(math.log2(max(vmax, 1)) + 1e-9) + 1)]
    step = max(1, math.ceil(len(ticks) / 6))
    return [0.0] + ticks[::step]


def matrix_section(p: Profile) -> str:
    m = analysis.matrix(p)
    if m is None:
        return (
            "<section><h2>Communication matrix</h2><p>This log has no per-partner data "
            "(profile with --detail normal or full).</p></section>"
        )
    if m.bytes.sum() == 0 and m.counts.sum() == 0:
        return (
            "<section><h2>Communication matrix</h2><p>No point-to-point or one-sided "
            "traffic was recorded.</p></section>"
        )
    n = m.bytes.shape[0]
    size = 560
    cell = size / n
    labels = m.labels()
    # Rows and columns are labelled with rank numbers (a block's first rank), at round steps.
    first_rank = [i * m.block for i in range(n)]
    step = _nice_step(n, min(n, 16))
    ticks = list(range(0, n, step))
    longest = max(len(str(first_rank[k])) for k in ticks)
    left = int(longest * TEXT_PX) + 30  # room for the row labels and the axis title
    top = 20
    bottom = int(longest * TEXT_PX * 0.8) + 40  # rotated column labels and the axis title
    bar_x = left + size + 24
    groups = []
    for what, data, fmt, base in (
        ("bytes", m.bytes, units.size, 1024),
        ("messages", m.counts, lambda v: f"{int(v):,}", 10),
    ):
        vmax = float(data.max())
        tick_text = units.size_class if what == "bytes" else fmt
        body = []
        for i in range(n):
            for j in range(n):
                v = float(data[i, j])
                if v <= 0:
                    continue
                body.append(
                    f'<rect x="{left + j * cell:.2f}" y="{top + i * cell:.2f}" '
                    f'width="{max(cell, 0.6):.2f}" height="{max(cell, 0.6):.2f}" '
                    f'fill="{_heat(v, vmax)}"><title>{esc(labels[i])} &#8594; {esc(labels[j])}: '
                    f"{esc(fmt(v))}</title></rect>"
                )
        body.append(
            f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#999"/>'
        )
        for k in ticks:
            y = top + (k + 0.5) * cell
            x = left + (k + 0.5) * cell
            body.append(
                f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{first_rank[k]}</text>'
            )
            body.append(
                f'<text x="{x:.1f}" y="{top + size + 10}" text-anchor="end" '
                f'transform="rotate(-60 {x:.1f} {top + size + 10})">{first_rank[k]}</text>'
            )
        body.append(
            f'<text x="{left + size / 2}" y="{top + size + bottom - 8}" text-anchor="middle">'
            "receiver rank &#8594;</text>"
        )
        body.append(
            f'<text x="12" y="{top + size / 2}" text-anchor="middle" '
            f'transform="rotate(-90 12 {top + size / 2})">sender rank &#8594;</text>'
        )
        # Colour bar (logarithmic, as the cells), with ticks.
        for s in range(40):
            v = vmax ** (s / 39) if vmax > 1 else vmax * s / 39
            body.append(
                f'<rect x="{bar_x}" y="{top + size - (s + 1) * size / 40:.1f}" width="16" '
                f'height="{size / 40 + 0.5:.1f}" fill="{_heat(v, vmax)}"/>'
            )
        body.append(
            f'<rect x="{bar_x}" y="{top}" width="16" height="{size}" fill="none" stroke="#999"/>'
        )
        for v in _colour_ticks(vmax, base):
            f = math.log1p(v) / math.log1p(vmax) if vmax > 0 else 0
            y = top + size - f * size
            body.append(
                f'<line x1="{bar_x + 16}" x2="{bar_x + 21}" y1="{y:.1f}" y2="{y:.1f}" '
                'stroke="#333"/>'
            )
            body.append(f'<text x="{bar_x + 24}" y="{y + 4:.1f}">{esc(tick_text(int(v)))}</text>')
        body.append(f'<text x="{bar_x}" y="{top - 6}">max {esc(fmt(vmax))}</text>')
        display = "" if what == "bytes" else "display:none"
        groups.append(
            f'<div data-group="matrix" data-show="{what}" style="{display}">'
            + _svg(bar_x + 110, top + size + bottom, body, f"communication matrix ({what})")
            + "</div>"
        )
    block = (
        "one row/column per rank"
        if m.block == 1
        else f"each row/column is a block of {m.block} consecutive ranks"
    )
    return (
        "<section><h2>Communication matrix</h2>"
        '<button data-toggle="matrix" data-show="bytes" class="on">bytes</button>'
        '<button data-toggle="matrix" data-show="messages">messages</button>'
        + "".join(groups)
        + f'<div class="note">From {esc(m.source)}; {block}; logarithmic colour scale. '
        "Collectives are not included.</div></section>"
    )


def scaling_section(p: Profile, model=None) -> str:
    moving = [c for c in analysis.calls(p, include_posix=False) if c.bytes > 0 and c.time > 0]
    moving = moving[:8]
    if not moving:
        return ""
    series = []
    for c in moving:
        pts = [(b.avg_size, b.avg_time) for b in analysis.sizes(p, c.call) if b.avg_time > 0]
        pts = [(max(s, 1.0), t) for s, t in pts]
        if pts:
            series.append((c.call, pts))
    if not series:
        return ""
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    curves = []
    if model is not None:
        for call, _ in series:
            grid = [min(xs) * (max(xs) / min(xs)) ** (k / 40) for k in range(41)]
            pred = analysis.model_curve(model, call, grid, p.ranks)
            if pred:
                curves.append((call, list(zip(grid, pred, strict=True))))
                ys += [y for y in pred if y > 0]
    x_lo, x_hi = min(xs) / 1.5, max(xs) * 1.5
    y_lo, y_hi = min(ys) / 1.5, max(ys) * 1.5
    width, height, left, bottom, top = 760, 400, 70, 44, 14
    plot_w, plot_h = width - left - 20, height - bottom - top

    def px(x: float) -> float:
        return left + plot_w * (math.log10(x) - math.log10(x_lo)) / (
            math.log10(x_hi) - math.log10(x_lo)
        )

    def py(y: float) -> float:
        return (
            top
            + plot_h
            - plot_h * (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo))
        )

    body = ['<g class="grid">']
    for t in _byte_ticks(x_lo, x_hi):
        if x_lo <= t <= x_hi:
            body.append(f'<line x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{top}" y2="{top + plot_h}"/>')
            body.append(
                f'<text x="{px(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
                f"{esc(units.size_class(int(t)))}</text>"
            )
    for t in _log_ticks(y_lo, y_hi):
        if y_lo <= t <= y_hi:
            body.append(
                f'<line x1="{left}" x2="{left + plot_w}" y1="{py(t):.1f}" y2="{py(t):.1f}"/>'
            )
            body.append(
                f'<text x="{left - 6}" y="{py(t) + 4:.1f}" text-anchor="end">'
                f"{esc(units.seconds(t))}</text>"
            )
    body.append("</g>")
    colour = {call: SERIES[i % len(SERIES)] for i, (call, _) in enumerate(series)}
    for call, pts in curves:
        d = " ".join(
            f"{'M' if k == 0 else 'L'}{px(x):.1f},{py(y):.1f}"
            for k, (x, y) in enumerate(pts)
            if y > 0
        )
        body.append(
            f'<path d="{d}" fill="none" stroke="{colour[call]}" stroke-width="1.5" '
            f'stroke-dasharray="5,4"><title>{esc(call)}: machine model alpha + n*beta'
            "</title></path>"
        )
    for call, pts in series:
        for x, y in pts:
            body.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{colour[call]}" '
                f'fill-opacity=".8"><title>{esc(call)}: {esc(units.size(x))} per call, '
                f"{esc(units.seconds(y))} per call</title></circle>"
            )
    body.append(
        f'<text x="{left}" y="{height - 6}">bytes per call (log scale) &#8594;  '
        "mean time per call (log scale) &#8593;</text>"
    )
    svg = _svg(width, height, body, "time against message size")
    model_note = (
        "Dashed: the machine model's prediction (alpha + n&middot;beta for point-to-point, "
        "the collective formulas for collectives) at this run's rank count."
        if curves
        else "Give --model FILE (from petacomm netbench) to overlay the machine model."
    )
    return (
        "<section><h2>Time against message size</h2>"
        + _legend([c for c, _ in series], [colour[c] for c, _ in series])
        + svg
        + f'<div class="note">One point per size class: mean time of one call. {model_note}'
        "</div></section>"
    )


def page(p: Profile, model=None) -> str:
    body = [
        _header(p),
        "<main>",
        _warnings(p),
        rank_chart(p),
        region_section(p),
        calls_section(p, model),
        histogram_section(p),
        matrix_section(p),
        scaling_section(p, model),
        f'<p class="note">petacomm {esc(__version__)} &middot; profiler '
        f"{esc(p.profiler.get('version', '?'))} &middot; {esc(p.source)}</p>",
        "</main>",
    ]
    return _document(f"petacomm profile: {p.label}", "".join(body))


def comparison_page(c: Comparison) -> str:
    a, b = c.before, c.after
    ta, tb = analysis.totals(a), analysis.totals(b)
    rows = []
    for label, va, vb in c.totals():
        rows.append(
            f"<tr><td>{label}</td><td>{esc(units.seconds(va))}</td>"
            f"<td>{esc(units.seconds(vb))}</td><td>{relative_change(va, vb)}</td></tr>"
        )
    totals = (
        "<table><thead><tr><th></th><th>A</th><th>B</th><th>B vs A</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    deltas = c.calls[:20]
    width, row_h, left = 1100, 22, 220
    height = 10 + row_h * max(len(deltas), 1)
    span = max((abs(d.change) for d in deltas), default=1.0) or 1.0
    mid = left + (width - left - 160) / 2
    half = (width - left - 160) / 2
    body = [f'<line x1="{mid}" x2="{mid}" y1="0" y2="{height}" stroke="#999"/>']
    for i, d in enumerate(deltas):
        y = 5 + i * row_h
        w = half * abs(d.change) / span
        x = mid if d.change >= 0 else mid - w
        colour = COLOURS["MPI"] if d.change > 0 else COLOURS["LBST"]
        body.append(f'<text x="6" y="{y + 14}">{esc(d.name)}</text>')
        body.append(
            f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
            f'fill="{colour}"><title>{esc(d.name)}: {esc(units.seconds(d.a_time))} &#8594; '
            f"{esc(units.seconds(d.b_time))}</title></rect>"
        )
        body.append(
            f'<text x="{width - 150}" y="{y + 14}">{"+" if d.change >= 0 else "-"}'
            f"{esc(units.seconds(abs(d.change)))} ({relative_change(d.a_time, d.b_time)})</text>"
        )
    svg = _svg(width, height, body, "change per call")
    call_rows = "".join(
        f'<tr><td>{esc(d.name)}</td><td data-v="{d.a_time}">{esc(units.seconds(d.a_time))}</td>'
        f'<td data-v="{d.b_time}">{esc(units.seconds(d.b_time))}</td>'
        f'<td data-v="{d.change}">{relative_change(d.a_time, d.b_time)}</td>'
        f'<td data-v="{d.a_count}">{d.a_count:,}</td><td data-v="{d.b_count}">{d.b_count:,}</td>'
        f'<td data-v="{d.a_bytes}">{esc(units.size(d.a_bytes))}</td>'
        f'<td data-v="{d.b_bytes}">{esc(units.size(d.b_bytes))}</td></tr>'
        for d in c.calls
    )
    region_rows = "".join(
        f"<tr><td>{esc(r.name)}</td><td>{esc(units.seconds(r.a_time))}</td>"
        f"<td>{esc(units.seconds(r.b_time))}</td><td>{relative_change(r.a_time, r.b_time)}</td>"
        f"<td>{esc(units.seconds(r.a_mpi))}</td><td>{esc(units.seconds(r.b_mpi))}</td></tr>"
        for r in c.regions
    )
    content = (
        f'<header><h1>petacomm profile comparison</h1><div class="cmd">A: {esc(a.source)} '
        f"({esc(shlex.join(a.command))}, {ta.ranks} ranks)<br>B: {esc(b.source)} "
        f"({esc(shlex.join(b.command))}, {tb.ranks} ranks)</div></header><main>"
        f"<section><h2>Totals</h2>{totals}</section>"
        f"<section><h2>Calls: change of time (B - A), largest first</h2>{svg}"
        '<table class="sortable"><thead><tr><th>call</th><th>time A</th><th>time B</th>'
        "<th>change</th><th>count A</th><th>count B</th><th>bytes A</th><th>bytes B</th></tr>"
        f"</thead><tbody>{call_rows}</tbody></table></section>"
        '<section><h2>Regions (mean per rank)</h2><table class="sortable"><thead><tr>'
        "<th>region</th><th>wall A</th><th>wall B</th><th>change</th><th>MPI A</th>"
        f"<th>MPI B</th></tr></thead><tbody>{region_rows}</tbody></table></section></main>"
    )
    return _document("petacomm profile comparison", content)


def _document(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width"><title>{esc(title)}</title>'
        f"<style>{CSS}</style></head><body>{body}<script>{JS}</script></body></html>\n"
    )
