"""`petacomm bench profiler-overhead` runs and prints its figures with units (the figures
themselves are measured by the command, not asserted: this machine is shared and noisy)."""

import json

import pytest

from conftest import petacomm

pytestmark = pytest.mark.mpi


def test_overhead_command_prints_figures(tmp_path):
    out = tmp_path / "overhead.json"
    done = petacomm(
        "bench", "profiler-overhead", "--iterations", "20", "--calls", "2000", "--reps", "1",
        "--compute-us", "10", "--json", str(out),
    )  # fmt: skip
    assert "slowdown" in done.stdout and " %" in done.stdout
    assert "added per call" in done.stdout and " ns" in done.stdout
    figures = json.loads(out.read_text())
    assert figures["raw"]["profiler_active"] is True
    assert figures["calls_with_profiler_s"] > 0 and figures["mix_without_profiler_s"] > 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--reps", "0"], "--reps: must be a positive integer"),
        (["--compute-us", "nan"], "--compute-us: must be a number of microseconds from 0"),
        (["--compute-us", "1e400"], "--compute-us: must be a number of microseconds from 0"),
        (["--compute-us", "2e6"], "--compute-us: must be a number of microseconds from 0"),
        (["--end-to-end-compute-us", "inf"], "--end-to-end-compute-us: must be a number"),
        (["--end-to-end-ranks", "100000"], "--end-to-end-ranks: at most 1024 ranks"),
        (["--ranks", "2000"], "--ranks: at most 1024 ranks"),
        (["--json", ""], "--json: empty file name"),
        (["--peers", ","], "--peers: no peer named"),
        # measured and shown twice, or run a thousand times over
        (["--peers", "ipm,ipm"], "--peers: ipm is listed twice"),
        (["--keys", "16,16"], "--keys: 16 is listed twice"),
        (["--end-to-end-reps", "1000"], "--end-to-end-reps: at most 101"),
    ],
)
def test_overhead_command_checks_arguments(argv, message):
    """Each refused before anything runs, naming the option (nan once reached the native
    program and came back as a JSON traceback; 100,000 ranks were launched)."""
    done = petacomm("bench", "profiler-overhead", *argv, check=False)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_end_to_end_runs_do_the_same_work(tmp_path):
    # --peers with no peer built (an empty cache): the peers are skipped with a note and the
    # many-keys program runs plain, under `petacomm profile` and as the job that command
    # launches, every run with the one calibration's compute units (each run calibrating its
    # own once did half the work).
    out = tmp_path / "overhead.json"
    done = petacomm(
        "bench", "profiler-overhead", "--iterations", "20", "--calls", "2000", "--reps", "1",
        "--compute-us", "10", "--keys", "none", "--peers", "ipm,mpip-k0", "--end-to-end-ranks", "2",
        "--end-to-end-reps", "1", "--end-to-end-compute-us", "20", "--json", str(out),
        env={"PETACOMM_PROF_CACHE": str(tmp_path / "cache")},
    )  # fmt: skip
    figures = json.loads(out.read_text())
    assert figures["peers"]["ipm"]["available"] is False
    # mpiP without call sites is mpiP's build run with MPIP="-k 0": the note says to build mpip.
    assert figures["peers"]["mpip-k0"]["available"] is False
    assert "build-profiler-peer.sh mpip SOURCE" in figures["peers"]["mpip-k0"]["note"]
    # Beside peers, petacomm is also measured recording call sites (as mpiP does by default):
    # a stack walk per call, far above the plain table update.
    sites = figures["callsites"]
    assert sites["depth"] == 1 and sites["ns_per_call"] > 3 * max(figures["ns_per_call"], 20)
    assert "petacomm --callsites 1" in done.stdout
    e2e = figures["end_to_end"]
    assert e2e["compute_units"] > 0
    tools = [name for name, f in e2e.items() if isinstance(f, dict)]
    preload = "petacomm (summary, preload)"  # the command's job, launched directly
    assert tools == ["plain", "petacomm (normal)", "petacomm (summary)", preload], tools
    # The preloaded job profiles as the command does: a summary log of the same size.
    summary = e2e["petacomm (summary)"]["log_bytes"]
    assert summary > 0 and 0.9 * summary <= e2e[preload]["log_bytes"] <= 1.1 * summary
    # 2 ranks: 4096 sizes x 3 calls to the one partner, plus the allreduce and finalize keys.
    assert all(e2e[t]["keys_per_rank"] == 3 * 4096 + 2 for t in tools)
    assert all(e2e[t]["best_wall_s"] > 0 for t in tools)
    assert "many-keys program end to end" in done.stdout


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["--help"], 0, "Builds a peer profiler"),  # --help first used to be refused
        (["ipm", "/tmp", "--mpicc"], 2, "--mpicc needs a value"),  # "$2: unbound variable"
        (["ipm", "/tmp", "--cache"], 2, "--cache needs a value"),
        (["ipm", "/tmp", "--mpicc", "/no/such/mpicc"], 2, "--mpicc '/no/such/mpicc' not found"),
        (["gprof", "/tmp"], 2, "NAME must be ipm or mpip"),
    ],
)
def test_build_profiler_peer_script_checks_its_arguments(argv, code, message):
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "build-profiler-peer.sh"
    done = subprocess.run(["bash", str(script), *argv], capture_output=True, text=True)
    assert done.returncode == code and message in done.stdout + done.stderr, done


def test_build_profiler_peer_script_checks_mpicc_source_and_cache_before_building(tmp_path):
    """--mpicc values are echoed with the reason (an empty one, a directory and a file that
    is not executable all said 'not found'); a SOURCE that is no tarball is named (tar's own
    words alone came out); a cache that cannot be written is refused before the build (it
    was noticed after configure and make)."""
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "build-profiler-peer.sh"
    source = tmp_path / "src"
    source.mkdir()
    configured = tmp_path / "configured"
    (source / "configure").write_text(f"#!/bin/sh\ntouch '{configured}'\n")
    (source / "configure").chmod(0o755)
    mpicc = tmp_path / "mpicc"
    mpicc.write_text("#!/bin/sh\nexit 1\n")
    mpicc.chmod(0o755)
    plain = tmp_path / "plain.txt"
    plain.write_text("not a compiler, not a tarball\n")
    cache = ["--cache", str(tmp_path / "cache")]
    for argv, message in (
        (["ipm", source, "--mpicc", ""], "--mpicc '' is empty"),
        (["ipm", source, "--mpicc", tmp_path], f"--mpicc '{tmp_path}' is a directory"),
        (["ipm", source, "--mpicc", plain, *cache], f"--mpicc '{plain}' is not executable"),
        (
            ["ipm", plain, "--mpicc", mpicc, *cache],
            f"SOURCE '{plain}' is neither a directory nor a tarball tar can read",
        ),
        (
            ["ipm", source, "--mpicc", mpicc, "--cache", plain / "cache"],
            f"--cache '{plain / 'cache'}' cannot be written",
        ),
    ):
        done = subprocess.run(
            ["bash", str(script), *map(str, argv)], capture_output=True, text=True, check=False
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done
        assert lines[0].startswith("build-profiler-peer: ") and message in lines[0], done
    assert not configured.exists()  # nothing was built
