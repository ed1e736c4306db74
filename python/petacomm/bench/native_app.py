"""Running a native mini-app under mpiexec for a benchmark command and reading the JSON it
writes (``--json FILE``); a failed run raises PetacommError carrying the app's own error."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from petacomm.errors import PetacommError, refuse_repeats
from petacomm.progress import run_showing_progress


def run_app_json(
    launcher, program: str, ranks: int, args: list[str], *, label: str, quiet: bool = False
) -> dict:
    """Runs ``program ARGS --json TMP`` on ``ranks`` ranks; returns the parsed JSON. While it
    runs, ``label`` (the command) and the elapsed time are shown on standard error unless
    ``quiet``."""
    name = Path(program).name
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as scratch:
        out = Path(scratch) / "run.json"
        # Open MPI 5 prints an osc/ucx error for every shared-memory window (the node-aware
        # strategies create one) where UCX has no transport; the node layer does not use it.
        extra = ["--mca", "osc", "^ucx"] if launcher.vendor == "openmpi" else []
        argv = launcher.command(ranks, [program, *map(str, args), "--json", str(out)], extra)
        done = run_showing_progress(label, f"{name} on {ranks} ranks", argv, quiet=quiet)
        if done.returncode != 0 or not out.exists():
            lines = [ln for ln in done.stderr.splitlines() if ln.startswith(f"{name}: error:")]
            why = lines[0] if lines else (done.stderr or done.stdout).strip()[-2000:]
            raise PetacommError(f"{name} on {ranks} ranks failed (exit {done.returncode}): {why}")
        return json.loads(out.read_text())


def node_sizes_option(text: str) -> list[int]:
    """``--node-sizes``: virtual node sizes of the node-aware variants (0: the whole node);
    ``none``: no node-aware runs."""
    if text == "none":
        return []
    try:
        sizes = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise PetacommError(f"--node-sizes: expected integers or none, got '{text}'") from None
    if not sizes or min(sizes) < 0:
        raise PetacommError(f"--node-sizes: expected integers >= 0 or none, got '{text}'")
    refuse_repeats(sizes, "--node-sizes")  # each size was run, and shown, twice
    return sizes
