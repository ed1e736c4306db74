"""Bad input to the profiler's commands (`profile`, `report`, `profiler`, `bench
profiler-overhead`): each is refused with one line naming the argument and the value, a
non-zero exit, no traceback, no hang, inputs unchanged, and nothing launched."""

from __future__ import annotations

import json
import re

import pytest

from cli_harness import expect_clean_error

PROFILE = "petacomm profile: error: "


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (["--table-size", "abc"], ("--table-size", "'abc'")),
        (["--table-size", "-1"], ("--table-size", "'-1'")),
        (["--size-exact", "-1"], ("--size-exact", "'-1'")),
        (["--wrap", "bogus_kind"], ("--wrap", "'bogus_kind'")),
        (["--detail", "verbose"], ("--detail", "'verbose'")),
        (["--requests", "0"], ("--requests", "'0'")),
        (["--timeout", "0"], ("--timeout", "0")),
        # a timer thread's wait overflowed: an OverflowError traceback, then the run went on
        (["--timeout", "1e308"], ("--timeout", "1e308", "<= 1e+09")),
        (["--timeout", "inf"], ("--timeout", "'inf'")),
        (["--profiler-lib", "NOT_A_LIBRARY"], ("--profiler-lib", "NOT_A_LIBRARY")),
        (["-o", "/proc/x.json"], ("--output", "/proc")),
    ],
)
def test_profile_refuses_bad_options_before_launching(options, names, tmp_path):
    marker = tmp_path / "ran"
    result = expect_clean_error(
        "profile", *options, "--", "sh", "-c", f"touch {marker}", names=names
    )
    assert result.stderr.startswith(PROFILE)  # the sub-command's name, not the program's argv
    assert not marker.exists()  # nothing was launched


def test_profile_refuses_a_file_that_is_not_a_library(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not ELF\n")
    expect_clean_error(
        "profile", "--profiler-lib", str(text), "--", "true",
        names=("--profiler-lib", "not a shared library"), inputs=[text],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value"),
    [("PETACOMM_PROF_TABLE_SIZE", "4 MiBs"), ("PETACOMM_PROF_TABLESIZE", "4M")],
)
def test_profile_refuses_bad_settings_in_the_environment(name, value):
    expect_clean_error("profile", "--", "true", env={name: value}, names=(name,))


def test_profile_without_command_or_profile(tmp_path):
    expect_clean_error("profile", names="no command given")
    # A program that never initialises MPI leaves no profile: an error, not exit 0.
    result = expect_clean_error(
        "profile", "-o", str(tmp_path / "x.json"), "--", "true", names="no profile was written"
    )
    assert result.stderr.startswith(PROFILE)
    expect_clean_error("profile", "--", str(tmp_path / "missing"), names=("cannot run", "missing"))


def write_log(tmp_path):
    from synthetic import write_log as synthetic

    return synthetic(tmp_path / "log.json", 3, classes=4)


def synthetic_copy(log, path):
    path.write_bytes(log.read_bytes())
    return path


def test_report_refuses_bad_logs(tmp_path):
    log = write_log(tmp_path)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "something else"}))
    partial = tmp_path / "run.json.partial"
    partial.mkdir()
    (partial / "rank-0.live").write_bytes(b"garbage" * 10)
    for path, why in (
        (tmp_path / "missing.json", "no such profile log"),
        (binary, "not JSON"),
        (other, "not a valid petacomm profile log"),
        (partial, "not a profiler live file"),
    ):
        expect_clean_error("report", str(path), names=(str(path), why), inputs=[log, path])
    expect_clean_error(
        "report", str(log), "-o", str(tmp_path / "no" / "dir" / "r.html"),
        names=("-o", "does not exist"), inputs=[log],
    )  # fmt: skip
    expect_clean_error("report", str(log), "--model", str(other), names=str(other), inputs=[log])
    # The HTML may replace none of the inputs (the log itself, the second log, the model),
    # whichever name reaches it: the same path, or a symbolic link to it.
    second = synthetic_copy(log, tmp_path / "second.json")
    link = tmp_path / "link.json"
    link.symlink_to(log)
    for argv, target in (
        ((str(log), "-o", str(log)), log),
        ((str(log), "-o", str(link)), log),
        ((str(log), str(second), "-o", str(second)), second),
        ((str(log), "--model", str(other), "-o", str(other)), other),
    ):
        expect_clean_error(
            "report",
            *argv,
            names=("-o", "refusing to overwrite an input"),
            inputs=[log, second, other],
        )
        assert target.exists()


def test_a_named_pipe_or_device_is_not_read_as_a_profile_log():
    # A FIFO that no program writes blocked the read forever (the same check refuses it:
    # petacomm.files.special_file_kind; its tests make one).
    from petacomm.errors import PetacommError
    from petacomm.profile import log

    with pytest.raises(PetacommError, match="^/dev/null: a character device, not a profile log"):
        log.load("/dev/null")


def test_profiler_and_overhead_bench_refuse_bad_arguments(tmp_path):
    expect_clean_error(
        "profiler", "build", "--mpicc", str(tmp_path / "no-mpicc"), names=("--mpicc", "no-mpicc")
    )
    # handed to make as it was
    expect_clean_error(
        "profiler",
        "build",
        "--mpicc",
        "mpicc",
        "-j",
        "99999999999",
        names=("--jobs", "at most 1024"),
    )
    for options, name in (
        (["--profiler-lib", "NOT_A_LIBRARY"], "--profiler-lib"),
        (["--json", "/proc/overhead.json"], "--json"),
        # read by the program with atoi: 2^32 + 1 iterations ran as 1
        (["--iterations", "4294967297"], ("--iterations", "at most 2147483647")),
        (["--calls", "4294967297"], ("--calls", "at most 2147483647")),
    ):
        expect_clean_error("bench", "profiler-overhead", *options, names=name)


_LIVE_FIELDS = [
    "nregions", "regions_offset", "table_entries", "table_offset", "fallback_entries",
    "fallback_offset", "t_start_ns", "heartbeat_ns", "busy_since_ns", "mpi_ns", "io_ns",
    "cur_region", "excl_mark", "busy_region", "busy_call", "busy_threads", "last_signal",
    "rss_kib", "init_ns", "events", "coarsened_peer", "coarsened_size", "coarsened_call",
    "requests_untracked", "requests_incomplete", "region_errors", "used_keys", "state",
]  # fmt: skip


def _live_file(path, **meta_changes):
    """A rank's live file as the profiler lays it out (petacomm.profile.live), without
    running anything: a prefix, the live counters (no regions, no calls), then the JSON of
    its metadata; ``meta_changes`` replace (None: remove) metadata keys."""
    import struct

    from petacomm.profile import live

    prefix = live._PREFIX.size
    fields = {name: [prefix + 8 * i, "u64"] for i, name in enumerate(_LIVE_FIELDS)}
    fields["reason"] = [prefix + 8 * len(_LIVE_FIELDS), "char[64]"]
    size = prefix + 8 * len(_LIVE_FIELDS) + 64
    meta = {
        "schema": "petacomm.profile.live",
        "layout_version": 1,
        "run": "run-1",
        "rank": 0,
        "host": "node0",
        "pid": 4242,
        "clock_ns_at_unix_s": [0, 1_700_000_000],
        "header": {"calls": ["MPI_Send"]},
        "size_key_flags": 0,
        "layout": {
            "live": {"bytes": size, "fields": fields},
            "region": {"bytes": 8, "fields": {"name": [0, "char[8]"]}},
            "entry": {"bytes": 8, "fields": {"count": [0, "u64"]}},
        },
    }
    for key, value in meta_changes.items():
        if value is None:
            del meta[key]
        else:
            meta[key] = value
    text = json.dumps(meta).encode()
    counters = {name: 0 for name in _LIVE_FIELDS}
    counters.update(regions_offset=size, table_offset=size, fallback_offset=size)
    counters.update(t_start_ns=1000, heartbeat_ns=2000)
    data = live._PREFIX.pack(live.MAGIC, 1, 0, size, len(text))
    data += struct.pack(f"<{len(_LIVE_FIELDS)}Q", *(counters[n] for n in _LIVE_FIELDS))
    path.write_bytes(data + bytes(64) + text)
    return path


@pytest.mark.parametrize("key", ["run", "host", "rank", "header"])
def test_a_live_file_whose_metadata_lacks_a_key_is_refused_naming_it(tmp_path, key):
    # 'run' and 'host' missing raised KeyError (a traceback) from report and map.
    from petacomm.errors import PetacommError
    from petacomm.profile import live, log

    partial = tmp_path / "run.json.partial"
    partial.mkdir()
    whole = live.read(_live_file(partial / "rank-0.live"))  # the layout is the profiler's
    assert (whole["run"], whole["rank_summary"]["rows"][0][1]) == ("run-1", "node0")
    damaged = _live_file(partial / "rank-0.live", **{key: None})
    message = f"{damaged}: damaged profiler live file: its metadata has no '{key}'"
    with pytest.raises(PetacommError, match=f"^{re.escape(message)}$"):
        live.read(damaged)
    with pytest.raises(
        PetacommError, match=re.escape(f"no readable partial logs (skipped {message})")
    ):
        log.load(partial)
