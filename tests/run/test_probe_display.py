"""Single-probe commands show progress with `dossier run`'s display: a bar on a terminal, one line
a step when piped; never a raw `##progress {...}` line; the probe's other lines still shown."""

import io

from rich.console import Console

from harness.cli import main
from harness.run.display import RunDisplay


def test_dossier_health_piped_prints_one_line_a_step_and_no_progress_json(tmp_path, capsys):
    assert main(["health", "--runner", "local", "-o", str(tmp_path / "health.json")]) == 0
    err = capsys.readouterr().err
    assert "##progress" not in err and '"done"' not in err
    lines = err.splitlines()
    assert lines[0] == "runner: --runner local: probes run as local processes"
    assert lines[1] == "[1/1] health: health and toolchain diagnostics"
    assert lines[2] == "    $ python -m harness.probes.health"
    assert lines[3].startswith("    health: completed - ") and len(lines[3]) < 200  # the sizing cut, whole in the JSON
    assert lines[4].startswith("host while it ran: ")  # idle or busy, with its numbers (issue 35)
    assert lines[5] == f"wrote {tmp_path / 'health.json'}"
    answer = f"verdict: PASS: {tmp_path / 'health.json'}: 0 GPU(s), 12 toolchain contracts, none failed (exit 0)"
    assert lines[6] == lines[-1] == answer and lines[7].startswith("devices: 0 GPU(s)")


def _display(terminal: bool) -> tuple[RunDisplay, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100, color_system=None)
    return RunDisplay(1, console=console, show_probe_lines=True), out


def test_on_a_terminal_progress_moves_the_bar_and_other_lines_are_shown():
    display, out = _display(terminal=True)
    with display:
        display.begin("tick", "a tick", "python -m tick")
        display.stderr_line('##progress {"done": 1, "total": 2, "what": "half"}')
        display.stderr_line("tick: a line of the probe's own")
        display.stderr_line('##progress {"done": 2, "total": 2, "what": "all"}')
        display.end("tick", "completed", "")
    text = out.getvalue()
    assert "##progress" not in text and "tick: a line of the probe's own" in text and "2/2" in text


def test_piped_a_malformed_progress_line_is_not_printed_either(capsys):
    display, out = _display(terminal=False)
    display.begin("tick", "a tick", "python -m tick")
    display.stderr_line("##progress {not json")
    display.stderr_line("warning: something the probe says")
    display.end("tick", "completed", "")
    assert out.getvalue() == ""  # piped, the display writes plain lines to stderr
    assert capsys.readouterr().err.splitlines() == [
        "[1/1] tick: a tick",
        "    $ python -m tick",
        "warning: something the probe says",
        "    tick: completed",
    ]


def test_the_step_clock_runs_until_the_step_ends_not_until_the_bar_is_full():
    from rich.progress import Progress

    from harness.run.display import StepClockColumn

    now = [100.0]
    progress = Progress(get_time=lambda: now[0], disable=True)
    task_id = progress.add_task("roofline", total=21)
    progress.update(task_id, completed=21)  # every shape timed: the bar is full at 0:00:00
    now[0] += 61.6  # the probe still writes its document, frees CUDA ...
    task = progress.tasks[0]
    assert task.finished and str(StepClockColumn().render(task)) == "0:01:01"
    progress.stop_task(task_id)  # the step ended
    now[0] += 30
    assert str(StepClockColumn().render(progress.tasks[0])) == "0:01:01"


def test_a_long_command_line_is_shortened_on_screen_and_whole_in_the_record():
    from harness.run.display import SHOWN_COMMAND_LIMIT, shown_command

    index = '{"embeddings.word_embeddings.weight": {"byte_range": [808088, 47689880]' + ', "x": 1' * 150 + "}"
    args = [
        "--file",
        "/root/.cache/rig-dossier/blobs/sha256/" + "a" * 64,
        "--tensor-index",
        index,
        "--provenance",
        '{"label": "' + "b" * 400 + '"}',
        *(["--tensor", "role=" + "w" * 50] * 3),
    ]
    shown = shown_command(object(), "precision", args)
    assert len(shown) <= SHOWN_COMMAND_LIMIT and shown.startswith("python -m harness.probes.precision --file")
    assert shown.endswith("(whole in commands.json)") and index not in shown
    assert shown_command(object(), "health", ["--under-load", "8"]) == "python -m harness.probes.health --under-load 8"
