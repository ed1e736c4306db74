"""`petacomm report`: terminal summary, the self-contained HTML report (rendered in headless
Chromium), comparison of two logs, the machine-model overlay, and clear errors on bad logs."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from expected import pattern

from conftest import petacomm, profile_run
from petacomm.errors import PetacommError
from petacomm.profile import load
from prerequisites import require

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def logs(programs, tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("logs")
    a, b = d / "a.json", d / "b.json"
    profile_run(a, 3, [str(programs / "prof_pattern")])
    profile_run(b, 4, [str(programs / "prof_pattern")])
    return a, b


def test_terminal_report(logs):
    out = petacomm("report", str(logs[0]), "--all").stdout
    assert max(len(line) for line in out.splitlines()[1:]) <= 100  # line 0: the log's path
    assert "[complete]" in out and "ranks 3 on 1 node" in out
    for section in ("regions (mean per rank", "calls by time", "heaviest partner pairs"):
        assert section in out
    for name in ("ring", "collectives", "nonblocking", "MPI_Isend", "MPI_Neighbor_alltoall"):
        assert name in out
    assert re.search(r"MPI_Isend\s+\S+ \S*s", out)  # times carry units


# Run in the page by the tests (not part of reports): every text of every drawing inside its
# drawing, and no two texts overlapping; the result in data-layout.
LAYOUT_CHECK = """<script>(function(){var problems=[];
document.querySelectorAll('svg').forEach(function(svg){var box=svg.getBoundingClientRect();
if(box.width===0)return;var texts=Array.prototype.slice.call(svg.querySelectorAll('text'));
var r=texts.map(function(t){return t.getBoundingClientRect();});
r.forEach(function(a,i){if(a.width===0)return;if(a.left<box.left-1||a.right>box.right+1||
a.top<box.top-1||a.bottom>box.bottom+1)problems.push('clipped: '+texts[i].textContent);});
for(var i=0;i<r.length;++i)for(var j=i+1;j<r.length;++j){var a=r[i],b=r[j];
var w=Math.min(a.right,b.right)-Math.max(a.left,b.left);
var h=Math.min(a.bottom,b.bottom)-Math.max(a.top,b.top);
if(w>1&&h>1)problems.push('overlap: '+texts[i].textContent+' / '+texts[j].textContent);}});
document.body.dataset.layout=JSON.stringify(problems);})();</script>"""


def render(html_path: Path, tmp_path: Path) -> tuple[list[str], Path]:
    """Opens the report in headless Chromium: (layout problems, screenshot). Fails on any
    console error, or when the page's script did not run to its end."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    require(chromium, "headless Chromium not installed (apt-get install chromium)")
    profile_dir = tmp_path / "chromium-profile"
    base = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile_dir}", "--window-size=1300,2400",
        "--enable-logging=stderr", "--v=0",
    ]  # fmt: skip
    shot = tmp_path / (html_path.stem + ".png")
    done = subprocess.run(
        [*base, f"--screenshot={shot}", html_path.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert shot.exists() and shot.stat().st_size > 20000, done.stderr[-2000:]
    checked = html_path.with_name(html_path.stem + "-checked.html")
    checked.write_text(html_path.read_text().replace("</body>", LAYOUT_CHECK + "</body>"))
    done = subprocess.run(
        [*base, "--virtual-time-budget=5000", "--dump-dom", checked.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console
    assert 'data-ready="1"' in done.stdout, "the report's script did not run to its end"
    match = re.search(r'data-layout="([^"]*)"', done.stdout)
    assert match, done.stdout[-2000:]
    return json.loads(html.unescape(match.group(1))), shot


def test_html_report_is_self_contained_and_renders(logs, tmp_path):
    html_path = tmp_path / "report.html"
    model_path = tmp_path / "model.json"
    from petacomm.model import default_model, save

    save(default_model(), model_path)
    petacomm("report", str(logs[0]), "-o", str(html_path), "--model", str(model_path))
    text = html_path.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text and "<link" not in text and "src=" not in text
    for title in (
        "Time per rank",
        "Regions",
        "Calls by time",
        "Message sizes per call",
        "Communication matrix",
        "Time against message size",
    ):
        assert title in text
    assert "machine model alpha + n*beta" in text  # the model overlay was drawn
    problems, _ = render(html_path, tmp_path)
    assert problems == []


def test_html_report_of_thousands_of_ranks_stays_readable(tmp_path):
    """1,024 ranks, 20 message-size classes and a long region name (a log made up by
    synthetic.py): rank numbers on the axes, exact byte labels, colour-bar ticks, and no
    label clipped or overlapping another."""
    from synthetic import write_log

    log = write_log(tmp_path / "big.json", 1024, classes=20, region="x" * 70)
    html_path = tmp_path / "big.html"
    out = petacomm("report", str(log), "-o", str(html_path)).stdout
    assert max(len(line) for line in out.splitlines()) <= 100
    text = html_path.read_text()
    # Axis and colour-bar labels: exact powers of two, never "1000 B" or "9.8 KiB".
    labels = re.findall(r">(\d+(?:\.\d+)?) (B|KiB|MiB|GiB)</text>", text)
    assert len(labels) > 10 and ("1", "KiB") in labels
    scale = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    for number, unit in labels:
        value = float(number) * scale[unit]
        assert value == 0 or value.is_integer() and int(value) & (int(value) - 1) == 0, number
    for rank in (0, 200, 400, 1000):  # rank numbers on the time-per-rank and matrix axes
        assert f">{rank}</text>" in text
    problems, shot = render(html_path, tmp_path)
    assert problems == []


def test_comparison_of_two_runs(logs, tmp_path):
    out = petacomm("report", str(logs[0]), str(logs[1]), "-o", str(tmp_path / "cmp.html"))
    assert "calls (time summed over ranks), largest change first" in out.stdout
    assert "regions (mean wall and MPI per rank)" in out.stdout
    assert re.search(r"MPI_Isend .* 12 -> 16", out.stdout)  # 4 per rank: 3 ranks -> 4 ranks
    assert "Calls: change of time" in (tmp_path / "cmp.html").read_text()


def test_detail_summary_has_no_per_partner_data(programs, tmp_path):
    log = tmp_path / "summary.json"
    done = profile_run(log, 2, [str(programs / "prof_pattern")], "--detail", "summary")
    profile = load(log)
    assert profile.peer_rows is None and profile.call_rank_rows is None
    # Sizes are power-of-two classes, counts and bytes exact (reference: expected.pattern,
    # classed here by hand).
    want_calls, _ = pattern(2, "one-sided part skipped" not in done.stdout)
    classed = {}
    for (region, call, size), (count, nbytes) in want_calls.items():
        lo = 0 if size == 0 else 1 << (size.bit_length() - 1)
        have = classed.setdefault((region, call, lo), [0, 0])
        have[0] += count
        have[1] += nbytes
    got = {(c["region"], c["call"], c["size"]): [c["count"], c["bytes"]] for c in profile.call_rows}
    assert got == classed
    for c in profile.call_rows:
        assert c["size_max"] == (0 if c["size"] == 0 else 2 * c["size"] - 1)
    out = petacomm("report", str(log), "-o", str(tmp_path / "s.html")).stdout
    assert "calls by time" in out


def test_bad_logs_are_refused_clearly(logs, tmp_path):
    data = json.loads(logs[0].read_text())
    newer = dict(data, schema_version=99)
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    with pytest.raises(PetacommError, match="newer petacomm"):
        load(tmp_path / "newer.json")
    broken = dict(data)
    del broken["rank_summary"]
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(PetacommError, match="rank_summary"):
        load(tmp_path / "broken.json")
    (tmp_path / "cut.json").write_text(logs[0].read_text()[:200])
    with pytest.raises(PetacommError, match="not JSON"):
        load(tmp_path / "cut.json")
    done = petacomm("report", str(tmp_path / "missing.json"), check=False)
    assert done.returncode == 2 and "no such profile log" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_profile_command_errors(tmp_path):
    done = petacomm("profile", "--", check=False)
    assert done.returncode == 2 and "no command given" in done.stderr
    done = petacomm("profile", "-o", str(tmp_path / "no" / "dir.json"), "--", "true", check=False)
    assert done.returncode == 2 and "does not exist" in done.stderr


# ---- what the reports show, from hand-built profiles (no run) -----------------------------
S = 10**9  # ns per second
KINDS = {"MPI_Send": "send", "MPI_Recv": "recv", "MPI_Allreduce": "coll", "write": "posix",
         "MPI_Alltoall": "coll", "MPI_Bcast": "coll", "MPI_Barrier": "coll"}  # fmt: skip
EXACT = {"rel": 1e-12, "abs": 0}


def hand_profile(ranks=3, rank_rows=(), region_rows=(), call_rows=(), call_rank_rows=None,
                 peer_rows=None):  # fmt: skip
    from petacomm.profile.log import Profile

    def table(columns, rows):
        return [dict(zip(columns, row, strict=True)) for row in rows]

    return Profile(
        source=Path("hand.json"), complete=True, command=[], ranks=ranks, nodes=0,
        mpi_library="", thread_level="", profiler={}, call_kinds=KINDS, wall_ns=0,
        rank_rows=table(("rank", "host", "wall_ns", "mpi_ns", "io_ns", "rss_kib"), rank_rows),
        region_rows=[dict(r) for r in region_rows],
        call_rows=table(("region", "call", "size", "size_max", "count", "bytes", "time_ns",
                         "min_ns", "max_ns"), call_rows),
        call_rank_rows=None if call_rank_rows is None else table(
            ("rank", "call", "count", "bytes", "time_ns"), call_rank_rows),
        peer_rows=None if peer_rows is None else table(
            ("rank", "call", "peer", "count", "bytes"), peer_rows),
    )  # fmt: skip


RANKS = [(2, "n1", 6 * S, 6 * S, 1 * S, 200), (0, "n0", 10 * S, 2 * S, 1 * S, 100),
         (1, "n0", 8 * S, 4 * S, 0, 300)]  # fmt: skip
REGIONS = [
    {"rank": 0, "region": "(program)", "parent": None, "entries": 1, "wall_ns": 10 * S,
     "mpi_ns": 2 * S, "io_ns": S},
    {"rank": 0, "region": "solve", "parent": "(program)", "entries": 3, "wall_ns": 4 * S,
     "mpi_ns": S, "io_ns": 0, "excl_mpi_ns": S // 2, "lbst_ns": 2 * S},
    {"rank": 1, "region": "solve", "parent": "(program)", "entries": 5, "wall_ns": 6 * S,
     "mpi_ns": 3 * S, "io_ns": S},
]  # fmt: skip
CALLS = [
    ("solve", "MPI_Send", 1024, 2047, 2, 3000, 2000, 900, 1100),
    ("solve", "MPI_Send", 8, 8, 4, 32, 400, 50, 150),
    ("(program)", "MPI_Send", 8, 8, 1, 8, 0, 0, 0),  # untimed: no minimum of 0
    ("(program)", "MPI_Allreduce", 16, 16, 3, 48, 3000, 800, 1200),
    ("solve", "write", 100, 100, 1, 100, 5000, 5000, 5000),
]
CALL_RANKS = [(0, "MPI_Send", 3, 24, 1000), (1, "MPI_Send", 4, 3016, 1400),
              (0, "MPI_Allreduce", 1, 16, 2000), (1, "MPI_Allreduce", 1, 16, 500),
              (2, "MPI_Allreduce", 1, 16, 500)]  # fmt: skip


def test_totals_and_regions_by_hand():
    from petacomm.profile import analysis

    p = hand_profile(rank_rows=RANKS, region_rows=REGIONS)
    assert [t.rank for t in analysis.rank_times(p)] == [0, 1, 2]
    t = analysis.totals(p)
    # calc per rank: 10-2-1 = 7, 8-4-0 = 4, 6-6-1 < 0 -> 0; two hosts; wall the slowest rank.
    assert (t.ranks, t.ranks_reported, t.nodes, t.rss_max_kib) == (3, 3, 2, 300)
    assert [t.wall, t.mpi, t.io, t.calc, t.cpu] == pytest.approx([10, 12, 2, 11, 24], **EXACT)
    # Imbalance (max - mean) / max: calc (7 - 11/3) / 7, MPI (6 - 4) / 6.
    assert t.calc_imbalance == pytest.approx(100 * (7 - 11 / 3) / 7, **EXACT)
    assert t.mpi_imbalance == pytest.approx(100 / 3, **EXACT)
    # Shares of the summed wall (24 s).
    assert [t.mpi_percent, t.io_percent, t.calc_percent] == pytest.approx(
        [50, 100 * 2 / 24, 100 * 11 / 24], **EXACT
    )
    program, solve = analysis.regions(p)
    assert (program.name, program.ranks, solve.name, solve.parent) == (
        "(program)", 1, "solve", "(program)")  # fmt: skip
    # solve on ranks 0 and 1: walls 4 and 6, MPI 1 and 3, I/O 0 and 1, calc 3 and 2; rank 1
    # records no exclusive MPI time (its inclusive 3 s counts) and no load-balance time.
    assert solve.entries == 8 and solve.ranks == 2
    got = [solve.wall_mean, solve.wall_max, solve.mpi_mean, solve.io_mean, solve.calc_mean,
           solve.lbst_mean, solve.excl_mpi_mean, solve.imbalance]  # fmt: skip
    assert got == pytest.approx([5, 6, 2, 0.5, 2.5, 1, 1.75, 100 / 6], **EXACT)


def test_calls_and_sizes_by_hand():
    from petacomm.profile import analysis

    p = hand_profile(call_rows=CALLS, call_rank_rows=CALL_RANKS)
    calls = analysis.calls(p)
    assert [c.call for c in calls] == ["write", "MPI_Allreduce", "MPI_Send"]  # by time
    send = calls[2]
    assert (send.kind, send.count, send.bytes, send.ranks) == ("send", 7, 3040, 2)
    got = [send.time, send.min_call, send.max_call, send.rank_time_min, send.rank_time_max,
           send.avg_time, send.avg_bytes]  # fmt: skip
    want = [2400e-9, 50e-9, 1100e-9, 1000e-9, 1400e-9, 2400e-9 / 7, 3040 / 7]
    assert got == pytest.approx(want, **EXACT)
    allreduce = calls[1]
    assert allreduce.ranks == 3
    assert [allreduce.rank_time_min, allreduce.rank_time_max] == pytest.approx(
        [500e-9, 2000e-9], **EXACT
    )
    assert [c.call for c in analysis.calls(p, include_posix=False)] == [
        "MPI_Allreduce", "MPI_Send"]  # fmt: skip
    # One region: its rows only, and no per-rank times (those are over the whole run).
    in_solve = {c.call: c for c in analysis.calls(p, region="solve")}
    assert sorted(in_solve) == ["MPI_Send", "write"]
    assert (in_solve["MPI_Send"].count, in_solve["MPI_Send"].ranks) == (6, 0)
    # Size classes in size order; 8 B twice (two regions) summed.
    bins = analysis.sizes(p, "MPI_Send")
    assert [(b.size, b.size_max, b.count, b.bytes) for b in bins] == [
        (8, 8, 5, 40), (1024, 2047, 2, 3000)]  # fmt: skip
    assert [b.time for b in bins] == pytest.approx([400e-9, 2000e-9], **EXACT)
    assert analysis.SizeBin(64, 127, 0, 0, 0.0).avg_size == 64.0  # no call: its lower bound
    # Powers of two: 0, 2-3 (sizes 2 and 3), 8-15, 1024-2047.
    histogram = analysis.log2_histogram(
        [analysis.SizeBin(s, s, c, s * c, 0.0) for s, c in ((8, 5), (3, 2), (0, 1), (2, 1))]
        + [analysis.SizeBin(1024, 2047, 2, 3000, 0.0)]
    )
    assert histogram == [(0, 1, 0), (2, 3, 8), (8, 5, 40), (1024, 2, 3000)]


def test_matrix_and_partners_by_hand():
    from petacomm.profile import analysis

    peers = [(0, "MPI_Send", 1, 2, 100), (1, "MPI_Send", 2, 1, 50), (2, "MPI_Send", 0, 3, 30),
             (0, "MPI_Recv", 2, 3, 30), (0, "MPI_Send", -1, 1, 8), (1, "MPI_Send", 7, 1, 9),
             (0, "MPI_Send", -2, 1, 0)]  # fmt: skip
    p = hand_profile(peer_rows=peers)
    m = analysis.matrix(p)
    # Sends only (receives are the same bytes seen from the other side); partners outside
    # 0..2 (none, a null process, an out-of-range rank) left out.
    assert m.bytes.tolist() == [[0, 100, 0], [0, 0, 50], [30, 0, 0]]
    assert m.counts.tolist() == [[0, 2, 0], [0, 0, 1], [3, 0, 0]]
    assert (m.block, m.labels(), m.source) == (1, ["0", "1", "2"], "sends, puts and accumulates")
    # At most 2 cells a side: blocks of ceil(3 / 2) = 2 ranks, {0, 1} and {2}.
    m = analysis.matrix(p, max_cells=2)
    assert m.bytes.tolist() == [[100, 50], [30, 0]] and m.labels() == ["0-1", "2-2"]
    # Receives only: rank 0 received 30 B from rank 2, so 2 -> 0.
    m = analysis.matrix(hand_profile(peer_rows=[(0, "MPI_Recv", 2, 3, 30)]))
    assert m.bytes.tolist() == [[0, 0, 0], [0, 0, 0], [30, 0, 0]]
    assert m.source == "receives (no sends recorded)"
    totals = analysis.peer_totals(p)
    assert totals[(0, "MPI_Send", 1)] == (2, 100) and totals[(0, "MPI_Send", -2)] == (1, 0)
    assert (0, "MPI_Send", -1) not in totals


def test_model_curve_sizes_and_ranks():
    from petacomm.profile import analysis

    class Model:  # seconds that spell the arguments: p * 1000 + size
        def predict(self, op, size, p):
            if op == "bcast":
                raise ValueError("no bcast")
            return p * 1000 + size

    # A send is a ping-pong of 2 ranks; an all-to-all's size is the log's bytes per call
    # over the ranks (bytes to each rank).
    assert analysis.model_curve(Model(), "MPI_Send", [100], 8) == [2100.0]
    assert analysis.model_curve(Model(), "MPI_Allreduce", [100], 8) == [8100.0]
    assert analysis.model_curve(Model(), "MPI_Alltoall", [400, 800], 4) == [4100.0, 4200.0]
    assert analysis.model_curve(Model(), "MPI_Bcast", [1], 4) is None  # not in the model
    assert analysis.model_curve(Model(), "MPI_Barrier", [1], 4) is None  # no operation


def test_comparison_by_hand():
    from petacomm.profile.compare import compare, relative_change

    def run(walls, mpi, calls, regions):
        return hand_profile(
            ranks=2,
            rank_rows=[(r, "n0", w * S, int(mpi * S), 0, 1) for r, w in enumerate(walls)],
            region_rows=[{"rank": r, "region": name, "parent": None, "entries": 1,
                          "wall_ns": w * S, "mpi_ns": m * S, "io_ns": 0}
                         for name, rows in regions for r, (w, m) in enumerate(rows)],
            call_rows=[("(program)", c, 8, 8, n, 8 * n, t, t, t) for c, n, t in calls],
        )  # fmt: skip

    before = run([4, 2], 1, [("MPI_Send", 2, 1000), ("MPI_Bcast", 1, 5000)],
                 [("(program)", [(4, 1), (2, 1)]), ("solve", [(3, 1), (1, 0)])])  # fmt: skip
    after = run([5, 5], 1.5, [("MPI_Send", 3, 4000), ("MPI_Barrier", 1, 500)],
                [("(program)", [(5, 2), (5, 2)]), ("io", [(2, 0), (2, 0)])])  # fmt: skip
    c = compare(before, after)
    # Largest change first, whichever its sign: Bcast -5 us, Send +3 us, Barrier +0.5 us.
    assert [d.name for d in c.calls] == ["MPI_Bcast", "MPI_Send", "MPI_Barrier"]
    bcast, send, barrier = c.calls
    assert (send.a_count, send.b_count, send.a_bytes, send.b_bytes) == (2, 3, 16, 24)
    assert [send.a_time, send.b_time, send.change] == pytest.approx([1e-6, 4e-6, 3e-6], **EXACT)
    assert bcast.change == pytest.approx(-5e-6, **EXACT) and barrier.a_count == 0
    # Regions: A's in order, then B's new ones; mean wall and MPI per rank.
    assert [(r.name, r.a_time, r.b_time, r.a_mpi, r.b_mpi) for r in c.regions] == [
        ("(program)", 3.0, 5.0, 1.0, 2.0), ("solve", 2.0, 0.0, 0.5, 0.0),
        ("io", 0.0, 2.0, 0.0, 0.0)]  # fmt: skip
    # Wall of the slowest rank; MPI (1 s, then 1.5 s per rank) and calc summed over ranks.
    assert c.totals() == [
        ("wall (slowest rank)", 4.0, 5.0),
        ("MPI (sum over ranks)", 2.0, 3.0),
        ("I/O (sum over ranks)", 0.0, 0.0),
        ("CALC (sum over ranks)", 4.0, 7.0),
    ]
    assert [relative_change(a, b) for a, b in ((0, 0), (0, 1), (1, 0), (2, 3), (4, 3), (1, 1))] == [
        "=", "new", "gone", "+50.0 %", "-25.0 %", "+0.0 %"]  # fmt: skip
