"""Reading a rank's live file (``LOG.partial/rank-N.live``): the profiler's per-rank data as
it was when the rank stopped, whatever stopped it.

While a run is profiled each rank keeps its counters, regions and call table in a shared
mapping of that file (native/src/prof/live.cpp), so the data survives MPI_Abort, signals,
SIGKILL and crashes; a successful MPI_Finalize removes the file. The file starts with a fixed
prefix (magic, layout version, the offset and size of a JSON text); that JSON holds the log
header and the offset and type of every field, so this reader follows the layout the
profiler that wrote the file describes.

:func:`read` returns the same dictionary a per-rank partial log in JSON has
(``profile-log.schema.json``, ``complete: false``), plus ``in_flight``: the MPI call the rank
was blocked in when it stopped, which counts as MPI time, not computation.
"""

from __future__ import annotations

import json
import signal
import struct
from pathlib import Path

import numpy as np

from petacomm.errors import PetacommError

MAGIC = b"PCPROFL\0"
LAYOUT_VERSION = 1
STATE_FINISHED = 1
REGION_COARSE = 0xFFFF
NO_REASON = "no reason recorded (killed by SIGKILL, or still running)"
_PREFIX = struct.Struct("<8sIIQQ")
_SCALARS = {"u64": "<u8", "i32": "<i4", "u16": "<u2"}
_SIGNALS = {int(s) for s in signal.Signals}


def _dtype(layout: dict) -> np.dtype:
    names, formats, offsets = [], [], []
    for name, (offset, kind) in layout["fields"].items():
        names.append(name)
        offsets.append(offset)
        if kind in _SCALARS:
            formats.append(_SCALARS[kind])
        elif kind.startswith("char["):
            formats.append(f"S{int(kind[5:-1])}")
        elif kind.startswith("i32["):
            formats.append(("<i4", (int(kind[4:-1]),)))
        else:
            raise PetacommError(f"unknown field type {kind!r} in a live file's layout")
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": layout["bytes"]}
    )


def decode_name(raw: bytes) -> str:
    """Bytes as the profiler writes them in JSON: UTF-8, other bytes as the character of the
    same value (\\u00XX)."""
    text = raw.split(b"\0", 1)[0].decode("utf-8", errors="surrogateescape")
    return "".join(chr(ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)


def read(path: Path) -> dict:
    """The partial log of one rank from its live file; PetacommError when it is not one."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise PetacommError(f"{path}: cannot read ({err.strerror})") from err
    if len(data) < _PREFIX.size:
        raise PetacommError(f"{path}: not a profiler live file (too short)")
    magic, version, _, meta_offset, meta_bytes = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise PetacommError(f"{path}: not a profiler live file (or its rank was still starting)")
    if version > LAYOUT_VERSION:
        raise PetacommError(
            f"{path}: written by a newer petacomm (live layout {version}; this one reads "
            f"{LAYOUT_VERSION}): upgrade petacomm"
        )
    try:
        meta = json.loads(data[meta_offset : meta_offset + meta_bytes].decode("utf-8"))
        _check_metadata(meta, path)
        layout = meta["layout"]
        live = np.frombuffer(data, dtype=_dtype(layout["live"]), count=1)[0]
        region_t = _dtype(layout["region"])
        entry_t = _dtype(layout["entry"])
        regions = np.frombuffer(
            data, dtype=region_t, count=int(live["nregions"]), offset=int(live["regions_offset"])
        )
        table = np.frombuffer(
            data, dtype=entry_t, count=int(live["table_entries"]), offset=int(live["table_offset"])
        )
        fallback = np.frombuffer(
            data,
            dtype=entry_t,
            count=int(live["fallback_entries"]),
            offset=int(live["fallback_offset"]),
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise PetacommError(f"{path}: damaged profiler live file ({err})") from err
    try:
        return _partial_log(meta, live, regions, np.concatenate([table, fallback]))
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise PetacommError(f"{path}: damaged profiler live file ({err!r})") from err


# What the partial log is made of besides the counters (native/src/prof/live.cpp writes them).
_METADATA_KEYS = ("run", "rank", "host", "pid", "clock_ns_at_unix_s", "header", "size_key_flags")


def _check_metadata(meta, path: Path) -> None:
    """PetacommError naming the file and the first key its metadata lacks (a KeyError, and
    so a traceback, from report and map before)."""
    if not isinstance(meta, dict):
        raise PetacommError(f"{path}: damaged profiler live file: its metadata is not an object")
    for key in (*_METADATA_KEYS, "layout"):
        if key not in meta:
            raise PetacommError(f"{path}: damaged profiler live file: its metadata has no '{key}'")
    if not isinstance(meta["header"], dict) or "calls" not in meta["header"]:
        raise PetacommError(
            f"{path}: damaged profiler live file: its metadata's header has no 'calls'"
        )


def _partial_log(meta: dict, live, regions, entries) -> dict:
    header = meta["header"]
    calls = header["calls"]
    rank = int(meta["rank"])
    t_start, end = int(live["t_start_ns"]), int(live["heartbeat_ns"])
    end = max(end, t_start)
    busy_since = int(live["busy_since_ns"])
    busy = busy_since > 0
    in_flight_ns = max(end - busy_since, 0) if busy else 0
    mpi_end = int(live["mpi_ns"]) + in_flight_ns  # the call it was blocked in is MPI time
    io_end = int(live["io_ns"])
    names = [decode_name(bytes(r["name"])) for r in regions]
    cur_region = int(live["cur_region"])
    region_rows = []
    for i, r in enumerate(regions):
        wall, mpi, io = int(r["wall_ns"]), int(r["mpi_ns"]), int(r["io_ns"])
        excl_wall, excl_mpi = int(r["excl_wall_ns"]), int(r["excl_mpi_ns"])
        if int(r["open_depth"]) > 0:  # still open: counts up to the end
            wall += end - int(r["open_t"])
            mpi += mpi_end - int(r["open_mpi"])
            io += io_end - int(r["open_io"])
        if i == cur_region:
            excl_wall += max(end - int(live["excl_mark"]), 0)
        if i == int(live["busy_region"]) and in_flight_ns:
            excl_mpi += in_flight_ns
        parent = int(r["parent"])
        region_rows.append(
            [rank, names[i], names[parent] if 0 <= parent < len(names) else None]
            + [int(r["entries"]), wall, mpi, io, excl_wall, excl_mpi, int(r["excl_io_ns"])]
            + [int(r["lbst_ns"])]
        )
    used = entries[entries["count"] > 0]
    flags = int(meta["size_key_flags"])
    rows = []
    for e in used:
        region = int(e["region"])
        key = int(e["size_key"])
        rows.append(
            [
                rank,
                "(coarsened)" if region == REGION_COARSE else _name(names, region),
                int(e["call"]),
                0 if key == 2**64 - 1 else key & ~flags,
                int(e["size_max"]),
                int(e["peer"]),
                int(e["count"]),
                int(e["bytes"]),
                int(e["time_ns"]),
                int(e["min_ns"]),
                int(e["max_ns"]),
            ]
        )
    in_flight = None
    if busy:
        call = int(live["busy_call"])
        region = _name(names, int(live["busy_region"]))
        in_flight = {
            "call": calls[call] if 0 <= call < len(calls) else "(unknown)",
            "region": region,
            "ns": in_flight_ns,
            "threads": int(live["busy_threads"]),
        }
        # The call in flight is a call made: counted, with the time it had been blocked.
        rows.append([rank, region, call, 0, 0, -1, 1, 0, in_flight_ns, in_flight_ns, in_flight_ns])
    reason = decode_name(bytes(live["reason"]))
    if not reason:
        last = int(live["last_signal"])
        reason = NO_REASON
        if last:
            name = signal.Signals(last).name if last in _SIGNALS else f"signal {last}"
            reason = f"no reason recorded (last signal {name}, then killed by SIGKILL?)"
    clock0, unix0 = meta["clock_ns_at_unix_s"]
    rank_row = [
        rank,
        meta["host"],
        int(meta["pid"]),
        end - t_start,
        mpi_end,
        io_end,
        int(live["rss_kib"]),  # as of the last heartbeat or signal
        int(live["init_ns"]),
        int(live["events"]),
        int(live["coarsened_peer"]),
        int(live["coarsened_size"]),
        int(live["coarsened_call"]),
        int(live["requests_untracked"]),
        int(live["requests_incomplete"]),
        int(live["region_errors"]),
        int(live["used_keys"]),
    ]
    return {
        **header,
        "complete": False,
        "partial_reason": reason,
        "rank": rank,
        "run": meta["run"],
        "finished": int(live["state"]) == STATE_FINISHED,
        "created_unix_s": int(unix0 + (end - int(clock0)) / 1e9),
        "in_flight": in_flight,
        "rank_summary": {"columns": RANK_COLUMNS, "rows": [rank_row]},
        "region_summary": {"columns": REGION_COLUMNS, "rows": region_rows},
        "entries": {"columns": ENTRY_COLUMNS, "rows": rows},
    }


def _name(names: list[str], index: int) -> str:
    return names[index] if 0 <= index < len(names) else "(unknown)"


RANK_COLUMNS = [
    "rank",
    "host",
    "pid",
    "wall_ns",
    "mpi_ns",
    "io_ns",
    "rss_kib",
    "init_ns",
    "events",
    "coarsened_peer",
    "coarsened_size",
    "coarsened_call",
    "requests_untracked",
    "requests_incomplete",
    "region_errors",
    "keys",
]
REGION_COLUMNS = [
    "rank",
    "region",
    "parent",
    "entries",
    "wall_ns",
    "mpi_ns",
    "io_ns",
    "excl_wall_ns",
    "excl_mpi_ns",
    "excl_io_ns",
    "lbst_ns",
]
ENTRY_COLUMNS = [
    "rank",
    "region",
    "call",
    "size",
    "size_max",
    "peer",
    "count",
    "bytes",
    "time_ns",
    "min_ns",
    "max_ns",
]
