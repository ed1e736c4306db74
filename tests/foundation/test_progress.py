"""petacomm.progress: a bar on a terminal, a few plain lines otherwise, nothing when quiet."""

import io

import pytest

from petacomm.progress import MAX_WIDTH, Progress


class FakeTerminal(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drive(tty: bool, quiet: bool = False, steps: int = 100, seconds_per_step: float = 0.05):
    stream, clock = FakeTerminal(tty), Clock()
    with Progress("netbench", quiet=quiet, stream=stream, clock=clock) as progress:
        progress.status("starting 4 ranks")
        clock.now = 2.0  # past the start-up delay
        progress.start(steps, "sizes measured")
        for i in range(steps):
            clock.now += seconds_per_step
            progress.advance(detail=f"allreduce {i}")
    return stream.getvalue()


@pytest.fixture(autouse=True)
def default_mode(monkeypatch):
    monkeypatch.delenv("PETACOMM_PROGRESS", raising=False)


def test_plain_lines_at_each_tenth_only():
    lines = drive(tty=False).splitlines()
    counts = [line.split()[3] for line in lines]  # 'netbench: sizes measured N/100 ...'
    # The stage's first line, then one line per tenth of the work: never a line per step.
    assert counts == [f"{10 * k}/100" for k in range(11)]
    assert all("\r" not in line and len(line) <= MAX_WIDTH for line in lines)


def test_terminal_bar_is_redrawn_in_place_and_erased():
    text = drive(tty=True)
    assert "\n" not in text
    frames = [f for f in text.split("\r") if f]
    assert "[" in frames[-2] and "100/100" in frames[-2]
    assert all(len(f) < MAX_WIDTH for f in frames)
    assert frames[-1].strip() == ""  # erased at the end: the command's output starts clean


def test_quiet_and_never_print_nothing(monkeypatch):
    assert drive(tty=True, quiet=True) == "" and drive(tty=False, quiet=True) == ""
    monkeypatch.setenv("PETACOMM_PROGRESS", "never")
    assert drive(tty=False) == ""


@pytest.mark.parametrize("value", ["off", "0", "nevr"])
def test_an_unknown_progress_mode_is_refused_naming_the_variable(monkeypatch, value):
    # It was taken for auto: PETACOMM_PROGRESS=off still showed progress.
    from petacomm.errors import PetacommError

    monkeypatch.setenv("PETACOMM_PROGRESS", value)
    with pytest.raises(
        PetacommError, match=f"PETACOMM_PROGRESS: expected auto, always or never, got '{value}'"
    ):
        Progress("map", stream=FakeTerminal(False), clock=Clock())


def test_a_command_refuses_a_bad_progress_mode_before_it_runs(monkeypatch, capsys):
    # It was found where the first progress line started: after netbench's launcher check or
    # bench transpose's build, and not at all under -q.
    from petacomm.cli import main

    monkeypatch.setenv("PETACOMM_PROGRESS", "off")
    assert main(["map", "--network", "torus:4x4", "--pattern", "ring 1KiB", "-q"]) == 2
    assert "error: PETACOMM_PROGRESS: expected auto, always or never, got 'off'" in (
        capsys.readouterr().err
    )


def test_short_commands_print_nothing_unless_always(monkeypatch):
    stream, clock = FakeTerminal(False), Clock()
    with Progress("map", stream=stream, clock=clock) as progress:
        progress.start(3, "mappings evaluated")
        for _ in range(3):
            clock.now += 0.1
            progress.advance()
    assert stream.getvalue() == ""
    monkeypatch.setenv("PETACOMM_PROGRESS", "always")
    stream = FakeTerminal(False)
    with Progress("map", stream=stream, clock=Clock()) as progress:
        progress.start(3, "mappings evaluated")
        progress.advance()
    assert stream.getvalue().splitlines()[0].startswith("map: mappings evaluated 0/3")


def test_map_shows_progress_on_stderr_only(monkeypatch, capsys):
    from petacomm.cli import main

    monkeypatch.setenv("PETACOMM_PROGRESS", "always")
    argv = ["map", "--network", "torus:4x4", "--pattern", "grid2d 4x4 star 1KiB", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.lstrip().startswith("{") and "mappings evaluated 6/6" in err
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_long_child_shows_its_elapsed_time_and_its_output_is_returned(monkeypatch, capsys):
    import sys

    from petacomm import progress

    monkeypatch.setenv("PETACOMM_PROGRESS", "always")
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.3)  # a line per 0.3 s in plain mode
    child = "import sys, time; time.sleep(1.2); print('out'); print('err', file=sys.stderr)"
    done = progress.run_showing_progress(
        "bench x", "the job on 4 ranks", [sys.executable, "-c", child]
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 3 and all(x.startswith("bench x: the job on 4 ranks") for x in lines)
    seconds = [int(x.split()[-2]) for x in lines]  # '... N s'
    assert seconds == sorted(seconds) and seconds[-1] >= 1


def test_a_quiet_child_shows_nothing_and_keeps_its_exit_status(monkeypatch, capsys):
    import sys

    from petacomm import progress

    monkeypatch.setenv("PETACOMM_PROGRESS", "always")
    done = progress.run_showing_progress(
        "bench x", "job", [sys.executable, "-c", "import sys; sys.exit(3)"], quiet=True
    )
    assert done.returncode == 3 and capsys.readouterr().err == ""
