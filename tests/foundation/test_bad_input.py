"""Bad input to the around-the-job commands: netbench, map, bench map, doctor's options, the
top-level command and bench sparse-reduce's checks before launching.

Every case must end the way cli_harness.expect_clean_error checks: exit status non-zero, one
line on standard error naming the argument, no traceback, no hang, every input file byte for
byte as it was. Classes of bad input: files (missing, empty, wrong schema, binary, a
directory), garbage patterns and network strings, zero / negative / NaN / huge numbers and
sizes, outputs that are inputs or cannot be written, options that conflict or do not apply.
None of these cases starts an MPI job: the arguments are checked before anything launches
(the few that must launch are marked mpi).
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from cli_harness import expect_clean_error, expect_clean_error_in_process
from prerequisites import require

RAW_OK = {
    "tool": "petacomm-netbench",
    "ranks": 2,
    "series": [
        {
            "op": "pingpong.intra",
            "participants": 2,
            "points": [
                {"bytes": n, "iterations": 10, "seconds": [1e-6 + n * 1e-9] * 3}
                for n in (8, 64, 512, 4096)
            ],
        }
    ],
}


def _raw(**changes) -> str:
    raw = json.loads(json.dumps(RAW_OK))
    for path, value in changes.items():
        target = raw
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return json.dumps(raw)


FILES = {
    "empty.csv": b"",
    "binary.csv": b"\x00\x01\x02\xff binary",
    "latin1.txt": "grid2d 4x4 box 1KiB  # caf\xe9".encode("latin-1"),
    "dense.csv": b"0,100\n100,0\n",
    "nan.csv": b"src,dst,bytes\n0,1,nan\n1,0,5\n",
    "inf.csv": b"src,dst,bytes\n0,1,inf\n",
    "negative.csv": b"0,-5\n5,0\n",
    "rank_huge.csv": b"src,dst,bytes\n0,1e12,5\n",
    "rank_fraction.csv": b"src,dst,bytes\n0,1.5,5\n",
    "short_row.csv": b"src,dst,bytes\n0,1\n",
    "not_square.csv": b"0,1,2\n3,4\n",
    "no_bytes_column.csv": b"src,dst,size_in_elephants\n0,1,5\n",
    "header_only.csv": b"src,dst,bytes\n",  # was mapped as a table of zeros
    "two_sources.csv": b"src,dst,bytes,src\n0,1,1000,2\n",  # the first src was used
    "words.csv": b"a,b\nc,d\n",
    "matrix.txt": b"0,1\n1,0\n",
    "empty.npy": b"",
    "pickle.npy": b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"
    + b" " * 40
    + b"\n",
    "not_json.json": b"{ this is not json",
    "array.json": b"[1, 2, 3]",
    "other_schema.json": b'{"schema": "something.else", "schema_version": 1}',
    "model_v99.json": b'{"schema": "petacomm.machine-model", "schema_version": 99}',
    "model_nan.json": b'{"schema": "petacomm.machine-model", "schema_version": 1, "a": NaN}',
    # Valid, but its fit has no time per byte: nothing for the flow model to share.
    "model_beta0.json": json.dumps(
        {
            "schema": "petacomm.machine-model",
            "schema_version": 1,
            "created": "",
            "source": "hand-written",
            "machine": {},
            "operations": {
                "pingpong": {
                    "p": 2,
                    "pieces": [
                        {
                            "from_bytes": 0,
                            "to_bytes": 1 << 40,
                            "alpha_s": 1e-6,
                            "beta_s_per_byte": 0.0,
                            "r2": 1.0,
                            "points": 0,
                        }
                    ],
                }
            },
        }
    ).encode(),
    "raw_other_tool.json": b'{"tool": "osu_latency"}',
    "raw_no_series.json": _raw(series=None).encode(),
    "raw_bad_op.json": _raw(series__0__op="allsum").encode(),
    "raw_negative_time.json": _raw(series__0__points__0__seconds=[-1.0]).encode(),
    "raw_bad_bytes.json": _raw(series__0__points__0__bytes="eight").encode(),
    "raw_zero_ranks.json": _raw(ranks=0).encode(),
    "raw_ok.json": json.dumps(RAW_OK).encode(),
    "pattern_garbage.txt": b"grid2d 4x4 hexagon 1KiB\n",
    # Valid JSON syntax nested past Python's recursion limit: a RecursionError traceback.
    "deep.json": b'{"a":' * 100_000,
    "hosts.txt": b"node-a\nnode-b\n",
    "openmpi_hostfile.txt": b"n0 slots=4\nn1 slots=4\n",
    "hwloc_bad.xml": b"<topology><object",
    "hwloc_no_cores.xml": b'<topology><object type="Machine"/></topology>',
    "old.json": b'{"an earlier result": "kept"}\n',
}
# Executables (mode 755) in the working directory.
PROGRAMS = {
    "fakecc": "#!/bin/sh\necho cc\n",  # no MPI launcher beside it
    "fakepy": "#!/bin/sh\necho garbage\n",  # not a Python
    "floodpy": "#!/bin/sh\nexec yes\n",  # prints without end, whatever it is asked
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad-input")
    for name, data in FILES.items():
        (d / name).write_bytes(data)
    np.save(d / "three_d.npy", np.zeros((2, 2, 2)))
    np.save(d / "nan.npy", np.array([[0.0, np.nan], [1.0, 0.0]]))
    (d / "a_directory.csv").mkdir()
    (d / "a_directory.json").mkdir()
    (d / "file_not_dir").write_text("x")
    for name, text in PROGRAMS.items():
        (d / name).write_text(text)
        (d / name).chmod(0o755)
    return d


def inputs(d: Path) -> list[Path]:
    # Not the hidden files another case running at the same time creates for a moment while
    # it checks that its output's directory takes a new file (petacomm.files).
    return sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith("."))


def check(workdir, args, names, timeout=120):
    return expect_clean_error(
        *args,
        names=names,
        inputs=inputs(workdir),
        cwd=workdir,
        timeout=timeout,
        env={"PETACOMM_MODEL": str(workdir / "no-model-here.json")},
    )


MAP = ["map", "--network", "torus:4x4"]
SPARSE = ["bench", "sparse-reduce"]
# after the option under test (so that it shows in the case's id): a small run, were it to run
PEERS = ["--peers", "petscsf", "--ranks", "2", "--generator", "uniform", "--keys-per-rank", "100"]
PEERS += ["--reps", "2", "--setup-reps", "1", "--json", "old.json"]
MAP_RING = [*MAP, "--pattern", "ranks 16; ring 1KiB"]
MAP_RANKFILE = [*MAP_RING, "--output", "o.txt", "--format", "rankfile"]
NETBENCH = ["netbench", "-o", "written-model.json"]


def nolaunch(benchmark: str, *options: str) -> list[str]:
    """``bench BENCHMARK OPTIONS`` on a few ranks, were it to run (through the launcher
    test_a_benchmark_value_is_refused_before_any_launch gives it); the options under test
    first, to show in the case's id."""
    ranks = "4" if benchmark == "node" else "2"
    return ["bench", benchmark, *options, "--ranks", ranks, "--quiet"]


CASES = [
    # ---- map: files ----------------------------------------------------------------------
    ([*MAP, "--matrix", "missing.csv"], ("--matrix", "no such file")),
    ([*MAP, "--matrix", "empty.csv"], ("--matrix", "empty")),
    ([*MAP, "--matrix", "header_only.csv"], ("--matrix", "no messages")),
    ([*MAP, "--matrix", "two_sources.csv"], ("--matrix", "source column more than once")),
    ([*MAP, "--matrix", "binary.csv"], ("--matrix", "binary")),
    ([*MAP, "--matrix", "a_directory.csv"], ("--matrix", "directory")),
    ([*MAP, "--matrix", "matrix.txt"], ("--matrix", "unknown matrix file type")),
    ([*MAP, "--matrix", "nan.csv"], ("--matrix", "finite")),
    ([*MAP, "--matrix", "inf.csv"], ("--matrix", "finite")),
    ([*MAP, "--matrix", "negative.csv"], ("--matrix", "finite and >= 0")),
    ([*MAP, "--matrix", "rank_huge.csv"], ("--matrix", "ranks must be in")),
    ([*MAP, "--matrix", "rank_fraction.csv"], ("--matrix", "integers")),
    ([*MAP, "--matrix", "short_row.csv"], ("--matrix", "line 2")),
    ([*MAP, "--matrix", "not_square.csv"], ("--matrix", "line 2")),
    ([*MAP, "--matrix", "no_bytes_column.csv"], ("--matrix", "no bytes column")),
    ([*MAP, "--matrix", "words.csv"], ("--matrix", "no source column")),
    ([*MAP, "--matrix", "empty.npy"], ("--matrix", "empty")),
    ([*MAP, "--matrix", "pickle.npy"], ("--matrix", "not a NumPy .npy array")),
    ([*MAP, "--matrix", "three_d.npy"], ("--matrix", "square matrix")),
    ([*MAP, "--matrix", "nan.npy"], ("--matrix", "finite")),
    ([*MAP, "--pattern-file", "missing.txt"], ("--pattern-file", "no such file")),
    ([*MAP, "--pattern-file", "empty.csv"], ("--pattern-file", "empty")),
    ([*MAP, "--pattern-file", "binary.csv"], ("--pattern-file", "binary")),
    ([*MAP, "--pattern-file", "latin1.txt"], ("--pattern-file", "UTF-8")),
    ([*MAP, "--pattern-file", "a_directory.csv"], ("--pattern-file", "directory")),
    ([*MAP, "--pattern-file", "pattern_garbage.txt"], ("--pattern-file", "line 1, column 12")),
    ([*MAP, "--from-profile", "missing.json"], ("--from-profile", "no such profile log")),
    ([*MAP, "--from-profile", "empty.csv"], ("--from-profile", "not JSON")),
    ([*MAP, "--from-profile", "deep.json"], ("--from-profile", "nested too deeply")),
    ([*MAP, "--pattern-file", "deep.json"], ("--pattern-file", "nested too deeply")),
    ([*MAP_RING, "--model", "deep.json"], ("--model", "nested too deeply")),
    ([*MAP, "--from-profile", "binary.csv"], ("--from-profile",)),
    ([*MAP, "--from-profile", "not_json.json"], ("--from-profile", "not JSON")),
    ([*MAP, "--from-profile", "array.json"], ("--from-profile", "not a valid")),
    ([*MAP, "--from-profile", "other_schema.json"], ("--from-profile", "not a valid")),
    ([*MAP, "--from-profile", "a_directory.json"], ("--from-profile", "no partial logs")),
    ([*MAP_RING, "--model", "missing.json"], ("--model", "not found")),
    ([*MAP_RING, "--model", "empty.csv"], ("--model", "not valid JSON")),
    ([*MAP_RING, "--model", "binary.csv"], ("--model",)),
    ([*MAP_RING, "--model", "a_directory.json"], ("--model", "directory")),
    ([*MAP_RING, "--model", "other_schema.json"], ("--model", "not a petacomm machine model")),
    ([*MAP_RING, "--model", "model_v99.json"], ("--model", "schema_version 99")),
    ([*MAP_RING, "--model", "model_nan.json"], ("--model", "NaN is not a number")),
    (
        [*MAP_RING, "--time-model", "flows", "--model", "model_beta0.json"],
        ("--model", "pingpong's fit at 1 MiB has beta 0"),
    ),
    ([*MAP_RING, "--hwloc", "missing.xml"], ("--hwloc", "no such file")),
    ([*MAP_RING, "--hwloc", "a_directory.csv"], ("--hwloc", "directory")),
    ([*MAP_RING, "--hwloc", "hwloc_bad.xml"], ("--hwloc", "invalid XML")),
    ([*MAP_RING, "--hwloc", "hwloc_no_cores.xml"], ("--hwloc", "no Core objects")),
    ([*MAP_RANKFILE, "--hosts", "missing.txt"], ("--hosts", "no such file")),
    ([*MAP_RANKFILE, "--hosts", "binary.csv"], ("--hosts", "binary")),
    ([*MAP_RANKFILE, "--hosts", "hosts.txt"], ("--hosts", "2 host names for 16 nodes")),
    (
        [*MAP_RANKFILE, "--hosts", "openmpi_hostfile.txt"],
        ("--hosts", "line 1: expected one host name, got 'n0 slots=4'"),
    ),
    # they name the launcher file's hosts: without --output they were ignored
    ([*MAP_RING, "--hosts", "hosts.txt"], ("--hosts", "only used with --output")),
    ([*MAP_RING, "--host-template", ""], ("--host-template", "only used with --output")),
    # a bad format spec was found writing the file, after the search, and named --output
    ([*MAP_RANKFILE, "--host-template", "x{node:q}"], ("--host-template", "Unknown format code")),
    ([*MAP_RANKFILE, "--host-template", "a b{node}"], ("--host-template", "'a b0'", "space")),
    # ---- map: patterns -----------------------------------------------------------------------
    ([*MAP, "--pattern", ""], ("--pattern", "at least one traffic statement")),
    ([*MAP, "--pattern", "grid2d 4x4 hexagon 1KiB"], ("--pattern", "column 12")),
    ([*MAP, "--pattern", "grid2d 4xfour box 1KiB"], ("--pattern", "grid dimensions")),
    ([*MAP, "--pattern", "grid2d 0x4 box 1KiB"], ("--pattern", "grid dimensions")),
    ([*MAP, "--pattern", "grid3d 4x4 box 1KiB"], ("--pattern", "3 dimensions")),
    ([*MAP, "--pattern", "box 1KiB"], ("--pattern", "a 'grid' statement")),
    ([*MAP, "--pattern", "ranks 16; ring 0"], ("--pattern", "from 1 B to 1 PiB")),
    ([*MAP, "--pattern", "ranks 16; ring -5"], ("--pattern", "message size")),
    ([*MAP, "--pattern", "ranks 16; ring nan"], ("--pattern", "message size")),
    ([*MAP, "--pattern", "ranks 16; ring 1e400"], ("--pattern", "message size")),
    ([*MAP, "--pattern", "ranks 16; ring 1e30"], ("--pattern", "from 1 B to 1 PiB")),
    ([*MAP, "--pattern", "ranks 16; ring 1MiX"], ("--pattern", "message size")),
    ([*MAP, "--pattern", "ranks 0; ring 1"], ("--pattern", "positive rank count")),
    ([*MAP, "--pattern", "grid2d 4x4 box 1; phase x0"], ("--pattern", "repeat count")),
    ([*MAP, "--pattern", "grid2d 4x4 line 7 1KiB"], ("--pattern", "an axis in 0..1")),
    ([*MAP, "--pattern", "grid2d 4x4 offsets (1) 1KiB"], ("--pattern", "2 component")),
    (  # within the network's slots, over the message limit
        ["map", "--network", "torus:64x64x64:t=4", "--pattern", "ranks 1048576; alltoall 1"],
        ("--pattern", "exceed the limit"),
    ),
    ([*MAP, "--pattern", "grid2d 100000x100000 box 1"], ("--pattern", "at most 16 ranks")),
    (
        [*MAP, "--pattern", "grid2d 8x8 box 1"],
        ("--pattern", "column 8: expected at most 16 ranks", "torus:4x4 offers 16 nodes"),
    ),
    ([*MAP, "--pattern", "matrix missing.csv"], ("--pattern", "no such file")),
    ([*MAP, "--pattern", "matrix binary.csv"], ("--pattern", "binary")),
    ([*MAP, "--pattern", "profile not_json.json"], ("--pattern", "not JSON")),
    ([*MAP], ("give exactly one of --pattern",)),
    ([*MAP_RING, "--matrix", "dense.csv"], ("give exactly one of", "--matrix")),
    # ---- map: networks and machine -------------------------------------------------------------
    (["map", "--pattern", "ranks 4; ring 1"], ("--network", "required")),
    (["map", "--network", "", "--pattern", "ranks 4; ring 1"], ("--network", "required")),
    (["map", "--network", "tours:8x8", "--pattern", "ring 1"], ("--network", "unknown network")),
    (["map", "--network", "torus", "--pattern", "ring 1"], ("--network", "KIND:SHAPE")),
    (["map", "--network", "torus:", "--pattern", "ring 1"], ("--network", "missing dimensions")),
    (["map", "--network", "torus:8x0", "--pattern", "ring 1"], ("--network", "positive integer")),
    (["map", "--network", "torus:-4", "--pattern", "ring 1"], ("--network", "positive integer")),
    (["map", "--network", "torus:4.5", "--pattern", "ring 1"], ("--network", "positive integer")),
    (
        ["map", "--network", "torus:100000x100000x100000", "--pattern", "ranks 4; ring 1"],
        ("--network", "exceed the limit"),
    ),
    (
        ["map", "--network", "torus:" + "x".join(["2"] * 25), "--pattern", "ring 1"],
        ("--network", "dimensions"),
    ),
    (["map", "--network", "torus:4x4:t=0", "--pattern", "ring 1"], ("--network", "positive")),
    (
        ["map", "--network", "torus:4x4:t=99999999999", "--pattern", "ring 1"],
        ("--network", "cores per node exceed"),
    ),
    (["map", "--network", "torus:4x4:wrap=1", "--pattern", "ring 1"], ("--network", "wrap=")),
    # an option given twice: the last one won
    (["map", "--network", "torus:2x2:t=2:t=3", "--pattern", "ring 1"], ("--network", "t= is")),
    (["map", "--network", "torus:4x4:colour=red", "--pattern", "ring 1"], ("--network", "colour")),
    (["map", "--network", "fattree:2;4,4;1,2", "--pattern", "ring 1"], ("--network", "LEVELS")),
    (
        ["map", "--network", "fattree:2;99999,99999;99999,99999;1,1", "--pattern", "ring 1"],
        ("--network", "exceed the limit"),
    ),
    (["map", "--network", "dragonfly:10,4,2,2", "--pattern", "ring 1"], ("--network", "multiple")),
    (["map", "--network", "dragonfly:g=9,a=4", "--pattern", "ring 1"], ("--network", "missing")),
    ([*MAP_RING, "--cores-per-node", "0"], ("--cores-per-node", "positive integer")),
    ([*MAP_RING, "--cores-per-node", "-2"], ("--cores-per-node", "positive integer")),
    ([*MAP_RING, "--cores-per-node", "two"], ("--cores-per-node", "positive integer")),
    ([*MAP_RING, "--cores-per-node", "99999999"], ("--cores-per-node", "exceeds the limit")),
    ([*MAP_RING, "--node", "core8"], ("--node", "name:count")),
    ([*MAP_RING, "--node", "core:0"], ("--node", "name:count")),
    ([*MAP_RING, "--node", "core:99999999"], ("--node", "exceed the limit")),
    ([*MAP_RING, "--node", "core:2", "--cores-per-node", "4"], ("--cores-per-node", "disagrees")),
    ([*MAP_RING, "--node", "core:2", "--hwloc", "hwloc_bad.xml"], ("--node and --hwloc",)),
    ([*MAP_RING, "--routing", ""], ("--routing", "empty")),
    ([*MAP_RING, "--routing", "ecmp"], ("--routing", "does not apply")),
    ([*MAP_RING, "--routing", "dor:XQ"], ("--routing", "dimension letter")),
    ([*MAP_RING, "--routing", "adaptive:sometimes"], ("--routing", "adaptive:paths")),
    ([*MAP_RING, "--link-bandwidth", "0"], ("--link-bandwidth", "> 0")),
    ([*MAP_RING, "--link-bandwidth", "-1GB"], ("--link-bandwidth", "byte size")),
    ([*MAP_RING, "--link-bandwidth", "nan"], ("--link-bandwidth", "byte size")),
    ([*MAP_RING, "--link-bandwidth", "1e-320"], ("--link-bandwidth", "> 0")),  # named --model
    ([*MAP_RING, "--link-bandwidth", "1e400"], ("--link-bandwidth", "too large")),
    ([*MAP_RING, "--link-bandwidth", "fast"], ("--link-bandwidth", "byte size")),
    # ---- map: search and output options -------------------------------------------------------
    ([*MAP_RING, "--top", "0"], ("--top", "positive integer")),
    ([*MAP_RING, "--top", "-1"], ("--top", "positive integer")),
    ([*MAP_RING, "--top", "all"], ("--top", "positive integer")),
    ([*MAP_RING, "--max-candidates", "0"], ("--max-candidates", "positive integer")),
    ([*MAP_RING, "--time-budget", "0"], ("--time-budget", "> 0")),
    ([*MAP_RING, "--time-budget", "-5"], ("--time-budget", "> 0")),
    ([*MAP_RING, "--time-budget", "nan"], ("--time-budget", "finite")),
    ([*MAP_RING, "--time-budget", "inf"], ("--time-budget", "finite")),
    ([*MAP_RING, "--seed", "-1"], ("--seed", "from 0 to 2147483647")),
    # Scotch takes a C int: 2^32 gave seed 0's mapping
    ([*MAP_RING, "--seed", "4294967296"], ("--seed", "from 0 to 2147483647")),
    ([*MAP_RING, "--rank-by", "speed"], ("--rank-by", "invalid choice")),
    ([*MAP_RING, "--candidates", ""], ("--candidates", "empty list")),
    ([*MAP_RING, "--candidates", "best"], ("--candidates", "unknown candidate 'best'")),
    ([*MAP_RING, "--candidates", "TXYZ"], ("--candidates", "unknown candidate 'TXYZ'")),
    ([*MAP_RING, "--candidates", "tiles"], ("--candidates", "logical grid")),
    ([*MAP_RING, "--choose", "nosuch"], ("--choose", "no candidate named")),
    ([*MAP_RING, "--output", "out.txt"], ("--format", "required with --output")),
    ([*MAP_RING, "--format", "rankfile"], ("--output", "required with --format")),
    ([*MAP_RING, "--output", "out.txt", "--format", "lsf"], ("--format", "unknown format")),
    ([*MAP_RING, "--output", "a_directory.csv", "--format", "csv"], ("--output", "directory")),
    ([*MAP_RING, "--output", "file_not_dir/x", "--format", "csv"], ("--output", "not a directory")),
    ([*MAP_RING, "--output", "nodir/x.txt", "--format", "csv"], ("--output", "does not exist")),
    ([*MAP_RING, "--output", "out.txt", "--format", "bgp"], ("--output", "3-D torus")),
    (
        [*MAP, "--matrix", "dense.csv", "--output", "dense.csv", "--format", "csv"],
        ("--output", "input of --matrix"),
    ),
    (
        [*MAP_RING, "--hosts", "hosts.txt", "--output", "hosts.txt", "--format", "slurm"],
        ("--output", "input of --hosts"),
    ),
    (
        [*MAP_RING, "--output", "o.txt", "--format", "rankfile", "--host-template", "fixed"],
        ("--host-template", "must contain {node}"),
    ),
    (
        [*MAP_RING, "--output", "o.txt", "--format", "rankfile", "--host-template", "n{node"],
        ("--host-template",),
    ),
    (
        [*MAP_RING, "--output", "o.txt", "--format", "rankfile", "--host-template", "{rank}"],
        ("--host-template", "must contain {node}"),
    ),
    # ---- map --benchmark and bench map --------------------------------------------------------
    (["map", "--benchmark", "--matrix", "dense.csv"], ("--matrix", "not used by --benchmark")),
    (["map", "--benchmark", "--pattern-file", "x"], ("--pattern-file", "not used by")),
    (["map", "--benchmark", "--output", "o", "--format", "csv"], ("--output", "not used by")),
    (["map", "--benchmark", "--node", "core:2"], ("--node", "not used by --benchmark")),
    (["map", "--benchmark", "--network", "torus:4x4", "--pattern", "ring 0"], ("--pattern",)),
    (["bench", "map", "--matrix", "dense.csv"], ("unrecognized arguments", "--matrix")),
    (["bench", "map", "--output", "o.txt"], ("unrecognized arguments", "--output")),
    (["bench", "map", "--top", "0"], ("--top", "positive integer")),
    (
        ["bench", "map", "--network", "torus:4x4", "--pattern", "ranks 99; ring 1"],
        ("--pattern", "do not fit"),
    ),
    (
        [
            *["bench", "map", "--network", "fattree:2;4,4;1,2;1,2", "--mapping", "TXYZ"],
            *["--pattern", "ranks 8; ring 1"],
        ],
        ("--mapping", "torus or mesh"),
    ),
    (
        [
            "bench",
            "map",
            "--network",
            "torus:4x4",
            "--pattern",
            "ranks 8; ring 1",
            "--mapping",
            "TXYZ",
        ],
        ("--mapping", "each of TXY exactly once"),
    ),
    (["bench", "map", "--json", "a_directory.json"], ("--json", "directory")),
    (
        ["bench", "map", "--model", "model_v99.json", "--json", "model_v99.json"],
        ("--json", "input of --model"),
    ),
    (["bench", "map", "--network", "torus:4x4", "--model", "not_json.json"], ("--model",)),
    ([*MAP_RING, "--jobs", "0"], ("--jobs", "positive integer")),
    (
        [
            "map",
            "--network",
            "dragonfly:5,2,2,2",
            "--pattern",
            "ranks 4; ring 1",
            "--candidates",
            "scotch",
        ],
        ("--candidates", "no Scotch target"),
    ),
    (["bench", "map", "--peers", "metis"], ("--peers", "unknown peer 'metis'")),
    (["bench", "map", "--peers", "scotch", "--graphs", "grid"], ("--graphs", "unknown graph")),
    (["bench", "map", "--ranks", "64"], ("--ranks", "only used with --peers")),
    (["bench", "map", "--peers", "scotch", "--ranks", "9999"], ("--ranks", "do not fit")),
    (["bench", "map", "--json", ""], ("--json", "empty file name")),  # was ignored
    # options the comparison does not use: refused, not silently ignored
    (
        ["bench", "map", "--peers", "scotch", "--link-bandwidth", "-5"],
        ("--link-bandwidth", "not used with --peers"),
    ),
    (
        ["bench", "map", "--peers", "scotch", "--mapping", "bogus"],
        ("--mapping", "not used with --peers"),
    ),
    (
        ["bench", "map", "--peers", "scotch", "--time-model", "flows"],
        ("--time-model", "not used with --peers"),
    ),
    (["bench", "map", "--graphs", "bogus"], ("--graphs", "only used with --peers")),
    (["bench", "map", "--peers", "scotch", "--json", ""], ("--json", "empty file name")),
    # ---- integers as command lines write them: int() read '1_0' as 10 and '٤' as 4 --------
    (["bench", "profiler-overhead", "-n", "1_0"], ("-n/--ranks", "invalid int value: '1_0'")),
    (["bench", "profiler-overhead", "--keys", "1_0"], ("--keys", "not a list of counts")),
    ([*MAP_RING, "--jobs", "٤"], ("--jobs", "must be a positive integer, got '٤'")),
    (["map", "--network", "torus:4x٤", "--pattern", "ring 1"], ("--network", "got '٤'")),
    (["bench", "sparse-reduce", "--ranks", "2,1_0"], ("--ranks", "got '2,1_0'")),
    (["bench", "fftfilter", "--shape", "4,1_6,16", "--ranks", "2"], ("--shape", "'4,1_6,16'")),
    (["simulate", "transpose", "--ranks", "1_6"], ("--ranks", "got '1_6'")),
    (["simulate", "sweep3d", "--size", "8x8x3_2:4", "--ranks", "4"], ("--size", "'8x8x3_2:4'")),
    # ---- netbench ---------------------------------------------------------------------------
    ([*NETBENCH, "-n", "0"], ("-n/--ranks", "positive integer")),
    ([*NETBENCH, "-n", "-3"], ("-n/--ranks", "positive integer")),
    ([*NETBENCH, "-n", "four"], ("-n/--ranks", "positive integer")),
    ([*NETBENCH, "-n", "100000"], ("-n/--ranks", "100,000 ranks", "allocation")),
    ([*NETBENCH, "-n", "99999999999"], ("-n/--ranks", "at most")),
    ([*NETBENCH, "-m", "0:8"], ("-m", "0 < MIN <= MAX")),
    ([*NETBENCH, "-m", "64:8"], ("-m", "0 < MIN <= MAX")),
    ([*NETBENCH, "-m", "nan:8"], ("-m", "byte size")),
    ([*NETBENCH, "-m", "8:1e400"], ("-m", "too large")),
    ([*NETBENCH, "-m", "8:2G"], ("-m", "at most 1 GiB")),
    # reached the program, refused there after the launch; a second pingpong measured twice
    ([*NETBENCH, "--max-buffer", "1e308"], ("--max-buffer", "9223372036854775807 bytes")),
    ([*NETBENCH, "--ops", "pingpong,pingpong"], ("--ops", "pingpong is listed twice")),
    ([*NETBENCH, "-m", "8"], ("-m", "MIN:MAX")),
    # no power of two in the range: launched, then "the benchmark produced no usable
    # measurements (too few sizes?)"
    ([*NETBENCH, "-m", "5:7"], ("-m", "none lies in '5:7'")),
    # a negative value with a unit was taken for an unknown option: "expected one argument"
    ([*NETBENCH, "-m", "-1:8"], ("-m", "not a byte size: '-1'")),
    ([*NETBENCH, "-x", "-1"], ("-x", ">= 0")),
    ([*NETBENCH, "-i", "0"], ("-i", "positive integer")),
    ([*NETBENCH, "-i", "99999999999"], ("-i", "at most")),
    ([*NETBENCH, "-r", "0"], ("-r", "positive integer")),
    ([*NETBENCH, "-r", "1.5"], ("-r", "positive integer")),
    ([*NETBENCH, "--max-buffer", "0"], ("--max-buffer", "at least 1 byte")),
    ([*NETBENCH, "--max-buffer", "-1"], ("--max-buffer", "byte size")),
    ([*NETBENCH, "--max-buffer", "1.5"], ("--max-buffer", "whole number")),
    ([*NETBENCH, "--ops", "pingpong,allsum"], ("--ops", "unknown operation 'allsum'")),
    ([*NETBENCH, "--ops", ",,"], ("--ops", "unknown operation")),
    ([*NETBENCH, "--mpiexec", ""], ("--mpiexec", "empty")),
    ([*NETBENCH, "--mpiexec", "/no/such/mpiexec"], ("mpiexec", "not found")),
    ([*NETBENCH, "--plot", "plot.nosuchformat"], ("--plot", "unknown image format")),
    ([*NETBENCH, "--plot", "plot"], ("--plot", "no extension")),
    ([*NETBENCH, "--plot", "a_directory.csv"], ("--plot", "directory")),
    (["netbench", "-o", "a_directory.json"], ("--output", "directory")),
    (["netbench", "-o", "file_not_dir/m.json"], ("--output", "not a directory")),
    (["netbench", "--raw", "raw_ok.json", "-o", "raw_ok.json"], ("--output", "input of --raw")),
    ([*NETBENCH, "--keep-raw", "written-model.json"], ("--keep-raw", "input of --output")),
    ([*NETBENCH, "--plot", "written-model.json"], ("--plot", "input of --output")),
    ([*NETBENCH, "--raw", "missing.json"], ("--raw", "no such file")),
    ([*NETBENCH, "--raw", "empty.csv"], ("--raw", "empty")),
    ([*NETBENCH, "--raw", "deep.json"], ("--raw", "nested too deeply")),
    ([*NETBENCH, "--raw", "binary.csv"], ("--raw", "binary")),
    ([*NETBENCH, "--raw", "a_directory.json"], ("--raw", "directory")),
    ([*NETBENCH, "--raw", "not_json.json"], ("--raw", "not valid JSON")),
    ([*NETBENCH, "--raw", "array.json"], ("--raw", "not petacomm-netbench output")),
    ([*NETBENCH, "--raw", "raw_other_tool.json"], ("--raw", "not petacomm-netbench output")),
    ([*NETBENCH, "--raw", "raw_no_series.json"], ("--raw", "invalid at series")),
    ([*NETBENCH, "--raw", "raw_bad_op.json"], ("--raw", "series/0/op")),
    ([*NETBENCH, "--raw", "raw_negative_time.json"], ("--raw", "series/0/points/0/seconds")),
    ([*NETBENCH, "--raw", "raw_bad_bytes.json"], ("--raw", "series/0/points/0/bytes")),
    ([*NETBENCH, "--raw", "raw_zero_ranks.json"], ("--raw", "invalid at ranks")),
    # ---- the top-level command and doctor's options -------------------------------------------
    (["nosuchcommand"], ("COMMAND", "invalid choice")),
    (["--nosuchoption"], ("unrecognized arguments", "--nosuchoption")),
    (["bench", "nosuchbench"], ("invalid choice", "nosuchbench")),
    (["doctor", "--verbose"], ("unrecognized arguments", "--verbose")),
    (["doctor", "--mpiexec"], ("--mpiexec", "expected one argument")),
    # ---- bench sparse-reduce: refused before any rank starts ----------------------------------
    (["bench", "sparse-reduce", "--nside", "0"], ("--nside", "must be > 0")),
    (["bench", "sparse-reduce", "--json", ""], ("--json", "empty file name")),  # was ignored
    # peers' options without --peers: refused (a run without peers ignored them)
    ([*SPARSE, "--python", "/usr/bin/python3"], ("--python", "only used with --peers")),
    ([*SPARSE, "--mpicc", "mpicc"], ("--mpicc", "only used with --peers")),
    # a comma list naming a value twice ran it twice
    (["bench", "sparse-reduce", "--ranks", "2,4,2"], ("--ranks", "2 is listed twice")),
    (["bench", "sparse-reduce", "--model", "not_json.json"], ("--model",)),  # was unnamed
    (["bench", "sparse-reduce", "--generator", ""], ("--generator", "empty list")),
    (["bench", "map", "--peers", "scotch", "--ranks", "1"], ("--ranks", "at least 2 ranks")),
    (["bench", "sparse-reduce", "--generator", "cmb,cmb"], ("--generator", "listed twice")),
    (["bench", "map", "--peers", "scotch", "--graphs", "rgg,rgg"], ("--graphs", "listed twice")),
    # a million ranks were launched on the 2-core machine and hung
    (["bench", "sparse-reduce", "--ranks", "1000000"], ("--ranks", "at most 1024 ranks")),
    (["bench", "sparse-reduce", "--nside", "3"], ("--nside", "power of two")),
    (["bench", "sparse-reduce", "--nside", "-4", "--model-only", "8"], ("--nside", "> 0")),
    (["bench", "sparse-reduce", "--samples-per-rank", "-1"], ("--samples-per-rank", ">= 0")),
    (["bench", "sparse-reduce", "--total-samples", "-5"], ("--total-samples", ">= 0")),
    (["bench", "sparse-reduce", "--ranks", "0"], ("--ranks", "positive integers")),
    (["bench", "sparse-reduce", "--ranks", ","], ("--ranks", "empty list")),
    # an empty list was taken as the option not given (--model-only '' launched ranks)
    (["bench", "sparse-reduce", "--strategies", ""], ("--strategies", "empty list")),
    (["bench", "sparse-reduce", "--peers", ""], ("--peers", "empty list")),
    (["bench", "sparse-reduce", "--model-only", ""], ("--model-only", "empty list")),
    (["bench", "sparse-reduce", "--setup-scaling", ""], ("--setup-scaling", "empty list")),
    (["bench", "sparse-reduce", "--ranks", "two"], ("--ranks", "integers")),
    (["bench", "sparse-reduce", "--reps", "0"], ("--reps", ">= 1")),
    (["bench", "sparse-reduce", "--k", "0"], ("--k", ">= 1")),
    (["bench", "sparse-reduce", "--generator", "nosuch"], ("--generator", "unknown")),
    (["bench", "sparse-reduce", "--strategies", "fastest"], ("--strategies", "unknown")),
    (["bench", "sparse-reduce", "--json", "a_directory.json"], ("--json", "directory")),
    # A --mpicc or --python named that cannot serve: the peers were skipped (exit status 0)
    # and the skip note replaced old.json.
    ([*SPARSE, "--mpicc", "", *PEERS], ("--mpicc", "empty program name ''")),
    ([*SPARSE, "--mpicc", "nonexist", *PEERS], ("--mpicc", "'nonexist' not found")),
    (
        [*SPARSE, "--mpicc", "a_directory.csv", *PEERS],
        ("--mpicc", "'a_directory.csv' is a directory"),
    ),
    ([*SPARSE, "--mpicc", "./dense.csv", *PEERS], ("--mpicc", "'./dense.csv' is not executable")),
    ([*SPARSE, "--python", "", *PEERS], ("--python", "empty program name ''")),
    ([*SPARSE, "--python", "nonexist", *PEERS], ("--python", "'nonexist' not found")),
    (
        [*SPARSE, "--python", "a_directory.csv", *PEERS],
        ("--python", "'a_directory.csv' is a directory"),
    ),
    ([*SPARSE, "--python", "dense.csv", *PEERS], ("--python", "'dense.csv' is not executable")),
    (
        [*SPARSE, "--python", "/bin/false", *PEERS],
        ("--python", "'/bin/false' did not answer the probe as a Python with mpi4py would"),
    ),
    # was: --python: its mpi4py links None, petacomm was built against ...
    (
        [*SPARSE, "--python", "./fakepy", *PEERS],
        ("--python", "did not answer the probe", "'garbage'"),
    ),
    # was: read into memory for 120 s (several GiB)
    ([*SPARSE, "--python", "./floodpy", *PEERS], ("--python", "printed more than 1 MiB")),
    # was: --mpiexec: 'fakecc' not found or not executable (no --mpiexec was given)
    ([*SPARSE, "--mpicc", "./fakecc", *PEERS], ("--mpicc", "no MPI launcher beside './fakecc'")),
    ([*SPARSE, "--mpicc", "fakecc", *PEERS], ("--mpicc", "not found on PATH", "./fakecc")),
    # a missing directory was created by these two, refused by map and profiler-overhead
    (["bench", "map", "--json", "nodir/x.json"], ("--json", "directory 'nodir' does not exist")),
    (
        ["bench", "sparse-reduce", "--json", "nodir/x.json"],
        ("--json", "directory 'nodir' does not exist"),
    ),
    (
        ["bench", "profiler-overhead", "--json", "nodir/x.json"],
        ("--json", "directory 'nodir' does not exist"),
    ),
    # ---- bench mapmaker, node, sweep3d, halo, transpose, fftfilter: refused before a launch ----
    # --mk all counted the divisors of K one by one: 10^11 cells hung
    (["bench", "sweep3d", "--grid", "100000000000x1x1"], ("--grid", "at most 1048576 cells")),
    # an empty --mpiexec was taken for the option left out: the default launcher ran
    (["bench", "node", "--mpiexec", ""], ("--mpiexec", "empty launcher name")),
    (["bench", "halo", "--mpiexec", " "], ("--mpiexec", "empty launcher name")),
    # --json was checked only when the results were written, after every run ('' ignored)
    (["bench", "mapmaker", "--json", "a_directory.json"], ("--json", "directory")),
    (["bench", "node", "--json", "nodir/x.json"], ("--json", "directory 'nodir' does not")),
    (["bench", "node", "--json", ""], ("--json", "empty file name")),
    (["bench", "sweep3d", "--json", ""], ("--json", "empty file name")),
    (["bench", "halo", "--json", ""], ("--json", "empty file name")),
    # launched on the 2-core machine (as sparse-reduce's million ranks, which hung)
    (["bench", "mapmaker", "--ranks", "4,100000"], ("--ranks", "at most 1024 ranks")),
    (["bench", "node", "--ranks", "100000"], ("--ranks", "at most 1024 ranks")),
    (["bench", "sweep3d", "-n", "100000"], ("--ranks", "at most 1024 ranks")),
    (["bench", "halo", "--ranks", "100000"], ("--ranks", "at most 1024 ranks")),
    (["bench", "fftfilter", "--ranks", "100000"], ("--ranks", "at most 1024 ranks")),
    # '' was taken for the option left out: --model-only '' ran the race, --model '' the default
    (["bench", "transpose", "--model-only", ""], ("--model-only", "empty list")),
    (["bench", "transpose", "--model-only", "4", "--model", ""], ("--model", "empty file name")),
    # a traceback from the planner's check; 10^20 was taken modulo 2^64 without a word
    (["bench", "transpose", "--model-only", "4", "--ranks-per-node", "-1"], ("--ranks-per-node",)),
    (["bench", "transpose", "--model-only", "99999999999"], ("--model-only", "2^30")),
    (["bench", "transpose", "--model-only", "4", "--sizes", "1" + "0" * 20 + "x4"], ("--sizes",)),
    # the grid was checked against each rank count only when its run came, after the others
    (["bench", "fftfilter", "--ranks", "2,4", "--grid", "1,2"], ("--grid", "make 4 ranks")),
    # a value listed twice was run and shown twice
    (["bench", "sweep3d", "--grid", "4x4x4", "--mk", "1,1"], ("--mk", "1 is listed twice")),
    (["bench", "sweep3d", "--node-sizes", "1,1"], ("--node-sizes", "1 is listed twice")),
    (["bench", "sweep3d", "--transports", "blocking,blocking"], ("--transports", "twice")),
    (["bench", "mapmaker", "--strategies", "owner,owner"], ("--strategies", "owner is listed")),
    (["bench", "halo", "--variants", "sendrecv,sendrecv"], ("--variants", "sendrecv is listed")),
    (["bench", "fftfilter", "--ranks", "2,2"], ("--ranks", "2 is listed twice")),
    (["bench", "transpose", "--sizes", "8x8,8x8"], ("--sizes", "8x8 is listed twice")),
    (["bench", "transpose", "--strategies", "xor,xor"], ("--strategies", "xor is listed twice")),
    # empty: the program got an empty name, '' meant every variant or no peer, '.' was read
    (["bench", "sweep3d", "--transports", "blocking,"], ("--transports", "empty name")),
    (["bench", "sweep3d", "--model", ""], ("--model", "empty file name")),
    (["bench", "halo", "--variants", ""], ("--variants", "empty name")),
    (["bench", "halo", "--mapping", ""], ("--mapping", "empty file name")),
    (["bench", "transpose", "--peers", ""], ("--peers", "empty list")),
    # checked after the whole race (weak) or after the toolchain's build, and not bounded
    (["bench", "transpose", "--weak", "--weak-shape", "0x4"], ("--weak-shape", "positive")),
    (["bench", "transpose", "--weak", "--weak-ranks", "2,2000"], ("--weak-ranks", "at most")),
    (["bench", "transpose", "--ranks", "5000"], ("--ranks", "at most 1024 ranks")),
    (["bench", "transpose", "--peers", "x", "--mpicc", "/nonexistent"], ("--peers", "unknown")),
    # ---- an empty file name: it was taken for the option left out (LOG2: no comparison; -o:
    # no HTML; simulate --json: no file) or read the directory '.' ('.' is a directory)
    (["report", "missing.json", ""], ("LOG2", "empty file name")),
    (["report", "missing.json", "--model", ""], ("--model", "empty file name")),
    (["report", "missing.json", "-o", ""], ("-o", "empty file name")),
    ([*MAP_RING, "--model", ""], ("--model", "empty file name")),
    (["simulate", "transpose", "--json", ""], ("--json", "empty file name")),
    (["simulate", "transpose", "--network", ""], ("--network", "empty value")),
    (["simulate", "transpose", "--mapping", ""], ("--mapping", "empty value")),
    (["netbench", "--raw", ""], ("--raw", "empty file name")),
    (["netbench", "-o", ""], ("--output", "empty file name")),
    (["profile", "-o", "", "--", "true"], ("-o", "empty file name")),
    (["profile", "--mpicc", "", "--", "true"], ("--mpicc", "empty file name")),
    (["bench", "profiler-overhead", "--mpiexec", ""], ("--mpiexec", "empty file name")),
]


def _case_id(case) -> str:
    return " ".join(case[0])[:70]


IDS = [_case_id(c) for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bad_input_is_refused_cleanly(workdir, case, capfd, monkeypatch):
    """In this process (a process start each would cost the suite about 20 s)."""
    args, names = case
    expect_clean_error_in_process(
        *args,
        names=names,
        inputs=inputs(workdir),
        cwd=workdir,
        env={"PETACOMM_MODEL": str(workdir / "no-model-here.json")},
        capfd=capfd,
        monkeypatch=monkeypatch,
    )
    # Nothing was written in the working directory: every output is refused before work.
    assert not (workdir / "written-model.json").exists() and not (workdir / "out.txt").exists()
    assert not (workdir / "nodir").exists()


def test_the_suite_is_broad():
    assert len(CASES) >= 100
    assert {args[0] for args, _ in CASES} >= {"map", "netbench", "bench", "doctor"}


@pytest.mark.mpi
def test_a_launcher_of_another_mpi_is_refused_before_launching(workdir):
    require(Path("/usr/bin/mpiexec.mpich").exists(), "MPICH's mpiexec is not installed (mpich)")
    from petacomm.launch import native_mpi_vendor

    if native_mpi_vendor() != "openmpi":
        pytest.skip("the native part is not built with Open MPI")
    check(workdir, [*NETBENCH, "-n", "2", "--mpiexec", "mpiexec.mpich"], ("--mpiexec", "MPICH"))


@pytest.mark.mpi
def test_ranks_that_did_not_form_one_job_are_detected(workdir, tmp_path):
    # A launcher that ignores -n and starts the program once: the program runs as a
    # one-rank job and netbench must say so instead of writing a 1-rank model.
    launcher = tmp_path / "one-rank-mpiexec"
    launcher.write_text('#!/bin/sh\nshift 2\nexec "$@"\n')
    launcher.chmod(0o755)
    check(
        workdir,
        [*NETBENCH, "-q", "-n", "2", "-m", "8:8", "-i", "1", "-r", "1", "--mpiexec", str(launcher)],
        ("--mpiexec", "1-rank job", "instead of one job of 2 ranks"),
        timeout=120,
    )
    assert not (workdir / "written-model.json").exists()


def test_inputs_survive_even_when_permissions_would_allow_writing(workdir):
    # Root may write anywhere: the input check must not rely on permissions.
    assert os.access(workdir / "dense.csv", os.W_OK)
    check(
        workdir,
        [*MAP, "--matrix", "./dense.csv", "--output", "dense.csv", "--format", "csv"],
        ("--output", "input of --matrix"),
    )


@pytest.mark.parametrize(
    "args, option",
    [
        ([*MAP_RING, "--output", "/proc/version", "--format", "csv"], "--output"),
        (["bench", "map", "--json", "/proc/version"], "--json"),
        (["bench", "sparse-reduce", "--json", "/proc/version"], "--json"),
    ],
    ids=["map", "bench map", "bench sparse-reduce"],
)
def test_an_output_no_file_can_be_created_beside_is_refused_with_the_reason(workdir, args, option):
    """/proc/version exists; outputs are written through a temporary file beside it, which
    /proc does not allow: the error said 'No such file or directory' (and bench map ran its
    benchmark first)."""
    require(os.path.isfile("/proc/version"), "no /proc/version")
    why = "'/proc' does not allow creating files" if os.geteuid() == 0 else "not writable"
    result = check(workdir, args, (option, "'/proc/version'", why))
    assert "No such file" not in result.stderr and "best by time" not in result.stdout


# The native programs' own bounds and choices, which the benchmarks passed on: they were
# refused only once launched, or ran without end (fftfilter's atoi).
BENCH_VALUES = [
    (nolaunch("halo", "--dims", "4"), ("--dims", "expected 1, 2 or 3 dimensions, got '4'")),
    (nolaunch("halo", "--stencil", "star,cross"), ("--stencil", "expected star or box")),
    (nolaunch("halo", "--periodic", "maybe"), ("--periodic", "0/1 digit per dimension")),
    (nolaunch("halo", "--dims", "2", "--periodic", "101"), ("--periodic", "got '101'")),
    (nolaunch("halo", "--dims", "2,3", "--periodic", "10"), ("--periodic", "of --dims 2,3")),
    (nolaunch("halo", "-m", "64:8"), ("-m", "need 0 < MIN <= MAX")),
    (nolaunch("halo", "-m", "0"), ("-m", "need 0 < MIN <= MAX")),
    (nolaunch("halo", "-m", "8:65M"), ("-m", "at most 64 MiB per face")),
    (nolaunch("halo", "-i", "0"), ("-i", "must be >= 1, got 0")),
    (nolaunch("halo", "-x", "1000001"), ("-x", "at most 1000000")),
    (nolaunch("halo", "-x", "many"), ("-x", "expected a whole number, got 'many'")),
    (nolaunch("mapmaker", "--nside", "48"), ("--nside", "power of two, got 48")),
    (nolaunch("mapmaker", "--nside", "2097152"), ("--nside", "at most 1048576")),
    (nolaunch("mapmaker", "--detectors", "1025"), ("--detectors", "at most 1024")),
    (nolaunch("mapmaker", "--iterations", "1000001"), ("--iterations", "at most 1000000")),
    (nolaunch("mapmaker", "--transport", "rdma"), ("--transport", "p2p, neighbor, alltoallv")),
    # every round's strategies go to the program as one argument: 99999999 rounds ended in
    # "Argument list too long", a traceback (and a list of 8 x 10^8 names in memory)
    (nolaunch("mapmaker", "--rounds", "101"), ("--rounds", "at most 100")),
    (nolaunch("node", "--iterations", "1000001"), ("--iterations", "at most 1000000")),
    (nolaunch("node", "--reps", "1001"), ("--reps", "at most 1000")),
    (nolaunch("node", "--window", "4097"), ("--window", "at most 4096")),
    (nolaunch("node", "--inter-node-size", "4"), ("--inter-node-size", "on one node", "most 3")),
    (nolaunch("sweep3d", "--angles", "65537"), ("--angles", "at most 65536")),
    (nolaunch("sweep3d", "--angles", "6", "--mmi", "4"), ("--mmi", "4 does not divide")),
    (nolaunch("sweep3d", "--procs", "3x3"), ("--procs", "3x3 makes 9 ranks, but --ranks is 2")),
    (nolaunch("sweep3d", "--procs", "2by1"), ("--procs", "expected auto, all or PxxPy")),
    (nolaunch("sweep3d", "--procs", "2x1,2x1"), ("--procs", "2x1 is listed twice")),
    (nolaunch("sweep3d", "--grid", "8x1x4", "--procs", "1x2"), ("--procs", "without cells")),
    (nolaunch("sweep3d", "--grid", "1x1x4"), ("--procs", "no Px x Py = 2 ranks fits")),
    (nolaunch("sweep3d", "--rounds", "101"), ("--rounds", "at most 100")),
    (nolaunch("sweep3d", "--transports", "blocking,ring"), ("--transports", "unknown 'ring'")),
    (nolaunch("fftfilter", "--strategy", "ring"), ("--strategy", "unknown 'ring'")),
    (nolaunch("fftfilter", "--strategy", "partial"), ("--strategy", "packed-partial variant's")),
    (nolaunch("fftfilter", "--reps", "99999999999"), ("--reps", "at most 1000000")),
    (nolaunch("transpose", "--reps", "99999999999"), ("--reps", "at most 1000000")),
    (nolaunch("transpose", "--warmup", "1000001"), ("--warmup", "at most 1000000")),
    (nolaunch("sparse-reduce", "--setup-reps", "1000001"), ("--setup-reps", "at most 1000000")),
    (nolaunch("sparse-reduce", "--k", "1025"), ("--k", "at most 1024")),
    # the generators' sizes per rank: ranks were launched to generate 10^11 keys each
    (
        nolaunch("sparse-reduce", "--generator", "zipf", "--keys-per-rank", "99999999999"),
        ("--keys-per-rank", "at most 1073741824"),
    ),
    (
        nolaunch("sparse-reduce", "--samples-per-rank", str(2**30 + 1)),
        ("--samples-per-rank", "at most 1073741824"),
    ),
]


@pytest.mark.parametrize("case", BENCH_VALUES, ids=[_case_id(c) for c in BENCH_VALUES])
def test_a_benchmark_value_is_refused_before_any_launch(case, tmp_path, capfd, monkeypatch):
    """In this process, as the table above: one error line naming the option, and the
    launcher, which records a launch, never called."""
    args, names = case
    launched = tmp_path / "launched"
    launcher = tmp_path / "mpiexec"
    launcher.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "mpiexec (Open MPI) 4.1.4" && exit 0\n'
        f"touch {launched}\nexit 1\n"
    )
    launcher.chmod(0o755)
    expect_clean_error_in_process(
        *args,
        "--mpiexec",
        str(launcher),
        names=names,
        env={"PETACOMM_MODEL": str(tmp_path / "no-model-here.json")},
        capfd=capfd,
        monkeypatch=monkeypatch,
    )
    assert not launched.exists()
