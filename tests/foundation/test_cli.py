"""The petacomm command: help on every verb, errors as one line, no MPI on import."""

import subprocess
import sys

import pytest

from cli_harness import python_output
from petacomm.cli import build_parser, main


def run_cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "petacomm.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )


def all_command_paths():
    """Every sub-command path, e.g. ('netbench',), ('bench', 'sparse-reduce')."""
    import argparse

    paths = []

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    paths.append((*prefix, name))
                    walk(sub, (*prefix, name))

    walk(build_parser(), ())
    return paths


def test_every_command_has_help(capsys):
    paths = all_command_paths()
    assert ("doctor",) in paths and ("netbench",) in paths
    for path in paths:
        with pytest.raises(SystemExit) as stop:
            main([*path, "--help"])
        assert stop.value.code == 0
        out = capsys.readouterr().out
        assert "usage: petacomm" in out, path


def test_import_does_not_initialise_mpi():
    code = (
        "import sys, petacomm, petacomm.cli, petacomm.model, petacomm.launch\n"
        "petacomm.cli.build_parser()\n"
        "loaded = [m for m in sys.modules if m.startswith('mpi4py')]\n"
        "assert not loaded, loaded\n"
    )
    python_output(code)


def test_starting_a_command_loads_neither_numpy_nor_scipy():
    # Every command's start builds the whole parser: it must stay light (petacomm --help,
    # petacomm map --help), heavy modules load when a command runs.
    code = (
        "import sys, petacomm.cli\n"
        "parser = petacomm.cli.build_parser()\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'numpy', 'scipy', 'matplotlib', 'jsonschema'})\n"
        "assert not heavy, heavy\n"
        "parser.parse_args(['netbench', '-n', '2'])\n"
    )
    python_output(code)


def test_each_command_is_built_from_the_module_that_registers_it():
    # main() builds only the named command's module: the table must say which module
    # registers each command, and every command must be in it.
    import argparse
    import importlib

    from petacomm.cli import COMMAND_MODULES, MODULE_OF_COMMAND, CommandParser

    registered = {}
    for module in COMMAND_MODULES:
        subparsers = CommandParser(prog="x").add_subparsers(dest="command")
        importlib.import_module(module).register(subparsers)
        registered.update(dict.fromkeys(subparsers.choices, module))
    assert registered == MODULE_OF_COMMAND
    for command, module in MODULE_OF_COMMAND.items():
        parser = build_parser(command)
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        assert command in action.choices and set(action.choices) == {
            c for c, m in MODULE_OF_COMMAND.items() if m == module
        }


def test_a_command_line_loads_only_its_command():
    code = (
        "import sys, petacomm.cli\n"
        "try:\n"
        "    petacomm.cli.main(['profile', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "others = [m for m in ('petacomm.sim.cli', 'petacomm.bench.cli', 'petacomm.doctor') "
        "if m in sys.modules]\n"
        "assert not others, others\n"
    )
    assert "usage: petacomm profile" in python_output(code)


def test_no_command_prints_help():
    done = run_cli()
    assert done.returncode == 2 and "usage: petacomm" in done.stdout
