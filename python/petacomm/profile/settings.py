"""The profiler's settings (``PETACOMM_PROF_*``), defined once in ``prof-settings.json``.

The same table gives the runtime its parser (generated at build time by
``native/src/prof/generate_settings.py``), ``petacomm profile`` its flags, ``petacomm bench
profiler-overhead`` its defaults, and docs/profiler.md its table of environment variables
(``python -m petacomm.profile.settings`` prints it; a test checks the page). Values are
checked here with the runtime's rules, so a bad value is refused before a job is launched.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources

from petacomm.errors import PetacommError
from petacomm.units import parse_size

PREFIX = "PETACOMM_PROF_"
KINDS = ("send", "recv", "sendrecv", "probe", "coll", "rma_send", "rma_recv", "rma_sync", "req")
KINDS += ("io_read", "io_write", "io_other", "comm", "misc", "posix")
GROUPS = ("all", "p2p", "rma", "io", "mpi")
_COUNT = re.compile(r"^\s*[0-9]+\s*$")
_SECONDS = re.compile(r"^\s*(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*$")


@dataclass(frozen=True)
class Setting:
    env: str
    type: str  # path, choice, wrap, size, count, seconds, bool
    default: str
    help: str
    field: str | None = None
    flag: str | None = None  # "--detail", "-o/--output"
    flag_sets: str | None = None  # bool flags: the value the flag gives
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    unit: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    capacity: int | None = None
    runtime: bool = True
    default_text: str | None = None

    @property
    def flags(self) -> list[str]:
        return self.flag.split("/") if self.flag else []

    @property
    def long_flag(self) -> str | None:
        return self.flags[-1] if self.flag else None

    @property
    def dest(self) -> str | None:
        """The argparse attribute of the flag."""
        return self.long_flag.lstrip("-").replace("-", "_") if self.flag else None

    def check(self, text: str, argument: str | None = None):
        """The value of ``text`` (a number for sizes, counts and seconds); PetacommError naming
        ``argument`` (the flag or the variable) and the value when it is not valid."""
        where = argument or self.env
        if self.type in ("path", "wrap"):
            if self.capacity and len(text.encode()) >= self.capacity:
                raise PetacommError(f"{where}: longer than {self.capacity - 1} bytes")
            if "\0" in text:
                raise PetacommError(f"{where}: contains a NUL character")
            if self.type == "wrap":
                check_wrap(text, where)
            return text
        if self.type == "choice":
            if text not in self.choices:
                raise PetacommError(
                    f"{where}: must be one of {', '.join(self.choices)}, got {text!r}"
                )
            return text
        if self.type == "bool":
            if text not in ("0", "1"):
                raise PetacommError(f"{where}: must be 0 or 1, got {text!r}")
            return text == "1"
        if self.type == "size":
            try:
                value = parse_size(text)
            except ValueError as err:
                raise PetacommError(f"{where}: {err}") from err
            if not math.isfinite(value) or value != math.floor(value):
                raise PetacommError(f"{where}: not a whole number of bytes: '{text}'")
        elif self.type == "count":
            if not _COUNT.match(text):
                raise PetacommError(f"{where}: not a whole number: {text!r}")
            value = float(int(text))
        elif self.type == "seconds":
            if not _SECONDS.match(text) or not math.isfinite(float(text)):
                raise PetacommError(f"{where}: not a number of seconds: {text!r}")
            value = float(text)
        else:  # pragma: no cover - the table is checked when loaded
            raise AssertionError(self.type)
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise PetacommError(
                f"{where}: must be between {_number(self.minimum)} and {_number(self.maximum)}"
                f"{' ' + self.unit if self.unit else ''}, got {text!r}"
            )
        return value


def _number(value: float | None) -> str:
    return f"{value:.17g}" if value is not None else "?"


@cache
def settings() -> tuple[Setting, ...]:
    text = resources.files("petacomm.profile").joinpath("prof-settings.json").read_text()
    out = []
    for s in json.loads(text)["settings"]:
        out.append(
            Setting(
                env=s["env"],
                type=s["type"],
                default=str(s["default"]),
                help=s["help"],
                field=s.get("field"),
                flag=s.get("flag"),
                flag_sets=s.get("flag_sets"),
                metavar=s.get("metavar"),
                choices=tuple(s.get("choices", ())),
                unit=s.get("unit"),
                minimum=s.get("minimum"),
                maximum=s.get("maximum"),
                capacity=s.get("capacity"),
                runtime=s.get("runtime", True),
                default_text=s.get("default_text"),
            )
        )
    return tuple(out)


def by_env(name: str) -> Setting:
    for s in settings():
        if s.env == name:
            return s
    raise KeyError(name)


@cache
def spec_calls() -> frozenset[str]:
    """The MPI calls of the profiler's spec (empty when the native part is not installed)."""
    from petacomm.native import native_dir

    try:
        spec = native_dir() / "share" / "prof-src" / "mpi_calls.spec"
        lines = spec.read_text().splitlines()
    except (OSError, PetacommError):
        return frozenset()
    return frozenset(
        line.split("|", 1)[0].strip()
        for line in lines
        if line.strip() and not line.startswith("#") and "|" in line
    )


def check_wrap(text: str, where: str) -> None:
    """A PETACOMM_PROF_WRAP list: every token a kind, a group or a call of the spec."""
    tokens = [t for t in re.split(r"[,\s]+", text) if t]
    if not tokens:
        raise PetacommError(f"{where}: empty list (e.g. 'all', 'p2p,coll', 'all,-posix')")
    known = spec_calls()
    for token in tokens:
        name = token[1:] if token.startswith("-") else token
        if name in KINDS or name in GROUPS or name in known:
            continue
        if not known and name.startswith("MPI_"):
            continue  # no spec to check call names against
        raise PetacommError(
            f"{where}: {name!r} names no call, kind ({' '.join(KINDS)}) or group "
            f"({' '.join(GROUPS)})"
        )


def check_environment(env: dict[str, str]) -> None:
    """Refuses unknown or invalid PETACOMM_PROF_* variables in ``env`` (the runtime would
    refuse them after the launch)."""
    names = {s.env: s for s in settings()}
    for name, value in env.items():
        if not name.startswith(PREFIX):
            continue
        setting = names.get(name)
        if setting is None:
            known = ", ".join(sorted(names))
            raise PetacommError(f"{name}: not a profiler setting (known: {known})")
        if value != "":
            setting.check(value, f"{name} (environment)")


def add_arguments(parser) -> None:
    """The flags of ``petacomm profile``, one per setting that has one."""
    for s in settings():
        if not s.flag:
            continue
        default = s.default_text or (s.default if s.default != "" else "none")
        help_text = _plain(s.help)
        if s.type == "bool":
            parser.add_argument(*s.flags, dest=s.dest, action="store_true", help=help_text)
            continue
        unit = f" ({s.unit})" if s.unit and s.type != "size" else ""
        parser.add_argument(
            *s.flags,
            dest=s.dest,
            metavar=s.metavar or ("{" + ",".join(s.choices) + "}" if s.choices else "VALUE"),
            help=f"{help_text}{unit} [{s.env}, default {_plain(default)}]",
        )


def namespace_defaults() -> dict[str, object]:
    """Attribute -> None/False for every flag: an argparse namespace with no option given."""
    return {s.dest: (False if s.type == "bool" else None) for s in settings() if s.flag}


def env_from_args(args) -> dict[str, str]:
    """The PETACOMM_PROF_* variables the given flags set, each value checked (PetacommError
    naming the flag)."""
    env = {}
    for s in settings():
        if not s.flag or s.env == "PETACOMM_PROF_OUTPUT":
            continue
        value = getattr(args, s.dest, None)
        if value is None or value is False:
            continue
        if s.type == "bool":
            env[s.env] = s.flag_sets or "1"
            continue
        s.check(str(value), s.long_flag)
        env[s.env] = str(value)
    return env


def _plain(text: str) -> str:
    return text.replace("`", "")


def markdown_table() -> str:
    """The table of environment variables of docs/profiler.md."""
    lines = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for s in settings():
        default = s.default_text or (f"`{s.default}`" if s.default != "" else "unset")
        if s.unit and s.type != "size" and not s.default_text:
            default += f" {s.unit}"
        flag = f" (`{s.long_flag}`)" if s.flag else ""
        lines.append(f"| `{s.env}`{flag} | {default} | {s.help} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
