"""The communication description language: a few words that say who talks to whom.

Grammar (statements are separated by newlines or ``;``; ``#`` starts a comment; a statement
may directly follow another on the same line, so ``grid2d 128x128 box 1MiB`` is one line)::

    program    := statement*
    statement  := grid | ranks | phase | traffic
    grid       := ("grid" | "grid1d" | "grid2d" | "grid3d") DIMS grid-option*
    DIMS       := INT ("x" INT)*                      e.g. 128x128
    grid-option:= "periodic" | "open" | "periodic=" FLAGS | "row-major" | "column-major"
    FLAGS      := ("0"|"1") ("," ("0"|"1"))*          one flag per dimension
    ranks      := "ranks" INT                         rank count when no grid is given
    phase      := "phase" [NAME] ["x"INT] ["untimed"] ["nobarrier"]
                                                      start a phase, run INT times (x3);
                                                      untimed: not counted (what runs before
                                                      a benchmark starts its clock);
                                                      nobarrier: each rank starts it when done
                                                      with the phase before (ordered phases
                                                      always do)
    traffic    := ("star" | "box") SIZE               halo exchange with 2d / 3^d-1 neighbours
               | "rows" SIZE | "columns" SIZE         all-to-all along the last / first axis
               | "line" AXIS SIZE                     all-to-all along one axis
               | "plane" AXIS "," AXIS SIZE           all-to-all in a plane of two axes
               | ("diagonals" | "antidiagonals") SIZE all-to-all along diagonal lines
               | "offsets" OFFSET+ SIZE               to each offset: offsets (2,0) (-2,0) 1KiB
               | "alltoall" SIZE [ALGORITHM]          ALGORITHM: linear (default: all at
                                                      once), bruck, xor, pairwise (rounds of
                                                      sendrecv, each message released by the
                                                      ones its ranks waited for)
               | "allreduce" SIZE [ALGORITHM]         ALGORITHM: rdb (default: recursive
                                                      doubling), redbcast (binomial reduce,
                                                      then broadcast); ordered like alltoall's
               | "barrier" [ALGORITHM]                empty messages, ordered: rdb (default:
                                                      recursive doubling), bruck (dissemination),
                                                      tree (binomial fan-in, fan-out)
               | "ring" SIZE ["both"]                 rank i -> i+1 (and i-1 with both)
               | "matrix" PATH                        measured bytes matrix (.csv / .npy)
               | "graph" NAME ["seed=" INT]           an irregular benchmark graph (rgg,
                                                      delaunay, cmb: topology/irregular_graphs)
               | "profile" PATH                       profiler JSON log
    OFFSET     := "(" INT ("," INT)* ")"              one component per grid axis, no spaces
    AXIS       := INT | "x" | "y" | "z"               0-based, x = axis 0
    SIZE       := NUMBER [UNIT]                        B, KiB, MiB, GiB, kB, MB, GB (default B)

Defaults: a grid is non-periodic and row-major (last coordinate fastest). Traffic before the
first ``phase`` forms phase "main". Sizes are bytes per message. Errors raise
:class:`PatternSyntaxError` with the line, column and what was expected.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path

from petacomm.topology import pattern as pat
from petacomm.topology import schedules
from petacomm.topology.measured import load_matrix_file, read_profile_log
from petacomm.units import parse_size

GRID_WORDS = ("grid", "grid1d", "grid2d", "grid3d")
# Larger messages than this are typing errors (1e30), not patterns: they would only print
# meaningless figures.
MAX_MESSAGE_BYTES = 1 << 50
TRAFFIC_WORDS = (
    "star",
    "box",
    "rows",
    "columns",
    "line",
    "plane",
    "diagonals",
    "antidiagonals",
    "offsets",
    "alltoall",
    "allreduce",
    "barrier",
    "ring",
    "matrix",
    "profile",
    "graph",
)
STATEMENT_WORDS = (*GRID_WORDS, "ranks", "phase", *TRAFFIC_WORDS)
PHASE_OPTIONS = ("untimed", "nobarrier")


class PatternSyntaxError(ValueError):
    """A description that does not parse: carries line, column and what was expected."""

    def __init__(self, line: int, column: int, expected: str, got: str):
        self.line, self.column, self.expected, self.got = line, column, expected, got
        super().__init__(f"pattern line {line}, column {column}: expected {expected}, got {got}")


@dataclass(frozen=True)
class Token:
    text: str
    line: int
    column: int
    kind: str  # "word" or "sep" (statement separator) or "end"


_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s;#]+|;|#[^\n]*|\n')


_MAX_OFFSET = 2**31 - 1
# Counts and extents have at most this many digits (below 10^18: int64 holds them), checked
# before int(), whose time grows with the square of the digits.
_DIGITS = 18


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    for m in _TOKEN_RE.finditer(text):
        s = m.group(0)
        if s.startswith("#"):
            continue
        line = bisect.bisect_right(line_starts, m.start())  # np.searchsorted copied the list
        col = m.start() - line_starts[line - 1] + 1
        if s in (";", "\n"):
            tokens.append(Token(s, line, col, "sep"))
        elif s.startswith('"') and not (len(s) > 1 and s.endswith('"')):
            # Not a quoted string (that alternative comes first): a quote left open, whose
            # first and last characters were taken for quotes ('"abc' opened 'ab').
            raise PatternSyntaxError(line, col, "a closing quote", repr(s))
        else:
            tokens.append(Token(s[1:-1] if s.startswith('"') else s, line, col, "word"))
    last_line = len(line_starts)
    last_col = len(text) - line_starts[-1] + 1
    tokens.append(Token("", last_line, last_col, "end"))
    return tokens


def _show(tok: Token) -> str:
    if tok.kind == "end":
        return "end of input"
    if tok.kind == "sep":
        return "end of line" if tok.text == "\n" else "';'"
    if len(tok.text) > 40:  # a 5,000-digit number is shown by its start and length
        return f"{tok.text[:24]!r}... ({len(tok.text)} characters)"
    return repr(tok.text)


class _Parser:
    def __init__(
        self,
        text: str,
        base_dir: Path | None,
        default_ranks: int | None,
        max_ranks: tuple[int, str] | None = None,
    ):
        self.tokens = tokenize(text)
        self.pos = 0
        self.base_dir = base_dir or Path.cwd()
        self.default_ranks = default_ranks
        self.max_ranks = max_ranks
        self.grid: pat.LogicalGrid | None = None
        self.nranks: int | None = None
        self.phases: list[dict] = []
        self.current: dict | None = None
        self.notes: list[str] = []

    # -- token helpers ------------------------------------------------------------------------
    def peek(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "end":
            self.pos += 1
        return tok

    def fail(self, tok: Token, expected: str):
        raise PatternSyntaxError(tok.line, tok.column, expected, _show(tok))

    def word(self, expected: str) -> Token:
        tok = self.next()
        if tok.kind != "word":
            self.fail(tok, expected)
        return tok

    def size(self) -> float:
        tok = self.word("a message size (e.g. 1MiB, 64KiB, 8)")
        try:
            value = parse_size(tok.text)
        except ValueError:
            self.fail(tok, "a message size (e.g. 1MiB, 64KiB, 8)")
        if not 1 <= value <= MAX_MESSAGE_BYTES:
            self.fail(tok, "a message size from 1 B to 1 PiB")
        return value

    def algorithm(self, choices: tuple[str, ...], default: str) -> str:
        """A collective's optional algorithm word (any case), else ``default``."""
        tok = self.peek()
        if tok.kind == "word" and tok.text.lower() in choices:
            return self.next().text.lower()
        return default

    def integer(self, expected: str) -> int:
        tok = self.word(expected)
        digits = re.fullmatch(r"[0-9]+", tok.text) is not None
        too_long = digits and len(tok.text) > _DIGITS
        if not digits or too_long or int(tok.text) < 1:
            self.fail(tok, f"{expected} below 10^{_DIGITS}" if too_long else expected)
        return int(tok.text)

    # -- statements ---------------------------------------------------------------------------
    def parse(self) -> pat.CommPattern:
        while True:
            tok = self.peek()
            if tok.kind == "end":
                break
            if tok.kind == "sep":
                self.next()
                continue
            low = tok.text.lower()
            if low in GRID_WORDS:
                self.statement_grid()
            elif low == "ranks":
                self.next()
                count_tok = self.peek()
                count = self.integer("a positive rank count")
                if self.grid is not None and count != self.grid.nranks:
                    self.fail(count_tok, f"{self.grid.nranks} ranks (the grid's size)")
                self.check_fits(count_tok, count)
                self.nranks = count
            elif low == "phase":
                self.statement_phase()
            elif low in TRAFFIC_WORDS:
                self.statement_traffic()
            else:
                self.fail(tok, "a statement (" + ", ".join(STATEMENT_WORDS) + ")")
        return self.finish()

    def statement_grid(self):
        kw = self.next()
        low = kw.text.lower()
        dims_tok = self.word("grid dimensions like 128x128")
        extent = f"[0-9]{{1,{_DIGITS}}}"
        if not re.fullmatch(f"{extent}(x{extent})*", dims_tok.text) or any(
            int(d) < 1 for d in dims_tok.text.split("x")
        ):
            self.fail(
                dims_tok,
                f"grid dimensions like 128x128 (integers from 1 to 10^{_DIGITS} - 1 joined by x)",
            )
        dims = tuple(int(d) for d in dims_tok.text.split("x"))
        if low != "grid" and len(dims) != int(low[4]):
            self.fail(dims_tok, f"{low[4]} dimensions for {low}")
        periodic = (False,) * len(dims)
        order = "row"
        while self.peek().kind == "word" and self.peek().text.lower() not in STATEMENT_WORDS:
            opt = self.next()
            o = opt.text.lower()
            if o == "periodic":
                periodic = (True,) * len(dims)
            elif o == "open":
                periodic = (False,) * len(dims)
            elif o.startswith("periodic="):
                flags = o.split("=", 1)[1].split(",")
                if len(flags) != len(dims) or any(f not in ("0", "1") for f in flags):
                    self.fail(opt, f"periodic= with {len(dims)} comma-separated 0/1 flags")
                periodic = tuple(f == "1" for f in flags)
            elif o in ("row-major", "row"):
                order = "row"
            elif o in ("column-major", "column", "col-major"):
                order = "column"
            else:
                self.fail(
                    opt,
                    "a grid option (periodic, open, periodic=FLAGS, row-major, column-major) "
                    "or a statement",
                )
        self.grid = pat.LogicalGrid(dims, periodic, order)
        if self.nranks is not None and self.nranks != self.grid.nranks:
            self.fail(dims_tok, f"a grid of {self.nranks} ranks (set by 'ranks')")
        self.check_fits(dims_tok, self.grid.nranks)
        self.nranks = self.grid.nranks

    def check_fits(self, tok: Token, count: int) -> None:
        """Refuses a rank count over ``max_ranks`` where it is set, before any traffic is
        built (a graph of 100,000 ranks took minutes, then did not fit 16 slots)."""
        if self.max_ranks is not None and count > self.max_ranks[0]:
            self.fail(tok, f"at most {self.max_ranks[0]} ranks ({self.max_ranks[1]})")

    def statement_phase(self):
        kw = self.next()
        name = f"phase {len(self.phases) + 1}"
        repeat = 1
        tok = self.peek()
        if tok.kind == "word" and tok.text.lower() not in (*STATEMENT_WORDS, *PHASE_OPTIONS):
            if not re.fullmatch(r"x[0-9]+", tok.text):
                name = self.next().text
                tok = self.peek()
            if tok.kind == "word" and re.fullmatch(r"x[0-9]+", tok.text):
                self.next()
                # Bounded before int(): 4,300 digits and more are refused by Python itself,
                # and a count no float holds overflowed when the phase's time was summed.
                if len(tok.text) > 1 + _DIGITS or int(tok.text[1:]) < 1:
                    self.fail(tok, f"a repeat count from x1 to x{'9' * _DIGITS}")
                repeat = int(tok.text[1:])
        options = set()
        while self.peek().kind == "word" and self.peek().text.lower() in PHASE_OPTIONS:
            options.add(self.next().text.lower())
        self.open_phase(
            name, repeat, kw, timed="untimed" not in options, barrier="nobarrier" not in options
        )

    def open_phase(self, name: str, repeat: int, kw, timed: bool = True, barrier: bool = True):
        """Start collecting the traffic of a phase."""
        self.current = {
            "name": name,
            "repeat": repeat,
            "parts": [],
            "token": kw,
            "timed": timed,
            "barrier": barrier,
        }
        self.phases.append(self.current)

    def need_grid(self, kw: Token, dims: tuple[int, ...] = (1, 2, 3)) -> pat.LogicalGrid:
        if self.grid is None:
            self.fail(kw, f"a 'grid' statement before '{kw.text}'")
        if self.grid.ndim not in dims:
            self.fail(
                kw,
                f"a statement valid on a {self.grid.ndim}-D grid ('{kw.text}' needs "
                f"{' or '.join(map(str, dims))} dimensions)",
            )
        return self.grid

    def need_ranks(self, kw: Token) -> int:
        if self.nranks is None:
            if self.default_ranks is None:
                self.fail(kw, f"a 'grid' or 'ranks' statement before '{kw.text}'")
            self.nranks = self.default_ranks
        return self.nranks

    def axis(self, grid: pat.LogicalGrid) -> int:
        tok = self.word("an axis (0-based number or x, y, z)")
        return self._axis_value(tok, tok.text, grid)

    def _axis_value(self, tok: Token, text: str, grid: pat.LogicalGrid) -> int:
        t = text.lower()
        # ASCII digits only: str.isdigit() and int() also take '١' (Arabic-Indic one), and
        # isdigit() takes '²', which int() then refused with a traceback's words.
        digits = re.fullmatch("[0-9]{1,3}", t) is not None
        value = "xyz".index(t) if t in ("x", "y", "z") else (int(t) if digits else -1)
        if not 0 <= value < grid.ndim:
            self.fail(tok, f"an axis in 0..{grid.ndim - 1} (or x..{'xyz'[grid.ndim - 1]})")
        return value

    def statement_traffic(self):
        kw = self.next()
        low = kw.text.lower()
        try:
            messages, nranks = self._traffic(kw, low)
        except ValueError as err:
            if isinstance(err, PatternSyntaxError):
                raise
            raise PatternSyntaxError(
                kw.line, kw.column, f"a valid '{low}' statement", str(err)
            ) from None
        if self.nranks is None:
            self.nranks = nranks
        elif nranks != self.nranks:
            self.fail(kw, f"traffic over {self.nranks} ranks ('{low}' has {nranks})")
        if self.current is None:
            self.open_phase("main", 1, kw)
        self.current["parts"].append(messages)

    def _traffic(self, kw: Token, low: str):
        if low in ("star", "box"):
            grid = self.need_grid(kw)
            return pat.stencil(grid, low, self.size()), grid.nranks
        if low in ("rows", "columns"):
            grid = self.need_grid(kw, (2, 3))
            axis = grid.ndim - 1 if low == "rows" else 0
            return pat.dimension_alltoall(grid, (axis,), self.size()), grid.nranks
        if low == "line":
            grid = self.need_grid(kw)
            axis = self.axis(grid)
            return pat.dimension_alltoall(grid, (axis,), self.size()), grid.nranks
        if low == "plane":
            grid = self.need_grid(kw, (2, 3))
            tok = self.word("two axes like 0,1")
            parts = tok.text.split(",")
            if len(parts) != 2:
                self.fail(tok, "two axes separated by a comma, like 0,1")
            axes = {self._axis_value(tok, p, grid) for p in parts}
            if len(axes) != 2:
                self.fail(tok, "two different axes")
            return pat.dimension_alltoall(grid, axes, self.size()), grid.nranks
        if low in ("diagonals", "antidiagonals"):
            grid = self.need_grid(kw, (2, 3))
            return pat.diagonal_groups(grid, self.size(), anti=low == "antidiagonals"), (
                grid.nranks
            )
        if low == "offsets":
            grid = self.need_grid(kw)
            offsets = []
            while self.peek().kind == "word" and self.peek().text.startswith("("):
                tok = self.next()
                m = re.fullmatch(r"\(([+-]?[0-9]+(?:,[+-]?[0-9]+)*)\)", tok.text)
                example = "(" + ",".join(["1"] + ["0"] * (grid.ndim - 1)) + ")"
                if not m or len(m.group(1).split(",")) != grid.ndim:
                    self.fail(tok, f"an offset with {grid.ndim} component(s) like {example}")
                offset = [int(v) for v in m.group(1).split(",")]
                # Coordinates are int64: 2^63 - 1 wrapped, and 2^63 did not convert.
                if any(abs(v) > _MAX_OFFSET for v in offset):
                    self.fail(tok, f"offset components from -{_MAX_OFFSET} to {_MAX_OFFSET}")
                offsets.append(offset)
            if not offsets:
                self.fail(self.peek(), "at least one offset like (1,0)")
            return pat.offsets_pattern(grid, offsets, self.size()), grid.nranks
        if low == "alltoall":
            nranks = self.need_ranks(kw)
            size = self.size()
            tok = self.peek()
            algorithm = self.algorithm(schedules.ALLTOALL_ALGORITHMS, "linear")
            try:
                return schedules.alltoall_schedule(nranks, size, algorithm), nranks
            except ValueError as err:
                self.fail(tok, f"an algorithm that fits {nranks} ranks ({err})")
        if low == "allreduce":
            nranks = self.need_ranks(kw)
            size = self.size()
            algorithm = self.algorithm(schedules.ALLREDUCE_ALGORITHMS, "rdb")
            return schedules.allreduce_schedule(nranks, size, algorithm), nranks
        if low == "barrier":
            nranks = self.need_ranks(kw)
            algorithm = self.algorithm(schedules.BARRIER_ALGORITHMS, "rdb")
            return schedules.barrier_schedule(nranks, algorithm), nranks
        if low == "ring":
            nranks = self.need_ranks(kw)
            size = self.size()
            both = False
            if self.peek().kind == "word" and self.peek().text.lower() == "both":
                self.next()
                both = True
            return pat.ring(nranks, size, both), nranks
        if low == "graph":
            from petacomm.topology.irregular_graphs import GRAPHS, make_graph

            nranks = self.need_ranks(kw)
            name = self.word("a graph name (" + ", ".join(GRAPHS) + ")")
            if name.text not in GRAPHS:
                self.fail(name, "a graph name (" + ", ".join(GRAPHS) + ")")
            seed = 0
            tok = self.peek()
            if tok.kind == "word" and tok.text.lower().startswith("seed="):
                self.next()
                if not re.fullmatch(r"[0-9]+", tok.text[5:]):
                    self.fail(tok, "seed=N with N a whole number >= 0")
                seed = int(tok.text[5:])
            ph = make_graph(name.text, nranks, seed).phases[0]
            return (ph.src, ph.dst, ph.nbytes), nranks
        if low in ("matrix", "profile"):
            tok = self.word("a file path")
            path = Path(tok.text)
            if not path.is_absolute():
                path = self.base_dir / path
            try:
                loaded = (
                    load_matrix_file(path, self.nranks)
                    if low == "matrix"
                    else read_profile_log(path, self.nranks)
                )
            except ValueError as err:
                self.fail(tok, f"a readable {low} file ({err})")
            self.notes.extend(loaded.notes)
            ph = loaded.phases[0]
            return (ph.src, ph.dst, ph.nbytes), loaded.nranks
        raise AssertionError(low)

    def finish(self) -> pat.CommPattern:
        if not self.phases:
            self.fail(
                self.tokens[-1], "at least one traffic statement (" + ", ".join(TRAFFIC_WORDS) + ")"
            )
        phases = []
        for p in self.phases:
            if not p["parts"]:
                self.fail(p["token"], f"traffic statements in phase {p['name']!r}")
            # Each statement's messages (with their order when it has one, an ordered
            # all-to-all's) after the ones before: concatenated renumbers the order.
            parts = [
                pat.Phase(
                    p["name"], *m[:3], p["repeat"], *m[3:], timed=p["timed"], barrier=p["barrier"]
                )
                for m in p["parts"]
            ]
            phases.append(pat.Phase.concatenated(parts))
        return pat.CommPattern(self.nranks, phases, grid=self.grid, notes=self.notes)


def parse_pattern(
    text: str,
    base_dir: Path | None = None,
    default_ranks: int | None = None,
    max_ranks: tuple[int, str] | None = None,
) -> pat.CommPattern:
    """Parse a description (module docstring) into a :class:`CommPattern`.

    ``base_dir`` resolves relative paths of ``matrix``/``profile``; ``default_ranks`` is used
    by ``ring``/``alltoall`` when neither a grid nor ``ranks`` was given; ``ranks`` or a grid
    over ``max_ranks`` (the count, and why) is refused where it is written.
    """
    pattern = _Parser(text, base_dir, default_ranks, max_ranks).parse()
    pattern.description = " ".join(text.split())
    return pattern
