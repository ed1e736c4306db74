"""Reading profile logs: the final log of a run, or the per-rank data of a run that never
reached ``MPI_Finalize`` (a directory ``LOG.partial/`` of ``rank-N.live`` files, read by
:mod:`petacomm.profile.live`).

Every log is validated against ``profile-log.schema.json`` (schema ``petacomm.profile``,
version :data:`SCHEMA_VERSION`) and its tables are checked for the columns this reader needs;
a bad file raises :class:`PetacommError` naming the file and what is wrong. Partial logs are
merged into the same :class:`Profile` a final log gives, with ``complete = False``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from petacomm.errors import PetacommError
from petacomm.files import loads_json, special_file_kind

SCHEMA_NAME = "petacomm.profile"
SCHEMA_VERSION = 1

# Partner codes of the log (non-negative partners are MPI_COMM_WORLD ranks).
PEER_NONE = -1
PEER_PROC_NULL = -2
PEER_ANY = -3
PEER_COARSE = -4
PEER_OUTSIDE = -5

REQUIRED_COLUMNS = {
    "rank_summary": ("rank", "host", "wall_ns", "mpi_ns", "io_ns", "rss_kib"),
    "region_summary": ("rank", "region", "parent", "entries", "wall_ns", "mpi_ns", "io_ns"),
    "call_summary": ("region", "call", "size", "size_max", "count", "bytes", "time_ns"),
    "call_by_rank": ("rank", "call", "count", "bytes", "time_ns"),
    "peer_summary": ("rank", "call", "peer", "count", "bytes", "time_ns"),
    "entries": ("rank", "region", "call", "size", "size_max", "peer", "count", "bytes", "time_ns"),
    "callsites": ("call", "frames", "count", "bytes", "time_ns", "min_ns", "max_ns", "ranks"),
}


@dataclass
class Profile:
    """One run's profile, from a final log or merged partial logs. Times in ns, sizes in bytes.

    Tables are lists of dicts keyed by column name; call ids are replaced by call names.
    """

    source: Path
    complete: bool
    command: list[str]
    ranks: int
    nodes: int
    mpi_library: str
    thread_level: str
    profiler: dict
    call_kinds: dict[str, str]
    wall_ns: int
    rank_rows: list[dict]
    region_rows: list[dict]
    call_rows: list[dict]
    call_rank_rows: list[dict] | None = None
    peer_rows: list[dict] | None = None
    entry_rows: list[dict] | None = None
    # Call sites (--callsites DEPTH): call, frames ([module, offset] innermost first), count,
    # bytes, time_ns, min_ns, max_ns, ranks. None when call sites were off.
    callsite_rows: list[dict] | None = None
    callsite_depth: int = 0
    snapshot: int = 0  # >0: a snapshot log written by MPI_Pcontrol(3)
    partial_reasons: dict[int, str] = field(default_factory=dict)
    missing_ranks: list[int] = field(default_factory=list)
    merge_errors: bool = False
    # Partial logs: rank -> the MPI call it was blocked in when it stopped (call, region, ns).
    in_flight: dict[int, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def coarsened_events(self) -> int:
        """Events the full call table kept under coarser keys (summed over ranks)."""
        return sum(
            int(r.get("coarsened_peer", 0))
            + int(r.get("coarsened_size", 0))
            + int(r.get("coarsened_call", 0))
            for r in self.rank_rows
        )

    @property
    def label(self) -> str:
        return self.source.name

    def kind(self, call: str) -> str:
        return self.call_kinds.get(call, "misc")

    def missing_ranks_text(self, shown: int = 20) -> str:
        """The ranks partial logs lack, the first ``shown`` of them: "3, 5 ..."."""
        text = ", ".join(str(r) for r in self.missing_ranks[:shown])
        return text + (" ..." if len(self.missing_ranks) > shown else "")


@cache
def schema() -> dict:
    text = resources.files("petacomm.profile").joinpath("profile-log.schema.json").read_text()
    return json.loads(text)


def validate(data: object, origin: str) -> None:
    """Raises PetacommError when ``data`` is not a profile log this version can read."""
    import jsonschema

    if isinstance(data, dict) and data.get("schema") == SCHEMA_NAME:
        version = data.get("schema_version")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise PetacommError(
                f"{origin}: written by a newer petacomm (profile schema version {version}; "
                f"this petacomm reads version {SCHEMA_VERSION}): upgrade petacomm"
            )
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "top level"
        raise PetacommError(
            f"{origin}: not a valid petacomm profile log ({where}: {first.message})"
        )
    for table, needed in REQUIRED_COLUMNS.items():
        if table not in data:
            continue
        columns = data[table]["columns"]
        missing = [c for c in needed if c not in columns]
        if missing:
            raise PetacommError(f"{origin}: table '{table}' lacks columns {', '.join(missing)}")
        width = len(columns)
        for i, row in enumerate(data[table]["rows"]):
            if len(row) != width:
                raise PetacommError(
                    f"{origin}: table '{table}' row {i} has {len(row)} values for {width} columns"
                )
    _check_values(data, origin)


def _check_values(data: dict, origin: str) -> None:
    """What the schema does not say: one kind per call, and in every table ranks that are
    ranks of the run, partners that are ranks or partner codes, and counts, bytes and
    times that are whole numbers >= 0. (A rank of -1 was credited to the last rank, a
    partner past the last rank dropped without a note, and calls past the end of a short
    ``call_kinds`` taken for "misc", their bytes left out of the matrix.)"""
    calls, kinds = data["calls"], data["call_kinds"]
    if len(kinds) != len(calls):
        raise PetacommError(f"{origin}: call_kinds has {len(kinds)} entries for {len(calls)} calls")
    ranks = data["ranks"]
    for table in REQUIRED_COLUMNS:
        if table not in data:
            continue
        columns = data[table]["columns"]
        bounds = [_column_bounds(column, ranks) for column in columns]
        checked = [(j, b) for j, b in enumerate(bounds) if b is not None]
        names = [(j, c) for j, c in enumerate(columns) if c in _NAME_COLUMNS]
        for i, row in enumerate(data[table]["rows"]):
            for j, column in names:
                value = row[j]
                if not (isinstance(value, str) or (value is None and column == "parent")):
                    raise PetacommError(
                        f"{origin}: table '{table}' row {i}: {column} {value!r} is not a name"
                    )
            for j, (low, high) in checked:
                value = row[j]
                if (
                    isinstance(value, bool)
                    or not isinstance(value, int)
                    or value < low
                    or (high is not None and value > high)
                ):
                    column = columns[j]
                    expected = f"{low}..{high}" if high is not None else f">= {low}"
                    raise PetacommError(
                        f"{origin}: table '{table}' row {i}: {column} {value!r} is not a whole "
                        f"number in {expected}"
                    )


# Columns of names (a region's parent is null at the top).
_NAME_COLUMNS = ("region", "parent", "host")


def _column_bounds(column: str, ranks: int) -> tuple[int, int | None] | None:
    """(lowest, highest or None) of a column's whole numbers; None: not checked."""
    if column == "rank":
        return 0, ranks - 1
    if column == "peer":
        return PEER_OUTSIDE, ranks - 1
    if column in ("count", "bytes", "entries") or column.endswith("_ns"):
        return 0, None
    return None


def _read_json(path: Path) -> dict:
    kind = special_file_kind(path)
    if kind is not None:
        raise PetacommError(f"{path}: {kind}, not a profile log")
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError as err:
        raise PetacommError(f"{path}: no such file") from err
    except IsADirectoryError as err:
        raise PetacommError(f"{path}: a directory, not a profile log") from err
    except OSError as err:
        raise PetacommError(f"{path}: cannot read ({err.strerror})") from err
    try:
        data = loads_json(text)
    except json.JSONDecodeError as err:
        raise PetacommError(
            f"{path}: not JSON (line {err.lineno}: {err.msg}); a log being written is never "
            "visible half-written, so this file was damaged or is not a profile log"
        ) from err
    validate(data, str(path))
    return data


def _rows(data: dict, table: str, calls: list[str]) -> list[dict] | None:
    if table not in data:
        return None
    columns = data[table]["columns"]
    out = []
    for row in data[table]["rows"]:
        record = dict(zip(columns, row, strict=True))
        if "call" in record:
            call_id = record["call"]
            if not isinstance(call_id, int) or not 0 <= call_id < len(calls):
                raise PetacommError(f"table '{table}': call id {call_id!r} is not in 'calls'")
            record["call"] = calls[call_id]
        out.append(record)
    return out


def _profile(data: dict, source: Path) -> Profile:
    calls = data["calls"]
    kinds = dict(zip(calls, data["call_kinds"], strict=False))
    return Profile(
        source=source,
        complete=bool(data["complete"]),
        command=list(data["command"]),
        ranks=int(data["ranks"]),
        nodes=int(data.get("nodes", 0)),
        mpi_library=data.get("mpi_library", ""),
        thread_level=data.get("thread_level", ""),
        profiler=dict(data.get("profiler", {})),
        call_kinds=kinds,
        wall_ns=int(data.get("wall_ns", 0)),
        rank_rows=_rows(data, "rank_summary", calls) or [],
        region_rows=_rows(data, "region_summary", calls) or [],
        call_rows=_rows(data, "call_summary", calls) or [],
        call_rank_rows=_rows(data, "call_by_rank", calls),
        peer_rows=_rows(data, "peer_summary", calls),
        entry_rows=_rows(data, "entries", calls),
        callsite_rows=_rows(data, "callsites", calls),
        callsite_depth=int(data.get("callsite_depth", 0)),
        snapshot=int(data.get("snapshot", 0)),
        merge_errors=bool(data.get("merge_errors", False)),
    )


def summarise_entries(entries: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """(call_summary, call_by_rank, peer_summary) rows computed from full table entries."""
    calls: dict[tuple, dict] = {}
    per_rank_key: dict[tuple, int] = defaultdict(int)
    by_rank: dict[tuple, dict] = {}
    peers: dict[tuple, dict] = {}
    for e in entries:
        key = (e["region"], e["call"], e["size"], e["size_max"])
        c = calls.setdefault(
            key,
            {
                "region": e["region"],
                "call": e["call"],
                "size": e["size"],
                "size_max": e["size_max"],
                "count": 0,
                "bytes": 0,
                "time_ns": 0,
                "min_ns": None,
                "max_ns": 0,
            },
        )
        c["count"] += e["count"]
        c["bytes"] += e["bytes"]
        c["time_ns"] += e["time_ns"]
        lo = e.get("min_ns", 0)
        c["min_ns"] = lo if c["min_ns"] is None else min(c["min_ns"], lo)
        c["max_ns"] = max(c["max_ns"], e.get("max_ns", 0))
        per_rank_key[key + (e["rank"],)] += e["time_ns"]
        r = by_rank.setdefault(
            (e["rank"], e["call"]),
            {"rank": e["rank"], "call": e["call"], "count": 0, "bytes": 0, "time_ns": 0},
        )
        r["count"] += e["count"]
        r["bytes"] += e["bytes"]
        r["time_ns"] += e["time_ns"]
        if e["peer"] != PEER_NONE:
            p = peers.setdefault(
                (e["rank"], e["call"], e["peer"]),
                {
                    "rank": e["rank"],
                    "call": e["call"],
                    "peer": e["peer"],
                    "count": 0,
                    "bytes": 0,
                    "time_ns": 0,
                },
            )
            p["count"] += e["count"]
            p["bytes"] += e["bytes"]
            p["time_ns"] += e["time_ns"]
    rank_times: dict[tuple, list[int]] = defaultdict(list)
    for key_rank, t in per_rank_key.items():
        rank_times[key_rank[:4]].append(t)
    for key, c in calls.items():
        times = rank_times[key]
        c["ranks"] = len(times)
        c["rank_time_min_ns"] = min(times)
        c["rank_time_max_ns"] = max(times)
        c["min_ns"] = c["min_ns"] or 0
    return list(calls.values()), list(by_rank.values()), list(peers.values())


_RANK_FILE = re.compile(r"^rank-(\d+)\.live$")


def _load_partial_dir(directory: Path) -> Profile:
    from petacomm.profile import live

    files = sorted(
        (int(m.group(1)), p)
        for p in directory.iterdir()
        if (m := _RANK_FILE.match(p.name)) and p.is_file()
    )
    if not files:
        raise PetacommError(f"{directory}: no partial logs (rank-N.live) in this directory")
    runs: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    notes = []
    for _, path in files:
        try:
            data = live.read(path)
        except PetacommError as err:
            notes.append(f"skipped {err}")
            continue
        if data["finished"]:
            notes.append(f"skipped {path.name}: its rank reached MPI_Finalize (see the final log)")
            continue
        validate(data, str(path))
        runs[data["run"]].append((path, data))
    if not runs:
        raise PetacommError(f"{directory}: no readable partial logs ({'; '.join(notes)})")
    # Files of earlier runs written to the same log name: the newest run is the one.
    newest = max(runs, key=lambda r: max(d["created_unix_s"] for _, d in runs[r]))
    if len(runs) > 1:
        others = sum(len(v) for k, v in runs.items() if k != newest)
        notes.append(f"ignored {others} partial logs of earlier runs in {directory}")
    first: Profile | None = None
    ranks_rows, region_rows, entries = [], [], []
    reasons: dict[int, str] = {}
    in_flight: dict[int, dict] = {}
    seen: dict[int, Path] = {}
    for path, data in runs[newest]:
        rank = int(data["rank"])
        if rank in seen:  # a copied file: its rank's calls would count twice
            raise PetacommError(
                f"{path}: rank {rank} again (also {seen[rank].name}, same run): the partial "
                "logs are damaged"
            )
        seen[rank] = path
        profile = _profile(data, path)
        if first is None:
            first = profile
        elif profile.ranks != first.ranks:
            raise PetacommError(
                f"{path}: from a run of {profile.ranks} ranks, but another file of the same "
                f"run says {first.ranks}: the partial logs are damaged"
            )
        reasons[rank] = data["partial_reason"]
        if data.get("in_flight"):
            in_flight[rank] = data["in_flight"]
        ranks_rows += profile.rank_rows
        region_rows += profile.region_rows
        entries += profile.entry_rows or []
    assert first is not None
    call_rows, call_rank_rows, peer_rows = summarise_entries(entries)
    wall = max((r["wall_ns"] for r in ranks_rows), default=0)
    missing = sorted(set(range(first.ranks)) - set(reasons))
    return Profile(
        source=directory,
        complete=False,
        command=first.command,
        ranks=first.ranks,
        nodes=first.nodes,
        mpi_library=first.mpi_library,
        thread_level=first.thread_level,
        profiler=first.profiler,
        call_kinds=first.call_kinds,
        wall_ns=wall,
        rank_rows=sorted(ranks_rows, key=lambda r: r["rank"]),
        region_rows=region_rows,
        call_rows=call_rows,
        call_rank_rows=call_rank_rows,
        peer_rows=peer_rows,
        entry_rows=entries,
        partial_reasons=reasons,
        missing_ranks=missing,
        in_flight=in_flight,
        notes=notes,
    )


def load(path: str | Path) -> Profile:
    """Reads a final log, a partial-log directory, or the final log's path when only its
    partial logs exist (the run never reached MPI_Finalize)."""
    path = Path(path)
    if path.is_dir():
        return _load_partial_dir(path)
    if not path.exists():
        partial = path.with_name(path.name + ".partial")
        if partial.is_dir():
            return _load_partial_dir(partial)
        raise PetacommError(f"{path}: no such profile log (nor partial logs in {partial.name}/)")
    if _RANK_FILE.match(path.name):
        return _load_partial_dir(path.parent)
    data = _read_json(path)
    profile = _profile(data, path)
    if not profile.complete:
        raise PetacommError(f"{path}: a partial log; give its directory ({path.parent})")
    return profile
