"""`petacomm report`: terminal summary, the self-contained HTML report (rendered in headless
Chromium), comparison of two logs, the machine-model overlay, and clear errors on bad logs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

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
    assert "[complete]" in out and "ranks 3 on 1 node" in out
    for section in ("regions (mean per rank", "calls by time", "heaviest partner pairs"):
        assert section in out
    for name in ("ring", "collectives", "nonblocking", "MPI_Isend", "MPI_Neighbor_alltoall"):
        assert name in out
    assert re.search(r"MPI_Isend\s+\S+ \S*s", out)  # times carry units


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
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    require(chromium, "headless Chromium not installed (apt-get install chromium)")
    profile_dir = tempfile.mkdtemp()
    shot = tmp_path / "report.png"
    base = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile_dir}",
    ]  # fmt: skip
    done = subprocess.run(
        [*base, "--window-size=1300,2000", f"--screenshot={shot}", html_path.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert shot.exists() and shot.stat().st_size > 20000, done.stderr[-2000:]
    dom = subprocess.run(
        [*base, "--dump-dom", html_path.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    assert dom.count("<svg") >= 6 and "<rect" in dom
    shutil.rmtree(profile_dir, ignore_errors=True)


def test_comparison_of_two_runs(logs, tmp_path):
    out = petacomm("report", str(logs[0]), str(logs[1]), "-o", str(tmp_path / "cmp.html"))
    assert "calls (time summed over ranks), largest change first" in out.stdout
    assert "regions (mean wall and MPI per rank)" in out.stdout
    assert re.search(r"MPI_Isend .* 12 -> 16", out.stdout)  # 4 per rank: 3 ranks -> 4 ranks
    assert "Calls: change of time" in (tmp_path / "cmp.html").read_text()


def test_detail_summary_has_no_per_partner_data(programs, tmp_path):
    log = tmp_path / "summary.json"
    profile_run(log, 2, [str(programs / "prof_pattern")], "--detail", "summary")
    profile = load(log)
    assert profile.peer_rows is None and profile.call_rank_rows is None
    assert profile.call_rows
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
