"""Call sites (--callsites DEPTH) and the MPI_Pcontrol snapshot (3) and reset (4) levels.

The reference is the source of native/tests/prof/prof_callsites.cpp: its SITE and CALLER
markers give the lines each call must be attributed to (the program is built with -g -O0),
and its comments the counts per rank.
"""

import re
from pathlib import Path

import pytest

from conftest import petacomm, profile_run
from petacomm.profile import callsites
from petacomm.profile.log import load

pytestmark = pytest.mark.mpi

SOURCE = Path(__file__).resolve().parents[2] / "native" / "tests" / "prof" / "prof_callsites.cpp"


def markers() -> dict[str, int]:
    """SITE:x / CALLER:x marker -> its line number in the source."""
    found = {}
    for number, line in enumerate(SOURCE.read_text().splitlines(), start=1):
        for kind, name in re.findall(r"// (SITE|CALLER):(\w+)", line):
            found[f"{kind}:{name}"] = number
    return found


def site_table(profile) -> dict[tuple, int]:
    """(call, (file name, line) of each frame, innermost first) -> count."""
    out = {}
    for s in callsites.sites(profile):
        key = (s.call, tuple((Path(f.file).name, f.line) for f in s.frames))
        out[key] = out.get(key, 0) + s.count
    return out


def at(*names: str) -> tuple:
    lines = markers()
    return tuple((SOURCE.name, lines[n]) for n in names)


@pytest.mark.parametrize("ranks", [1, 3])
def test_call_sites_are_the_callers_lines(ranks, programs, tmp_path):
    log = tmp_path / "sites.json"
    profile_run(log, ranks, [str(programs / "prof_callsites")], "--callsites", "2")
    snap = load(tmp_path / "sites.snapshot-1.json")
    assert snap.snapshot == 1 and snap.callsite_depth == 2
    main_line = {
        # main's calls of post_and_wait and reduce_sum: the lines naming them
        name: n
        for n, text in enumerate(SOURCE.read_text().splitlines(), start=1)
        for name in ("post_and_wait", "reduce_sum")
        if f"sites::{name}" in text and "int main" not in text and text.startswith("  sites::")
    }
    want = {
        ("MPI_Sendrecv", at("SITE:sendrecv", "CALLER:a")): 3 * ranks,
        ("MPI_Sendrecv", at("SITE:sendrecv", "CALLER:b")): 2 * ranks,
        # non-blocking calls belong to the line that posted them, not to the MPI_Waitall
        ("MPI_Irecv", at("SITE:irecv") + ((SOURCE.name, main_line["post_and_wait"]),)): ranks,
        ("MPI_Isend", at("SITE:isend") + ((SOURCE.name, main_line["post_and_wait"]),)): ranks,
        ("MPI_Waitall", at("SITE:waitall") + ((SOURCE.name, main_line["post_and_wait"]),)): ranks,
        ("MPI_Allreduce", at("SITE:allreduce") + ((SOURCE.name, main_line["reduce_sum"]),)): ranks,
    }
    assert site_table(snap) == want
    # Every frame is in the program (none in the profiler), the C++ name demangled.
    sites = callsites.sites(snap)
    assert all(Path(f.module).name == "prof_callsites" for s in sites for f in s.frames)
    assert any("reduce_sum<double>" in s.frames[0].function for s in sites)
    # After MPI_Pcontrol(4), only the last phase_b is in the final log: sites and table.
    final = load(log)
    assert site_table(final) == {("MPI_Sendrecv", at("SITE:sendrecv", "CALLER:b")): 2 * ranks}
    counts = {c["call"]: c["count"] for c in final.call_rows}
    assert counts == {"MPI_Sendrecv": 2 * ranks}
    snap_sendrecv = sum(c["count"] for c in snap.call_rows if c["call"] == "MPI_Sendrecv")
    assert snap_sendrecv == 5 * ranks
    # The report names file:line:function.
    out = petacomm("report", str(tmp_path / "sites.snapshot-1.json")).stdout
    line = markers()["SITE:sendrecv"]
    assert f"at {SOURCE.name}:{line}:sites::exchange(int, int)" in out
    assert f"from {SOURCE.name}:{markers()['CALLER:a']}:sites::phase_a(int, int)" in out


def test_depth_one_and_threshold(programs, tmp_path):
    log = tmp_path / "one.json"
    profile_run(log, 1, [str(programs / "prof_callsites")], "--callsites", "1")
    snap = load(tmp_path / "one.snapshot-1.json")
    table = site_table(snap)
    # One frame: both callers of exchange() are one site.
    assert table[("MPI_Sendrecv", at("SITE:sendrecv"))] == 5
    assert all(len(frames) == 1 for _, frames in table)
    # A threshold of 100 % shows no site but says how many are hidden.
    out = petacomm(
        "report", str(tmp_path / "one.snapshot-1.json"), "--callsite-threshold", "100"
    ).stdout
    assert re.search(rf"\.\.\. {len(table)} more sites below 100 %", out)
    bad = petacomm("report", str(log), "--callsite-threshold", "101", check=False)
    assert bad.returncode == 2 and "--callsite-threshold" in bad.stderr


def test_no_call_sites_by_default(programs, tmp_path):
    log = tmp_path / "off.json"
    profile_run(log, 1, [str(programs / "prof_callsites")])
    profile = load(log)
    assert profile.callsite_rows is None and profile.callsite_depth == 0
    assert "call sites" not in petacomm("report", str(log)).stdout
