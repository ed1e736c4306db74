"""petacomm netbench end to end: runs at several rank counts, and every error path."""

import json
import os
import stat
import subprocess
import sys

import jsonschema
import pytest

from mpi_harness import mpi_test_env
from petacomm.model import load
from petacomm.model.machine import schema

QUICK = ["-m", "8:64K", "-x", "1", "-i", "5", "-r", "3"]


def petacomm(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "petacomm.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env=env if env is not None else mpi_test_env(),
    )


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 7, 8])
def test_netbench_runs_and_writes_valid_model(tmp_path, ranks):
    out = tmp_path / "model.json"
    done = petacomm("netbench", "-n", str(ranks), *QUICK, "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --quiet: no progress
    assert max(len(line) for line in done.stdout.splitlines()[1:]) <= 100
    data = json.loads(out.read_text())
    jsonschema.validate(data, schema())
    ops = set(data["operations"])
    if ranks > 1:
        assert "pingpong.intra" in ops
        assert "Hockney fits" in done.stdout and "alpha (µs)" in done.stdout
    assert {"allreduce", "allgather", "alltoall", "alltoallv", "bcast"} <= ops
    assert data["machine"]["ranks"] == ranks
    model = load(out)
    assert model.predict("allreduce", 4096, ranks) > 0
    # The fit table shows every piece in the units its header gives.
    for name, op in data["operations"].items():
        rows = [line.split() for line in done.stdout.splitlines() if line.startswith(name + " ")]
        assert len(rows) == len(op["pieces"])
        for row, piece in zip(rows, op["pieces"], strict=True):
            assert float(row[-4]) == pytest.approx(piece["alpha_s"] * 1e6, abs=6e-4)  # µs
            if piece["beta_s_per_byte"] > 0:
                shown = float(row[-3])
                assert shown == pytest.approx(1e-9 / piece["beta_s_per_byte"], abs=6e-4)


@pytest.mark.mpi
def test_fit_table_columns_stay_apart_for_any_bandwidth(tmp_path):
    # On one rank a broadcast costs the same at every size: its fitted beta can be a tiny
    # positive number, whose 1/beta (1e13 GB/s) is wider than its column. CI saw that row
    # run into its alpha ("0.0211000000000000.000"), so the table lost a column.
    from petacomm.model.netbench import format_report

    out = tmp_path / "model.json"
    done = petacomm("netbench", "-n", "1", *QUICK, "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    piece = data["operations"]["bcast"]["pieces"][0]
    piece["beta_s_per_byte"] = 1e-22
    out.write_text(json.dumps(data))
    model = load(out)
    rows = [line.split() for line in format_report(model).splitlines() if line.startswith("bcast ")]
    assert rows and all(len(row) == 11 for row in rows), rows
    assert float(rows[0][-4]) == pytest.approx(piece["alpha_s"] * 1e6, abs=6e-4)
    assert float(rows[0][-3]) == pytest.approx(1e-9 / 1e-22, rel=1e-9)


@pytest.mark.mpi
def test_map_after_netbench_costs_each_message_with_its_own_piece(tmp_path):
    # After a real netbench run, an 8 B message must cost the small-message fit piece (the
    # latency, microseconds), not the 1 MiB piece's intercept.
    model_file = tmp_path / "model.json"
    done = petacomm("netbench", "-n", "2", *QUICK, "--ops", "pingpong", "-o", str(model_file))
    assert done.returncode == 0, done.stderr
    pieces = json.loads(model_file.read_text())["operations"]["pingpong.intra"]["pieces"]
    small, largest = pieces[0], pieces[-1]  # the piece covering 8 B, the asymptotic one
    assert small["from_bytes"] == 8
    mapped = petacomm(
        "map",
        "--network",
        "torus:2",
        "--pattern",
        "ranks 2; ring 8",
        "--routing",
        "dor",
        "--model",
        str(model_file),
        "--json",
    )
    assert mapped.returncode == 0, mapped.stderr
    doc = json.loads(mapped.stdout)
    # Each rank sends one 8 B message over its own link: alpha + 8 beta of the small piece,
    # plus 8 B on the busiest link at the largest messages' per-byte time.
    expected = small["alpha_s"] + 8 * small["beta_s_per_byte"] + 8 * largest["beta_s_per_byte"]
    assert doc["ranking"][0]["predicted_time_s"] == pytest.approx(expected, rel=1e-9)
    assert doc["cost"]["pieces"][0]["alpha_s"] == pieces[0]["alpha_s"]


@pytest.mark.mpi
def test_plot_and_json_output(tmp_path):
    out, plot = tmp_path / "m.json", tmp_path / "m.png"
    done = petacomm(
        "netbench",
        "-n",
        "2",
        *QUICK,
        "--ops",
        "pingpong,allreduce",
        "-o",
        str(out),
        "--plot",
        str(plot),
        "--json",
        env=mpi_test_env({"PETACOMM_PROGRESS": "always"}),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["operations"].keys() == {"pingpong.intra", "allreduce"}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Progress on standard error (forced on: this run is shorter than the display's delay),
    # standard output is the JSON alone. 8 B..64 KiB is 14 sizes for each of 2 series.
    progress = [line for line in done.stderr.splitlines() if line.startswith("netbench: ")]
    assert progress and progress[-1].startswith("netbench: sizes measured 28/28"), done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "0"], "-n/--ranks: must be a positive integer, got '0'"),
        (["-n", "four"], "-n/--ranks: must be a positive integer, got 'four'"),
        (["-m", "64:8"], "-m: need 0 < MIN <= MAX, got '64:8'"),
        (["-m", "8-64"], "-m: expected MIN:MAX"),
        (["-m", "8:lots"], "-m: not a byte size: 'lots'"),
        (["-m", "8:2G"], "-m: MAX must be at most 1 GiB"),
        (["-i", "0"], "-i: must be a positive integer"),
        (["--ops", "pingpong,allsum"], "--ops: unknown operation 'allsum'"),
    ],
)
def test_argument_errors_are_one_line(args, message):
    done = petacomm("netbench", *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_unwritable_output_fails_before_running(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: permissions do not stop writes")
        done = petacomm("netbench", "-o", str(locked / "m.json"))
    finally:
        locked.chmod(stat.S_IRWXU)
    assert done.returncode == 2 and "--output: cannot write" in done.stderr


def test_output_that_is_a_directory(tmp_path):
    done = petacomm("netbench", "-o", str(tmp_path))
    assert done.returncode == 2 and "is a directory" in done.stderr


def test_output_under_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    done = petacomm("netbench", "-n", "1", *QUICK, "-o", str(blocker / "m.json"))
    assert done.returncode == 2 and "--output: cannot write" in done.stderr
    assert blocker.read_text() == "keep me"


def test_no_mpiexec(tmp_path):
    env = mpi_test_env({"PETACOMM_MPIEXEC": str(tmp_path / "no-such-mpiexec")})
    done = petacomm("netbench", "-o", str(tmp_path / "m.json"), env=env)
    assert done.returncode == 2
    # the variable is named (it said "mpiexec:", as if an option had been given)
    assert "PETACOMM_MPIEXEC: " in done.stderr and "not found" in done.stderr
    assert not (tmp_path / "m.json").exists()


def test_root_without_permission_variables_is_explained(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only meaningful as root")
    env = {k: v for k, v in mpi_test_env().items() if not k.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
    done = petacomm("netbench", "-o", str(tmp_path / "m.json"), env=env)
    assert done.returncode == 2 and "OMPI_ALLOW_RUN_AS_ROOT" in done.stderr


def test_refit_from_raw_and_bad_raw(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text('{"tool": "something else"}')
    done = petacomm("netbench", "--raw", str(raw), "-o", str(tmp_path / "m.json"))
    assert done.returncode == 2 and "is not petacomm-netbench output" in done.stderr


def test_machine_model_with_wrong_version_is_refused_by_consumers(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps(
            {
                "schema": "petacomm.machine-model",
                "schema_version": 0,
                "created": "",
                "source": "",
                "machine": {},
                "operations": {},
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", f"import petacomm.model as m; m.load({str(path)!r})"],
        capture_output=True,
        text=True,
    )
    assert "schema_version 0 is not supported" in done.stderr
