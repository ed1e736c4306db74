"""The ``petacomm`` command: one entry point, one sub-command per verb.

Each verb lives in its own module exposing ``register(subparsers)``; that function adds
an ``argparse`` sub-parser and sets ``func`` (called with the parsed namespace, returns
an exit code). User errors are raised as :class:`PetacommError` and printed as one line.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from petacomm import __version__
from petacomm.errors import PetacommError
from petacomm.units import decimal_int

# Modules that contribute sub-commands, in the order `petacomm --help` lists them.
# Listed as the four verbs go: measure, model, map, replace (benchmarks of the algorithms).
COMMAND_MODULES = (
    "petacomm.doctor",
    "petacomm.profile.cli",
    "petacomm.model.netbench",
    "petacomm.topology.cli",
    "petacomm.bench.cli",
    "petacomm.sim.cli",
)

# The module that registers each command: a command line naming one builds only its parser
# (importing every module and building every parser is most of a command's start-up, and
# `petacomm profile` adds it to every profiled run). tests/foundation checks it against
# what the modules register.
MODULE_OF_COMMAND = {
    "doctor": "petacomm.doctor",
    "profile": "petacomm.profile.cli",
    "profiler": "petacomm.profile.cli",
    "report": "petacomm.profile.cli",
    "netbench": "petacomm.model.netbench",
    "map": "petacomm.topology.cli",
    "bench": "petacomm.bench.cli",
    "simulate": "petacomm.sim.cli",
}


class CommandParser(argparse.ArgumentParser):
    """argparse with the one-line errors every petacomm command gives: the usage block that
    argparse prints before its message is left out (``--help`` shows it)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A word such as '-1GB', '-2.5e3KiB' or '-1:8' is a value (negative, so refused by its
        # option's check), not an unknown option: argparse's own pattern knows only bare
        # numbers, so '--link-bandwidth -1GB' was refused as "expected one argument". No
        # petacomm option starts with '-' and a digit.
        self._negative_number_matcher = re.compile(r"^-\.?\d\S*$")
        # type=int options read decimal digits only (units.decimal_int): int() also takes
        # '1_0' for 10 and other scripts' digits ('٤' for 4)
        self.register("type", int, decimal_int)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``'s module when it names one."""
    parser = CommandParser(
        prog="petacomm",
        description=(
            "petacomm makes MPI applications communicate faster at scale: it measures their "
            "communication, models it, maps it onto the machine and replaces slow patterns."
        ),
    )
    parser.add_argument("--version", action="version", version=f"petacomm {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = (MODULE_OF_COMMAND[command],) if command in MODULE_OF_COMMAND else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(subparsers)
    _name_every_command(parser)
    return parser


def _name_every_command(parser: argparse.ArgumentParser) -> None:
    """Each (sub-)command records its full name ('petacomm bench map') for its error lines:
    argparse's ``dest`` of a sub-command may be overwritten by the command's own options."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_command_name=sub.prog)
                _name_every_command(sub)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    name = getattr(args, "_command_name", f"petacomm {args.command}")
    if argv is None:  # the command itself, not a caller's function call
        from petacomm.launch import stop_on_sigterm
        from petacomm.lazy_module import defer_unused_numpy_subpackages

        stop_on_sigterm()
        defer_unused_numpy_subpackages()
    try:
        from petacomm.progress import progress_mode

        progress_mode()  # a bad PETACOMM_PROGRESS, before anything runs
        return int(args.func(args) or 0)
    except PetacommError as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 2
    except MemoryError:
        # A safety net: commands bound their inputs, but a case may still not fit here.
        print(
            f"{name}: error: out of memory: the case is too large for this machine (describe "
            "a smaller network or pattern)",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` and closed early: not an error worth a traceback.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
