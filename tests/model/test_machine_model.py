"""Machine model file: schema, round trip, version refusal, predictions, formulas."""

import json
import math
import re

import jsonschema
import pytest

from petacomm.errors import PetacommError
from petacomm.model import collectives, default_model, load, save
from petacomm.model.machine import SCHEMA_VERSION, schema
from petacomm.model.netbench import model_from_raw


def synthetic_raw(p=4):
    """A raw netbench result with exact alpha-beta times, as the native program writes it."""
    sizes = [2**k for k in range(3, 21)]
    a, b = 1e-6, 1 / 8e9

    def series(op, participants, alpha, beta):
        return {
            "op": op,
            "participants": participants,
            "peers": [0, 1] if op.startswith("pingpong") else [],
            "points": [
                {"bytes": n, "iterations": 10, "seconds": [alpha + beta * n] * 3} for n in sizes
            ],
        }

    lat, bw = collectives.coefficients("allreduce", p)
    return {
        "tool": "petacomm-netbench",
        "ranks": p,
        "mpi_library": "Test MPI 1.0",
        "warmup": 1,
        "iterations": 10,
        "repetitions": 3,
        "node_of_rank": [0] * p,
        "hosts": ["node0"],
        "series": [
            series("pingpong.intra", 2, a, b),
            series("allreduce", p, a * lat, b * bw),
        ],
    }


def test_round_trip_and_schema(tmp_path):
    model = model_from_raw(synthetic_raw())
    path = save(model, tmp_path / "m.json")
    data = json.loads(path.read_text())
    jsonschema.validate(data, schema())
    assert data["schema_version"] == SCHEMA_VERSION
    again = load(path)
    assert again.to_dict()["operations"] == data["operations"]
    assert again.predict("pingpong", 4096) == pytest.approx(1e-6 + 4096 / 8e9, rel=1e-6)


def test_the_mpi_library_name_ends_at_its_first_nul():
    # The length some MPIs give counts the terminating NUL: the model kept it ("...\x00").
    raw = synthetic_raw()
    raw["mpi_library"] = "Open MPI v4.1.4, package: Debian \n\x00"
    assert model_from_raw(raw).machine["mpi_library"] == "Open MPI v4.1.4, package: Debian"


def test_collective_prediction_at_other_p_uses_formula():
    model = model_from_raw(synthetic_raw(p=4))
    # Measured at p=4: the fitted line itself.
    lat4, bw4 = collectives.coefficients("allreduce", 4)
    assert model.predict("allreduce", 1 << 16, 4) == pytest.approx(
        1e-6 * lat4 + (1 << 16) / 8e9 * bw4, rel=1e-6
    )
    # At p=64 the effective alpha/beta go through Rabenseifner's formula.
    expected = 2 * math.log2(64) * 1e-6 + 2 * (63 / 64) * (1 << 16) / 8e9
    assert model.predict("allreduce", 1 << 16, 64) == pytest.approx(expected, rel=1e-6)


def test_unmeasured_collective_falls_back_to_point_to_point():
    model = default_model()
    alpha, beta = model.alpha_beta("pingpong")
    expected = (7 * alpha) + 7 * 1000 * beta
    assert model.predict("allgather", 1000, 8) == pytest.approx(expected)
    assert model.predict("alltoall", 0, 1) == 0


def test_point_to_point_figures_come_from_across_nodes_when_measured():
    # Within a node 0.5 us and 20 GB/s, across nodes 2 us and 5 GB/s (one piece each): the
    # network's figures are the inter-node ones whenever they were measured.
    from petacomm.model.machine import MachineModel, OperationModel, Piece

    def op(name, alpha, beta):
        return OperationModel(name, 2, [Piece(8, 1 << 20, alpha, beta, 1.0, 10)])

    intra, inter = op("pingpong.intra", 0.5e-6, 1 / 20e9), op("pingpong.inter", 2e-6, 1 / 5e9)
    both = MachineModel({"pingpong.intra": intra, "pingpong.inter": inter})
    assert both.point_to_point_operation() == "pingpong.inter"
    assert both.alpha_beta("pingpong", 4096) == (2e-6, 1 / 5e9)
    assert both.predict("pingpong", 4096) == pytest.approx(2e-6 + 4096 / 5e9)
    assert both.message_time(4096) == pytest.approx(2e-6 + 4096 / 5e9)
    assert both.point_to_point_pieces() == inter.pieces
    # An unmeasured collective falls back to the same figures: ring allgather, 7 steps.
    assert both.predict("allgather", 1000, 8) == pytest.approx(7 * 2e-6 + 7 * 1000 / 5e9)
    alone = MachineModel({"pingpong.intra": intra})
    assert alone.point_to_point_operation() == "pingpong.intra"
    assert alone.predict("pingpong", 4096) == pytest.approx(0.5e-6 + 4096 / 20e9)


def test_formulas():
    assert collectives.coefficients("allreduce", 8) == (6.0, 1.75)
    assert collectives.coefficients("allgather", 5) == (4.0, 4.0)
    assert collectives.coefficients("pingpong.inter", 99) == (1.0, 1.0)


def test_wrong_schema_version_refused(tmp_path):
    data = save(model_from_raw(synthetic_raw()), tmp_path / "m.json").read_text()
    bumped = json.loads(data)
    bumped["schema_version"] = 99
    (tmp_path / "v99.json").write_text(json.dumps(bumped))
    with pytest.raises(PetacommError, match="schema_version 99 is not supported"):
        load(tmp_path / "v99.json")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"schema": "other"}', "not a petacomm machine model"),
        (
            '{"schema": "petacomm.machine-model", "schema_version": 1, "created": "",'
            ' "source": "x", "machine": {}, "operations": {"pingpong": {"p": 2, "pieces": []}}}',
            "invalid at operations/pingpong/pieces",
        ),
    ],
)
def test_invalid_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(PetacommError, match=message):
        load(path)


def test_missing_file(tmp_path):
    with pytest.raises(PetacommError, match="not found"):
        load(tmp_path / "absent.json")


def test_a_named_pipe_or_device_is_not_read_as_a_model():
    # A FIFO that no program writes blocked the load forever (the same check refuses it:
    # petacomm.files.special_file_kind; its tests make one), /dev/zero never ended.
    with pytest.raises(PetacommError, match="^machine model: '/dev/null' is a character device"):
        load("/dev/null")


def test_a_model_file_larger_than_any_input_is_refused_before_reading(tmp_path):
    """It was read whole (a 10 GB file named by mistake filled memory); now the bound of
    every input file (petacomm.files.MAX_INPUT_BYTES) holds, with the other readers' words."""
    from petacomm.files import MAX_INPUT_BYTES

    huge = tmp_path / "huge.json"
    with huge.open("wb") as file:
        file.truncate(MAX_INPUT_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(PetacommError, match=r"^machine model: '.*huge.json' is 256 MiB, more"):
        load(huge)
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(PetacommError, match="^machine model: '.*dir.json' is a directory"):
        load(tmp_path / "dir.json")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.predict("allsum", 8, 2), "op: unknown operation 'allsum'"),
        (lambda m: m.predict("allreduce", 8, 0), "p: must be a positive integer"),
        (lambda m: m.predict("allreduce", -1, 2), "nbytes: must be non-negative"),
    ],
)
def test_predict_errors(call, message):
    with pytest.raises(PetacommError, match=message):
        call(default_model())


def test_save_is_atomic(tmp_path):
    target = tmp_path / "m.json"
    target.write_text("precious")
    model = model_from_raw(synthetic_raw())
    model.operations["pingpong.intra"].pieces.clear()  # invalid: refused before writing
    with pytest.raises(PetacommError):
        save(model, target)
    assert target.read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def _count_schema_checks(monkeypatch) -> list:
    """Calls of the JSON Schema validator from here on, one entry each."""
    calls = []
    real = jsonschema.Draft202012Validator

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(jsonschema, "Draft202012Validator", counted)
    return calls


def test_content_found_valid_is_not_checked_against_the_schema_again(tmp_path, monkeypatch):
    monkeypatch.setenv("PETACOMM_MODEL_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model_from_raw(synthetic_raw()).to_dict()))
    calls = _count_schema_checks(monkeypatch)
    first = load(path)
    assert len(calls) == 1
    again = load(path)
    assert len(calls) == 1  # remembered: one marker file, named by the content's digest
    assert again.to_dict() == first.to_dict()
    assert len(list((tmp_path / "cache").iterdir())) == 1
    # The same content elsewhere is the same marker; any other content is checked.
    (tmp_path / "copy.json").write_text(path.read_text())
    load(tmp_path / "copy.json")
    assert len(calls) == 1
    path.write_text(path.read_text() + "\n")
    load(path)
    assert len(calls) == 2


def test_a_changed_file_is_checked_and_refused_after_a_valid_load(tmp_path, monkeypatch):
    monkeypatch.setenv("PETACOMM_MODEL_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "m.json"
    data = model_from_raw(synthetic_raw()).to_dict()
    path.write_text(json.dumps(data))
    load(path)
    data["operations"]["pingpong.intra"]["pieces"] = []
    path.write_text(json.dumps(data))
    with pytest.raises(PetacommError, match="invalid at operations/pingpong.intra/pieces"):
        load(path)
    # Invalid content is never remembered: refused again.
    with pytest.raises(PetacommError, match="invalid at operations/pingpong.intra/pieces"):
        load(path)


def test_a_new_schema_checks_remembered_content_again(tmp_path, monkeypatch):
    from petacomm.model import machine

    monkeypatch.setenv("PETACOMM_MODEL_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model_from_raw(synthetic_raw()).to_dict()))
    load(path)
    calls = _count_schema_checks(monkeypatch)
    text = machine._schema_text()
    monkeypatch.setattr(machine, "_schema_text", lambda: text + " ")
    load(path)
    assert len(calls) == 1


def test_a_cache_that_cannot_be_written_only_costs_the_check(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PETACOMM_MODEL_CACHE", str(blocker / "cache"))  # under a file
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model_from_raw(synthetic_raw()).to_dict()))
    calls = _count_schema_checks(monkeypatch)
    assert load(path).to_dict() == load(path).to_dict()
    assert len(calls) == 2


def test_a_cache_that_cannot_be_looked_in_only_costs_the_check(tmp_path, monkeypatch):
    """Path.exists raises for permissions and stale mounts (it hides only a missing
    file): the model is then checked, not refused with a traceback."""
    from pathlib import Path

    monkeypatch.setenv("PETACOMM_MODEL_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "m.json"
    # one model: two built a second apart differ in 'created' (it failed so, now and then)
    written = model_from_raw(synthetic_raw()).to_dict()
    path.write_text(json.dumps(written))
    load(path)  # remembered
    real_exists = Path.exists

    def exists(self, *args, **kwargs):
        if self.parent == tmp_path / "cache":
            raise PermissionError(13, "Permission denied", str(self))
        return real_exists(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", exists)
    calls = _count_schema_checks(monkeypatch)
    assert load(path).to_dict() == written
    assert len(calls) == 1


def _two_pieces(**changes) -> str:
    """The default model's ping-pong fit split at 4 KiB into two pieces, with ``changes``
    ({"1__from_bytes": text}) written into the JSON text as they are."""
    data = default_model().to_dict()
    first = data["operations"]["pingpong"]["pieces"][0]
    data["operations"]["pingpong"]["pieces"] = [
        dict(first, to_bytes=4096),
        dict(first, from_bytes=4096, alpha_s=3e-6),
    ]
    marks = {}
    for key, value in changes.items():  # placeholders replaced by raw JSON text
        piece, name = key.split("__")
        mark = f"@{piece}{name}@"
        data["operations"]["pingpong"]["pieces"][int(piece)][name] = mark
        marks[json.dumps(mark)] = value
    text = json.dumps(data)
    for mark, value in marks.items():
        text = text.replace(mark, value)
    return text


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"0__from_bytes": "8192", "0__to_bytes": "9000"}, "pieces/1: from_bytes 4096 comes after"),
        ({"1__to_bytes": "100"}, "pieces/1: from_bytes 4096 is above to_bytes 100"),
        ({"0__alpha_s": "1e400"}, "pieces/0/alpha_s: inf is not a finite number"),
        # --time-model flows ran without end on it
        ({"1__alpha_s": "1e300"}, r"pieces/1/alpha_s: 1e\+300 s per message is no network's"),
        ({"1__from_bytes": "1" + "0" * 400}, r"pieces/1/from_bytes: 1000.*\(401 digits\)"),
    ],
)
def test_pieces_out_of_order_or_beyond_floats_are_refused(tmp_path, changes, message):
    # The JSON Schema cannot say these; `map` alone refused unordered pieces (its cost
    # table), while the other commands took the smallest piece for every size.
    path = tmp_path / "m.json"
    path.write_text(_two_pieces())
    assert len(load(path).operations["pingpong"].pieces) == 2  # the unchanged text is valid
    path.write_text(_two_pieces(**changes))
    with pytest.raises(PetacommError, match=f"{path}: operations/pingpong/{message}"):
        load(path)


def test_a_model_file_without_a_ping_pong_is_refused_where_point_to_point_costs_are_needed(
    tmp_path, monkeypatch, capsys
):
    # The built-in 1.5 us / 10 GB/s stood in for the missing ping-pong, without a word.
    from petacomm.cli import main

    monkeypatch.setenv("PETACOMM_MODEL_CACHE", str(tmp_path / "cache"))
    raw = synthetic_raw(p=4)
    raw["series"] = [s for s in raw["series"] if s["op"] == "allreduce"]
    path = tmp_path / "allreduce-only.json"
    save(model_from_raw(raw), path)
    model = load(path)
    assert model.predict("allreduce", 4096, 4) > 0  # what it measured still serves
    missing = f"{path}: operations has no ping-pong fit (pingpong.inter, pingpong or pingpong"
    for call in (model.point_to_point_pieces, lambda: model.alpha_beta("pingpong", 8)):
        with pytest.raises(PetacommError, match=re.escape(missing)):
            call()
    network = ["--network", "torus:2x2", "--pattern", "ranks 4; ring 1KiB"]
    assert main(["map", *network, "--model", str(path)]) == 2
    assert capsys.readouterr().err == f"petacomm map: error: --model: {missing}" + (
        ".intra), which point-to-point costs need (measure one with 'petacomm netbench --ops "
        "pingpong')\n"
    )
    assert default_model().point_to_point_pieces()  # no file given: the defaults serve


def _second_series(raw: dict, times) -> dict:
    """``raw`` with one more pingpong.intra series whose seconds at each size are ``times``."""
    again = json.loads(json.dumps(raw["series"][0]))
    for point in again["points"]:
        point["seconds"] = list(times)
    raw["series"].append(again)
    return raw


@pytest.mark.parametrize(
    "change, message",
    [
        # The second series replaced the first in the model.
        (
            lambda raw: _second_series(raw, [5e-6] * 3),
            "invalid at series/2/op: a second pingpong.intra series (the first is series/0)",
        ),
        # Fitted on positive medians only, the series left the model without a word.
        (
            lambda raw: {**raw, "series": [_second_series(raw, [0.0] * 3)["series"][-1]]},
            "invalid at series/0: the pingpong.intra series' median time is 0 at every size "
            "(nothing measured)",
        ),
        (
            lambda raw: {**raw, "series": [_second_series(raw, [0.0, 0.0, 1e-6])["series"][-1]]},
            "invalid at series/0: the pingpong.intra series' median time is 0 at every size "
            "(nothing measured)",
        ),
    ],
    ids=["duplicate", "all zero", "zero medians"],
)
def test_raw_series_that_the_model_would_lose_are_refused(tmp_path, capsys, change, message):
    from petacomm.cli import main

    path = tmp_path / "raw.json"
    path.write_text(json.dumps(change(synthetic_raw())))
    assert main(["netbench", "--raw", str(path), "-o", str(tmp_path / "m.json")]) == 2
    assert capsys.readouterr().err == f"petacomm netbench: error: --raw: {path}: {message}\n"
    assert not (tmp_path / "m.json").exists()


def test_a_bad_model_that_petacomm_model_names_says_so(monkeypatch, tmp_path):
    # No option names that file: its errors said 'machine model: X', and the user was left
    # to find which setting pointed there.
    from petacomm.errors import PetacommError
    from petacomm.model.machine import load

    bad = tmp_path / "bad.json"
    bad.write_text("{")
    monkeypatch.setenv("PETACOMM_MODEL", str(bad))
    with pytest.raises(PetacommError, match=r"^machine model \(PETACOMM_MODEL\): .*not valid JSON"):
        load()
    bad.write_text('{"schema": "something else"}')
    with pytest.raises(PetacommError, match=r"bad.json \(PETACOMM_MODEL\): not a petacomm machine"):
        load()
    with pytest.raises(PetacommError, match=r"^machine model: .*not valid JSON"):
        load(_write(tmp_path / "given.json", "{"))  # given by path: no variable named


def _write(path, text):
    path.write_text(text)
    return path


def test_a_bad_model_from_petacomm_model_is_not_blamed_on_model_option(
    monkeypatch, tmp_path, capsys
):
    # map said '--model: ...' with no --model given; the planners' loader (xchg.cost, which
    # the transposes use too) lost the variable's name.
    from petacomm.cli import main
    from petacomm.errors import PetacommError
    from petacomm.xchg.cost import load_model

    bad = _write(tmp_path / "bad.json", "{")
    monkeypatch.setenv("PETACOMM_MODEL", str(bad))
    with pytest.raises(PetacommError, match=r"^machine model \(PETACOMM_MODEL\): "):
        load_model(None)
    assert main(["map", "--network", "torus:4x4", "--pattern", "ring 1KiB", "-q"]) == 2
    assert "error: machine model (PETACOMM_MODEL): " in capsys.readouterr().err
    given = ["--model", str(bad)]
    assert main(["map", "--network", "torus:4x4", "--pattern", "ring 1KiB", "-q", *given]) == 2
    assert "error: --model: machine model: " in capsys.readouterr().err
