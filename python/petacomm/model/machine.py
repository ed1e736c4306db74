"""The machine model: fitted alpha-beta parameters per operation, read by the planners.

A model comes from ``petacomm netbench`` (measured on this machine) or from
:func:`default_model` (generic values for a cluster with an InfiniBand-class network,
used when nothing was measured). Files are versioned JSON; see docs/machine-model.md.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.files import loads_json, read_bytes_file, write_text_atomically
from petacomm.model import collectives

SCHEMA_NAME = "petacomm.machine-model"


def piece_for(pieces, nbytes: float):
    """The piece covering ``nbytes`` (petacomm.model.fit.piece_for, without loading numpy)."""
    from petacomm.model.fit import piece_for as choose

    return choose(pieces, nbytes)


SCHEMA_VERSION = 1

# Generic point-to-point parameters when nothing was measured: 1.5 us latency and
# 10 GB/s, typical of a current InfiniBand/Slingshot-class inter-node link.
DEFAULT_ALPHA_S = 1.5e-6
DEFAULT_BETA_S_PER_BYTE = 1.0 / 10e9
# A piece's alpha above this is no network's time per message (a hand-edited or corrupt
# file): refused at load. 1e300 made the flow time model run without end.
MAX_ALPHA_S = 1.0


@dataclass(frozen=True)
class Piece:
    """One fitted segment ``t = alpha + beta n`` for sizes from_bytes..to_bytes at p ranks."""

    from_bytes: int
    to_bytes: int
    alpha_s: float
    beta_s_per_byte: float
    r2: float
    points: int

    @classmethod
    def from_fit(cls, fit) -> Piece:
        """From a petacomm.model.fit.LineFit."""
        return cls(fit.from_bytes, fit.to_bytes, fit.alpha, fit.beta, fit.r2, fit.points)

    @property
    def bandwidth_gb_s(self) -> float:
        return float("inf") if self.beta_s_per_byte <= 0 else 1e-9 / self.beta_s_per_byte


@dataclass(frozen=True)
class Point:
    nbytes: int
    iterations: int
    min_s: float
    median_s: float
    max_s: float


@dataclass
class OperationModel:
    op: str
    p: int  # ranks the measurement ran on (2 for ping-pong)
    pieces: list[Piece]
    points: list[Point] = field(default_factory=list)

    def fitted_time(self, nbytes: float) -> float:
        piece = piece_for(self.pieces, nbytes)  # type: ignore[arg-type]
        return piece.alpha_s + piece.beta_s_per_byte * nbytes

    def effective_alpha_beta(self, nbytes: float) -> tuple[float, float] | None:
        """Point-to-point alpha/beta implied by the fit through the algorithm's formula."""
        piece = piece_for(self.pieces, nbytes)  # type: ignore[arg-type]
        latency, bandwidth = collectives.coefficients(self.op, self.p)
        if latency == 0 or bandwidth == 0:
            return None
        return piece.alpha_s / latency, piece.beta_s_per_byte / bandwidth


@dataclass
class MachineModel:
    operations: dict[str, OperationModel]
    source: str = "defaults"
    machine: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    created: str = ""
    origin: str = field(default="", compare=False)  # the file it was read from, for errors

    # ---- queries -------------------------------------------------------------------
    def point_to_point_operation(self) -> str | None:
        """The ping-pong that best represents the network: across nodes when measured."""
        for name in ("pingpong.inter", "pingpong", "pingpong.intra"):
            if name in self.operations:
                return name
        return None

    def required_point_to_point_operation(self) -> str:
        """:meth:`point_to_point_operation`; PetacommError naming the model's file and the
        missing key when it has none. A model file stands for the user's machine: one
        without a ping-pong (netbench --ops without it, a hand-written file) is refused
        where point-to-point costs are needed, not completed with the built-in defaults,
        which are for when no model file is given (:func:`load_or_default`)."""
        name = self.point_to_point_operation()
        if name is None:
            raise PetacommError(
                f"{self.origin or 'machine model'}: operations has no ping-pong fit "
                f"(pingpong.inter, pingpong or pingpong.intra), which point-to-point costs "
                "need (measure one with 'petacomm netbench --ops pingpong')"
            )
        return name

    def point_to_point_pieces(self) -> list[Piece]:
        """The point-to-point fit, piece by piece (ordered by size): the ping-pong that best
        represents the network (PetacommError when the model has none). Planners that cost
        messages of many sizes use these (or :meth:`message_time`)."""
        return list(self.operations[self.required_point_to_point_operation()].pieces)

    def message_time(self, nbytes):
        """Seconds of one point-to-point message of ``nbytes`` (a number or an array of
        sizes): ``alpha + beta n`` with the fit piece covering each size, so an 8 B message
        gets the small-message latency and a 64 MiB one the large-message bandwidth."""
        import numpy as np

        n = np.asarray(nbytes, dtype=np.float64)
        if np.any(n < 0) or not np.all(np.isfinite(n)):
            raise PetacommError("nbytes: message sizes must be finite and non-negative")
        pieces = self.point_to_point_pieces()
        starts = np.array([p.from_bytes for p in pieces], dtype=np.float64)
        index = np.clip(np.searchsorted(starts, n, side="right") - 1, 0, len(pieces) - 1)
        alpha = np.array([p.alpha_s for p in pieces])[index]
        beta = np.array([p.beta_s_per_byte for p in pieces])[index]
        seconds = alpha + beta * n
        return float(seconds) if seconds.ndim == 0 else seconds

    def alpha_beta(self, op: str = "pingpong", nbytes: float | None = None) -> tuple[float, float]:
        """(alpha seconds, beta seconds/byte) of point-to-point transfers, or the effective
        parameters of a fitted collective, for the protocol piece covering ``nbytes``.

        Give ``nbytes``: without it the piece covering 1 MiB is used (the large-message
        regime), whose alpha is not the latency of small messages. For messages of many
        sizes use :meth:`message_time` or :meth:`point_to_point_pieces`."""
        size = 1 << 20 if nbytes is None else nbytes
        name = self._resolve(op)
        if name is not None:
            model = self.operations[name]
            if collectives.base_operation(name) == "pingpong":
                piece = piece_for(model.pieces, size)  # type: ignore[arg-type]
                return piece.alpha_s, piece.beta_s_per_byte
            derived = model.effective_alpha_beta(size)
            if derived is not None:
                return derived
        collectives.coefficients(op, 2)  # validates the name
        p2p = self.required_point_to_point_operation()
        piece = piece_for(self.operations[p2p].pieces, size)  # type: ignore[arg-type]
        return piece.alpha_s, piece.beta_s_per_byte

    def predict(self, op: str, nbytes: float, p: int = 2) -> float:
        """Predicted seconds for ``op`` with message size ``nbytes`` (the operation's size
        convention, see collectives.SIZE_CONVENTIONS) on ``p`` ranks."""
        collectives.coefficients(op, p)  # validates op and p
        if nbytes < 0:
            raise PetacommError(f"nbytes: must be non-negative, got {nbytes}")
        name = self._resolve(op)
        if name is not None and self.operations[name].p == p:
            return self.operations[name].fitted_time(nbytes)
        alpha, beta = self.alpha_beta(op, nbytes)
        return collectives.predict(op, nbytes, p, alpha, beta)

    def _resolve(self, op: str) -> str | None:
        if op in self.operations:
            return op
        if op == "pingpong":
            return self.point_to_point_operation()
        return None

    # ---- serialisation -------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA_NAME,
            "schema_version": SCHEMA_VERSION,
            "created": self.created or datetime.now(UTC).isoformat(timespec="seconds"),
            "source": self.source,
            "machine": self.machine,
            "settings": self.settings,
            "operations": {
                name: {
                    "p": m.p,
                    "size_convention": collectives.SIZE_CONVENTIONS[
                        collectives.base_operation(name)
                    ],
                    "algorithm_model": collectives.ALGORITHMS[collectives.base_operation(name)],
                    "points": [
                        {
                            "bytes": pt.nbytes,
                            "iterations": pt.iterations,
                            "min_s": pt.min_s,
                            "median_s": pt.median_s,
                            "max_s": pt.max_s,
                        }
                        for pt in m.points
                    ],
                    "pieces": [
                        {
                            "from_bytes": pc.from_bytes,
                            "to_bytes": pc.to_bytes,
                            "alpha_s": pc.alpha_s,
                            "beta_s_per_byte": pc.beta_s_per_byte,
                            "bandwidth_gb_s": None
                            if pc.beta_s_per_byte <= 0
                            else pc.bandwidth_gb_s,
                            "r2": pc.r2,
                            "points": pc.points,
                        }
                        for pc in m.pieces
                    ],
                }
                for name, m in self.operations.items()
            },
        }

    @classmethod
    def from_dict(
        cls, data: dict, origin: str = "machine model", text: str | None = None
    ) -> MachineModel:
        """The model of a parsed model file (``text``: the content ``data`` was parsed from,
        and only that: content remembered as valid skips the schema, see :func:`validate`)."""
        validate(data, origin, text)
        operations = {}
        for name, entry in data["operations"].items():
            points = [
                Point(pt["bytes"], pt["iterations"], pt["min_s"], pt["median_s"], pt["max_s"])
                for pt in entry.get("points", [])
            ]
            pieces = [
                Piece(
                    pc["from_bytes"],
                    pc["to_bytes"],
                    pc["alpha_s"],
                    pc["beta_s_per_byte"],
                    pc["r2"],
                    pc["points"],
                )
                for pc in entry["pieces"]
            ]
            operations[name] = OperationModel(name, entry["p"], pieces, points)
        return cls(
            operations,
            source=data.get("source", ""),
            machine=data.get("machine", {}),
            settings=data.get("settings", {}),
            created=data.get("created", ""),
            origin=origin,
        )


@cache
def _schema_text() -> str:
    return resources.files("petacomm.model").joinpath("machine-model.schema.json").read_text()


@cache
def schema() -> dict:
    return json.loads(_schema_text())


def validate(data: object, origin: str = "machine model", text: str | None = None) -> None:
    """Raises PetacommError naming the file and the first problem found. ``text``: the
    file's content when ``data`` was read from it; content already found valid under this
    schema skips the JSON Schema check (see :func:`_validated_marker`)."""
    if not isinstance(data, dict):
        raise PetacommError(f"{origin}: not a JSON object")
    if data.get("schema") != SCHEMA_NAME:
        raise PetacommError(
            f"{origin}: not a petacomm machine model (schema={data.get('schema')!r})"
        )
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise PetacommError(
            f"{origin}: schema_version {version!r} is not supported (this petacomm reads "
            f"version {SCHEMA_VERSION}; re-run 'petacomm netbench' to make a new model)"
        )
    marker = _validated_marker(text) if text is not None else None
    if marker is None or not _remembered_valid(marker):
        import jsonschema

        errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(data), key=str)
        if errors:
            where = "/".join(str(part) for part in errors[0].absolute_path) or "(top level)"
            raise PetacommError(f"{origin}: invalid at {where}: {errors[0].message}")
    for name, entry in data["operations"].items():
        collectives.coefficients(name, 2)
        _check_pieces(entry["pieces"], f"{origin}: operations/{name}/pieces")
    if marker is not None:
        _remember_valid(marker)


def _check_pieces(pieces: list, where: str) -> None:
    """What the schema cannot say: every number a finite float (JSON's 1e400 parses as
    infinity, 10**400 as an integer no float holds), alpha at most MAX_ALPHA_S, each piece's
    range ascending and the pieces in size order, which the lookup of a size's piece
    assumes."""
    previous = None
    for i, piece in enumerate(pieces):
        for key in ("from_bytes", "to_bytes", "alpha_s", "beta_s_per_byte"):
            try:
                value = float(piece[key])
            except OverflowError:
                value = math.inf
            if not math.isfinite(value):
                shown = repr(piece[key])
                shown = shown if len(shown) <= 24 else f"{shown[:12]}... ({len(shown)} digits)"
                raise PetacommError(f"{where}/{i}/{key}: {shown} is not a finite number")
        if piece["alpha_s"] > MAX_ALPHA_S:
            raise PetacommError(
                f"{where}/{i}/alpha_s: {piece['alpha_s']:g} s per message is no network's "
                f"latency (at most {MAX_ALPHA_S:g} s)"
            )
        if piece["from_bytes"] > piece["to_bytes"]:
            raise PetacommError(
                f"{where}/{i}: from_bytes {piece['from_bytes']} is above to_bytes "
                f"{piece['to_bytes']}"
            )
        if previous is not None and piece["from_bytes"] < previous:
            raise PetacommError(
                f"{where}/{i}: from_bytes {piece['from_bytes']} comes after a piece from "
                f"{previous} (pieces go in size order)"
            )
        previous = piece["from_bytes"]


def _validated_marker(text: str) -> Path:
    """An empty file whose name is the SHA-256 of the schema and of a model file's content,
    created once that content passed the schema. Checking the schema costs ~90 ms (most of
    it importing jsonschema), more than the rest of a planner's start; the marker turns it
    into one ``stat`` for a file read before. A changed file or schema is another name."""
    import hashlib

    from petacomm.user_cache import cache_directory

    digest = hashlib.sha256(f"{_schema_text()}\0{text}".encode()).hexdigest()
    return cache_directory("validated-models", "PETACOMM_MODEL_CACHE") / digest


def _remembered_valid(marker: Path) -> bool:
    try:
        return marker.exists()
    except OSError:  # a cache that cannot be looked in (permissions, a stale mount)
        return False


def _remember_valid(marker: Path) -> None:
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass  # a cache that cannot be written only costs the check next time


def default_model_path() -> Path:
    """Where netbench writes the model unless told otherwise (the user's data directory)."""
    override = os.environ.get("PETACOMM_MODEL")
    if override:
        return Path(override)
    from platformdirs import user_data_dir

    return Path(user_data_dir("petacomm")) / "machine-model.json"


def load(path: str | os.PathLike | None = None) -> MachineModel:
    """Reads a machine model file (default: the one netbench last wrote)."""
    file = Path(path) if path is not None else default_model_path()
    # A file that PETACOMM_MODEL names is said to come from it: no option names it.
    from_variable = path is None and bool(os.environ.get("PETACOMM_MODEL"))
    what = "machine model (PETACOMM_MODEL)" if from_variable else "machine model"
    if not os.path.lexists(file):
        hint = "" if path is not None else " (run 'petacomm netbench' to measure this machine)"
        raise PetacommError(f"{what}: {file} not found{hint}")
    # files.read_bytes_file: special files, directories and inputs above 256 MiB refused
    raw = read_bytes_file(file, what, allow_empty=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PetacommError(f"{what}: {file} is not a JSON text file") from err
    try:
        data = loads_json(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise PetacommError(
            f"{what}: {file} is not valid JSON ({err.msg}, line {err.lineno})"
        ) from err
    origin = f"{file} (PETACOMM_MODEL)" if from_variable else str(file)
    return MachineModel.from_dict(data, origin=origin, text=text)


def _refuse_constant(name: str):
    # Python's json reads NaN and Infinity, which JSON does not have and no time can be.
    raise json.JSONDecodeError(f"{name} is not a number", name, 0)


def model_option_error(err: PetacommError, given) -> PetacommError:
    """``err`` from reading a command's model: named by --model when the option ``given``
    was, else as it is (the file came from PETACOMM_MODEL or netbench's default place)."""
    return PetacommError(f"--model: {err}" if given is not None else str(err))


def load_or_default(path: str | os.PathLike | None = None) -> MachineModel:
    """The given model; without a path, the measured one if present, else the defaults."""
    if path is not None:
        return load(path)
    if default_model_path().exists():
        return load(None)
    return default_model()


def default_model() -> MachineModel:
    pieces = [Piece(0, 1 << 40, DEFAULT_ALPHA_S, DEFAULT_BETA_S_PER_BYTE, 1.0, 0)]
    return MachineModel(
        {"pingpong": OperationModel("pingpong", 2, pieces)},
        source="defaults",
        machine={"description": "generic InfiniBand-class cluster (1.5 us, 10 GB/s)"},
    )


def save(model: MachineModel, path: str | os.PathLike, inputs=()) -> Path:
    """Writes atomically (temp file + rename): an existing file survives any failure; never
    over one of ``inputs`` ((option, path) pairs, see petacomm.files)."""
    data = model.to_dict()
    validate(data, origin=str(path))
    return write_text_atomically(path, json.dumps(data, indent=1) + "\n", "--output", inputs)
