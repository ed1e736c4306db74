"""Progress of long commands on standard error: a bar on a terminal, plain lines otherwise.

Every command that can run for more than a few seconds (``netbench``, ``map``, ``bench map``,
...) shows its progress the same way::

    with Progress("netbench", quiet=args.quiet) as progress:
        progress.start(total, "sizes measured")
        for item in work:
            ...
            progress.advance(detail="allreduce 64 KiB")

* On a terminal, one line redrawn in place (``netbench: sizes measured [#####....] 12/40``),
  erased when the block ends, so the command's own output is not interleaved with it.
* Otherwise (a log file, a pipe, CI) plain lines, at most one per tenth of the work or per
  ``LINE_INTERVAL_S`` seconds, so logs stay short.
* Nothing with ``quiet=True`` or ``PETACOMM_PROGRESS=never``; nothing either for commands
  that end within ``DELAY_S`` seconds (short runs need no progress). ``PETACOMM_PROGRESS=
  always`` shows it from the start (used by the tests).

Progress goes to standard error so that standard output (tables, JSON) stays clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

DELAY_S = 1.0
LINE_INTERVAL_S = 10.0
REDRAW_INTERVAL_S = 0.1
MAX_WIDTH = 100


def progress_mode() -> str:
    """PETACOMM_PROGRESS: auto (unset or empty), always or never; PetacommError naming the
    variable for anything else ('off' and '0' were taken for auto). The command checks it
    before it runs anything (cli.main), not when its first progress line starts."""
    mode = os.environ.get("PETACOMM_PROGRESS", "auto").strip().lower() or "auto"
    if mode not in ("auto", "always", "never"):
        from petacomm.errors import PetacommError

        raise PetacommError(
            f"PETACOMM_PROGRESS: expected auto, always or never, got "
            f"{os.environ['PETACOMM_PROGRESS']!r}"
        )
    return mode


class Progress:
    def __init__(self, label: str, quiet: bool = False, stream=None, clock=time.monotonic):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        mode = progress_mode()
        self.enabled = not quiet and mode != "never"
        self.delay = 0.0 if mode == "always" else DELAY_S
        try:
            self.terminal = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.terminal = False
        self.started = clock()
        self.total = 0
        self.done = 0
        self.unit = ""
        self.detail = ""
        self._last_draw = -1e9
        self._last_line_tenth = -1
        self._drawn = False

    # ---- what the command reports -----------------------------------------------------
    def start(self, total: int, unit: str) -> None:
        """A new stage of ``total`` steps counted in ``unit`` (e.g. 'sizes measured')."""
        self.total, self.done, self.unit, self.detail = max(0, int(total)), 0, unit, ""
        self._last_line_tenth = -1
        self._show(force=False)

    def status(self, text: str) -> None:
        """A stage without a count (e.g. 'launching 4 ranks')."""
        self.total, self.done, self.unit, self.detail = 0, 0, text, ""
        self._last_line_tenth = -1
        self._show(force=False)

    def tick(self) -> None:
        """Nothing new, time passed: redraws the elapsed time (throttled like any update)."""
        self._show(force=False)

    def advance(self, steps: int = 1, detail: str = "") -> None:
        self.done = min(self.done + steps, self.total) if self.total else self.done + steps
        self.detail = detail
        self._show(force=bool(self.total) and self.done == self.total)

    # ---- drawing ------------------------------------------------------------------------
    def _text(self, width: int) -> str:
        elapsed = self.clock() - self.started
        head = f"{self.label}: {self.unit}"
        tail = f" {elapsed:.0f} s" + (f"  {self.detail}" if self.detail else "")
        if not self.total:
            return (head + tail)[:width]
        count = f" {self.done}/{self.total}"
        room = width - len(head) - len(count) - len(tail) - 3
        if self.terminal and room >= 10:
            filled = room * self.done // self.total
            bar = " [" + "#" * filled + "." * (room - filled) + "]"
        else:
            bar = ""
        return (head + bar + count + tail)[:width]

    def _show(self, force: bool) -> None:
        """Draws unless throttled; ``force`` (the last step) bypasses the redraw interval,
        never the start-up delay."""
        if not self.enabled:
            return
        now = self.clock()
        if now - self.started < self.delay:
            return
        if self.terminal:
            if now - self._last_draw < REDRAW_INTERVAL_S and not force:
                return
            width = min(MAX_WIDTH, shutil.get_terminal_size((80, 24)).columns) - 1
            self.stream.write("\r" + self._text(width).ljust(width))
            self._drawn = True
        else:
            tenth = 10 * self.done // self.total if self.total else 0
            new_stage = self._last_line_tenth < 0
            if not (new_stage or tenth > self._last_line_tenth) and (
                now - self._last_draw < LINE_INTERVAL_S
            ):
                return
            self._last_line_tenth = tenth
            self.stream.write(self._text(MAX_WIDTH) + "\n")
        self._last_draw = now
        self.stream.flush()

    def close(self) -> None:
        """Erases the bar (terminal); plain lines stay as they are."""
        if self.enabled and self.terminal and self._drawn:
            width = min(MAX_WIDTH, shutil.get_terminal_size((80, 24)).columns) - 1
            self.stream.write("\r" + " " * width + "\r")
            self.stream.flush()
        self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


TICK_S = 0.25


def run_showing_progress(
    label: str, what: str, argv: list[str], quiet: bool = False, **popen
) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True)`` for a long child (an MPI job
    whose output is only read at the end), showing ``label: what  N s`` while it runs: the
    elapsed time redrawn on a terminal, a plain line every ``LINE_INTERVAL_S`` otherwise."""
    with Progress(label, quiet=quiet) as progress:
        progress.status(what)
        from petacomm.launch import start_job, stop_session

        child = start_job(argv, **popen)
        try:
            while True:
                try:
                    out, err = child.communicate(timeout=TICK_S)
                    break
                except subprocess.TimeoutExpired:
                    progress.tick()
        except BaseException:  # interrupted: never leave the job (launcher and ranks) running
            stop_session(child)
            raise
    return subprocess.CompletedProcess(argv, child.returncode, out, err)
