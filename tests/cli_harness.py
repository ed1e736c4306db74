"""Runs the ``petacomm`` command for the tests and checks how it treats bad input.

Every command must answer bad input the same way: exit status non-zero, one line on
standard error naming the argument at fault, no Python traceback, no hang, and every input
file byte-for-byte as it was. ``expect_clean_error`` checks all of that at once.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mpi_harness import mpi_test_env


@dataclass
class CliResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"petacomm {' '.join(self.argv)} exited {self.returncode}\n--- stdout\n{self.stdout}"
            f"\n--- stderr\n{self.stderr}"
        )


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None, cwd=None):
    """``python -m petacomm.cli ARGS`` with the MPI test environment; a hang fails the test."""
    argv = [str(a) for a in args]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "petacomm.cli", *argv],
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
            timeout=timeout,
            env=mpi_test_env(env),
            cwd=cwd,
        )
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"petacomm {' '.join(argv)} hung for more than {timeout} s") from err
    return CliResult(argv, done.returncode, done.stdout, done.stderr)


def python_output(code: str, timeout: float = 120) -> str:
    """Standard output of ``python -c CODE`` in a fresh interpreter, where what a module
    imports when it starts can be seen; a failure fails the test with its standard error."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def digest(paths) -> dict[str, str | None]:
    """Content hash of each path (None when absent, 'dir' for a directory)."""
    out = {}
    for p in map(Path, paths):
        if p.is_dir():
            out[str(p)] = "dir"
        elif p.exists():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p)] = None
    return out


def expect_clean_error(
    *args: str,
    names: str | tuple[str, ...] = (),
    inputs=(),
    timeout: float = 120,
    env: dict[str, str] | None = None,
    cwd=None,
) -> CliResult:
    """Runs the command and asserts a clean refusal.

    ``names``: text(s) the error line must contain (the argument, the value); ``inputs``:
    files that must be unchanged afterwards.
    """
    before = digest(inputs)
    result = run_cli(*args, timeout=timeout, env=env, cwd=cwd)
    _check_clean_error(result, names, inputs, before)
    return result


def _check_clean_error(result: CliResult, names, inputs, before) -> None:
    assert result.returncode != 0, "bad input accepted:\n" + result.describe()
    assert "Traceback" not in result.stderr + result.stdout, result.describe()
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, "expected one error line:\n" + result.describe()
    for name in (names,) if isinstance(names, str) else names:
        assert name in lines[0], f"error does not name {name!r}:\n" + result.describe()
    assert digest(inputs) == before, "an input changed:\n" + result.describe()


class _Hung(BaseException):  # not an Exception: a command's own handlers must not take it
    pass


def expect_clean_error_in_process(
    *args: str,
    names: str | tuple[str, ...] = (),
    inputs=(),
    timeout: float = 120,
    env: dict[str, str] | None = None,
    cwd=None,
    capfd,
    monkeypatch,
) -> CliResult:
    """expect_clean_error with the command run in this process through ``cli.main``: for
    tables of hundreds of cases, where a process start each costs the suite seconds.

    ``capfd`` and ``monkeypatch`` are the test's fixtures: output is captured at the file
    descriptors, so what a program the command starts writes counts too; the environment
    (the MPI test environment and ``env``) and ``cwd`` are restored afterwards. A traceback
    shows as the exception itself; a hang fails after ``timeout`` seconds (SIGALRM).
    """
    from petacomm.cli import main

    argv = [str(a) for a in args]
    wanted = mpi_test_env(env)
    for key in set(os.environ) - set(wanted):
        monkeypatch.delenv(key)
    for key, value in wanted.items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    before = digest(inputs)
    capfd.readouterr()

    def hung(signum, frame):
        raise _Hung

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse's refusals
        status = stop.code
    except _Hung:
        raise AssertionError(f"petacomm {' '.join(argv)} hung for more than {timeout} s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capfd.readouterr()
    returncode = status if isinstance(status, int) else 1
    result = CliResult(argv, returncode, out, err)
    _check_clean_error(result, names, inputs, before)
    return result
