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
