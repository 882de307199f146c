"""`dossier NAME` for every probe in the registry: one parser and one handler, built from its ProbeSpec.

The command offers the probe's own options (declared once, in the probe module's OPTIONS), the
command's host options (CommandSpec.host_options), --output, --timeout and where probes run;
checks the options as the probe would, runs the probe through the runner, validates and saves
its JSON (keeping the raw output on failure), writes the entry's plots and table the same way for
every probe (PLOT_OPTIONS, TABLE_OPTION), then hands the document to the spec's `finish` (summary
lines, the exit-1 rule).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import json
import os
import sys
from pathlib import Path

from harness import paths, recovery, registry
from harness.analysis import contention
from harness.analysis.verdict import Verdict, answer_line
from harness.errors import CheckFailed, EnvironmentProblem, ProbeFailed, UsageError
from harness.present.plots import NothingToPlot
from harness.probes.contract import EXIT_USAGE, Option, ProbeUsageError, add_options, check_options, options_argv, real
from harness.registry.spec import ProbeSpec
from harness.registry.steps import StepArgs
from harness.run import host_load
from harness.run.display import RunDisplay, shown_command
from harness.run.outcome import Completed, Failed, judge
from harness.runners.interface import ProbeInvocation, Runner
from harness.runners.select import RUNNER_CHOICES, select_runner

# Every probe command with plots (ProbeSpec.plots) offers these, and one with a table to write
# (CommandSpec.writes_table) TABLE_OPTION: one convention for every probe.
PLOT_OPTIONS = (
    Option(
        ("--plot",),
        dict(
            type=Path,
            metavar="STEM",
            help="write the plots to STEM.png and STEM.svg (default: beside the JSON, its name without .json)",
        ),
    ),
    Option(("--no-plot",), dict(action="store_true", help="write no plots")),
)
TABLE_OPTION = Option(
    ("--markdown",),
    dict(type=Path, metavar="PATH", help="where to write the Markdown table (default: the output path with .md)"),
)


def command_options(spec: ProbeSpec) -> tuple[Option, ...]:
    """What `dossier NAME` offers besides the probe's own options and --output, --timeout, --runner."""
    return (
        *spec.command.host_options,
        *(PLOT_OPTIONS if spec.plots else ()),
        *((TABLE_OPTION,) if spec.command.writes_table else ()),
    )


def add_parser(sub: argparse._SubParsersAction, spec: ProbeSpec) -> None:
    command = spec.command
    parser = sub.add_parser(spec.name, help=command.help, description=command.description)
    add_options(parser, spec.host_options)
    add_options(parser, command_options(spec))
    add_common_options(parser, default_output=command.output, timeout_s=command.timeout_s)
    parser.set_defaults(func=functools.partial(handle, spec))


def handle(spec: ProbeSpec, args: argparse.Namespace) -> int:
    """Check, run the probe, save its JSON, its plots and table, then the spec's own finish (which
    may raise CheckFailed)."""
    try:
        check_options(args, (*spec.host_options, *command_options(spec)))
    except ProbeUsageError as exc:  # the probe's own words, before it is started
        raise UsageError(str(exc)) from None
    stem, table = plot_stem(spec, args), table_path(spec, args)
    paths.output_files(
        [
            ("--output", args.output),
            ("--markdown", table),  # before the probe, not after it
            *((("--plot", Path(f"{stem}{suffix}")) for suffix in (".png", ".svg")) if stem else ()),
        ]
    )
    argv = options_argv(args, spec.host_options)
    prepared = spec.command.prepare(args, argv) if spec.command.prepare else StepArgs(tuple(argv))
    outcome = run_probe(spec.name, list(prepared.args), args, mounts=prepared.mounts, title=spec.title)
    if stem is not None:
        write_plots(spec, outcome.document, stem)
    if table is not None:
        write_table(spec, outcome.document, table)
    return finish(spec, args, outcome.document)


def finish(spec: ProbeSpec, args: argparse.Namespace, document: dict) -> int:
    """The entry's `finish` (its summary lines, the exit-1 rule), said as every command's answer is:
    the answer line, the summary, the answer line again (`verdict: FAIL: health.json: 1 toolchain
    contract(s) failed: ... (exit 1)`); its lines are gathered first so the answer comes before them."""
    said, failed, what = io.StringIO(), None, None
    with contextlib.redirect_stderr(said):
        try:
            what = spec.command.finish(args, document) if spec.command.finish else None
        except CheckFailed as exc:
            failed = exc
    verdict = Verdict.FAIL if failed is not None else Verdict.PASS
    line = answer_line(verdict, f"{args.output}: {failed if failed is not None else (what or 'written')}")
    print(line, file=sys.stderr)
    sys.stderr.write(said.getvalue())
    if failed is not None and failed.hint:
        print(f"hint: {failed.hint}", file=sys.stderr)
    print(line, file=sys.stderr)
    return verdict.exit_code


def plot_stem(spec: ProbeSpec, args: argparse.Namespace) -> Path | None:
    """Where the entry's plots go (STEM.png, STEM.svg), or None: no plots, or --no-plot."""
    if not spec.plots or args.no_plot:
        if spec.plots and args.plot is not None:
            raise UsageError("--plot and --no-plot contradict each other", hint="give one of them")
        return None
    return args.plot if args.plot is not None else Path(args.output).with_suffix("")


def table_path(spec: ProbeSpec, args: argparse.Namespace) -> Path | None:
    if not spec.command.writes_table:
        return None
    return args.markdown or Path(args.output).with_suffix(".md")


def write_plots(spec: ProbeSpec, document: dict, stem: Path) -> None:
    """The entry's plot module renders STEM.*; say what was written, or why nothing was (and what the
    picture leaves out, where its module has a `note`)."""
    assert spec.plots is not None  # plot_stem gives a stem only for an entry with plots
    plot = importlib.import_module(registry.plot_module_name(spec.plots))  # matplotlib only now
    try:
        written = plot.render(document, stem)
    except NothingToPlot as exc:
        print(f"no plot: {exc}", file=sys.stderr)
        return
    print("wrote " + ", ".join(map(str, written)), file=sys.stderr)
    note = getattr(plot, "note", None)
    if note is not None and note(document):
        print(note(document), file=sys.stderr)


def write_table(spec: ProbeSpec, document: dict, path: Path) -> None:
    module = registry.table_module(spec)
    assert module is not None, f"{spec.name} writes a table but names no table module"
    paths.write_output(path, module.render(document), "--markdown")
    print(f"wrote {path}", file=sys.stderr)


def add_common_options(parser: argparse.ArgumentParser, default_output: str, timeout_s: float) -> None:
    parser.add_argument(
        "--output",
        "-o",
        default=default_output,
        type=Path,
        help=f"where to write the validated JSON (default: {default_output})",
    )
    parser.add_argument(
        "--timeout",
        type=real,
        default=timeout_s,
        metavar="SECONDS",
        help=f"kill the probe after this long (default: {timeout_s:g})",
    )
    add_runner_options(parser)


def add_runner_options(parser: argparse.ArgumentParser) -> None:
    """--runner and the container options (docs/docker.md)."""
    group = parser.add_argument_group("where probes run")
    group.add_argument(
        "--runner",
        choices=RUNNER_CHOICES,
        default=os.environ.get("DOSSIER_RUNNER", "auto"),
        help="local: a process here; docker: a container of the pinned image; "
        "auto (default): docker when an engine and the pinned image are "
        "present, else local (default: $DOSSIER_RUNNER, else auto)",
    )
    group.add_argument(
        "--image",
        metavar="NAME",
        help="pinned image to use with docker (images/lock*.json; default: cuda "
        "when this host has an NVIDIA GPU, else cpu)",
    )
    group.add_argument(
        "--gpus",
        metavar="all|none|IDS",
        help="GPUs the container gets: all, none, or ids like 0,1 (default: all for the cuda image, none for cpu)",
    )
    group.add_argument(
        "--container-memory", metavar="LIMIT", help="memory limit of each probe container, e.g. 64g (default: none)"
    )


def select_from_args(args: argparse.Namespace) -> tuple[Runner, str]:
    """The runner asked for with the options of add_runner_options, and why it was chosen."""
    return select_runner(args.runner, image=args.image, gpus=args.gpus, mem_limit=args.container_memory)


def runner_from_args(args: argparse.Namespace) -> Runner:
    """The runner asked for on the command line; says on stderr which one and why."""
    runner, why = select_from_args(args)
    print(f"runner: {why}", file=sys.stderr)
    return runner


def run_with_display(runner: Runner, invocation: ProbeInvocation, title: str) -> Completed | Failed:
    """Run the probe under `dossier run`'s display (a bar on a terminal, a line a step when piped),
    its other stderr lines shown; then judge its output."""
    display = RunDisplay(1, show_probe_lines=True)
    with display:
        display.begin(invocation.probe, title, shown_command(runner, invocation.probe, invocation.args))
        load = host_load.HostLoad(getattr(runner, "probe_pids", tuple))
        with load.window(invocation.probe) as window:
            run = runner.run(invocation, on_stderr_line=display.stderr_line)
        outcome = judge(run)
        if isinstance(outcome, Completed):
            display.end(invocation.probe, "completed", str(outcome.document.get("sizing") or ""))
        else:
            display.end(invocation.probe, "FAILED", outcome.reason)
    print(host_line(window, load.facts), file=sys.stderr)
    return outcome


def host_line(window: host_load.Window, facts: dict) -> str:
    """What else the host did while the probe ran, in one line (harness.run.host_load's readings)."""
    if window.entry is None:
        return "host while it ran: not read"
    figures = contention.summary(window.entry, facts)
    return f"host while it ran: {figures['state']}: {contention.describe(figures)}"


def run_probe(
    probe: str,
    probe_args: list[str],
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
    mounts: tuple[str, ...] = (),
    title: str | None = None,
) -> Completed:
    """Run one probe, validate it and save the JSON; on failure keep the raw bytes and raise.

    `mounts`: host files the probe reads (a container runner mounts them read-only)."""
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout:g}")
    output: Path = paths.output_file(args.output, "--output")  # before the probe, not after it
    runner = runner_from_args(args)
    outcome = run_with_display(
        runner, ProbeInvocation(probe, tuple(probe_args), args.timeout, env or {}, mounts), title or probe
    )
    if isinstance(outcome, Failed):
        kept = save_raw(outcome, output)
        if outcome.run.exit_code == EXIT_USAGE:  # the probe refused its arguments: say why, as usage
            raise UsageError(
                usage_message(outcome.run.stderr_tail(8)), hint=f"raw output kept in {', '.join(map(str, kept))}"
            )
        raise ProbeFailed(outcome.describe(), hint=f"raw output kept in {', '.join(map(str, kept))}")
    text = json.dumps(outcome.document, allow_nan=False, sort_keys=True, indent=1) + "\n"
    try:
        paths.write_output(output, text, "--output")
    except EnvironmentProblem as exc:  # measured, then unwritable: keep it where it can be written
        folder = recovery.keep(output.stem, {output.name: text.encode()}, str(exc))
        raise EnvironmentProblem(f"{exc}; the measured {output.name} is kept in {folder}") from exc
    print(f"wrote {output}", file=sys.stderr)
    return outcome


def usage_message(stderr_tail: str) -> str:
    """The probe's own `NAME: error: ...` line (probe_main's usage report), else its stderr tail."""
    errors = [line for line in stderr_tail.splitlines() if ": error: " in line]
    return errors[-1] if errors else f"the probe refused its arguments:\n{stderr_tail}"


def save_raw(outcome: Failed, output: Path) -> list[Path]:
    stem = output.with_suffix("")
    files = {
        f"{stem.name}.failed.{name}": data
        for name, data in (("stdout", outcome.run.stdout), ("stderr", outcome.run.stderr))
    }
    try:
        return [paths.write_output(stem.with_name(name), data, "--output") for name, data in files.items()]
    except EnvironmentProblem as exc:
        folder = recovery.keep(stem.name, files, str(exc))
        return [folder / name for name in files]
