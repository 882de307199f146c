"""`dossier run`: every lab step as its own probe process, then one signed bundle (what `make dossier` calls)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from harness import paths, registry
from harness.commands import probe
from harness.commands.options import add_signing_key, count
from harness.errors import CheckFailed, UsageError
from harness.present.verdict import run_verdict
from harness.probes.contract import ProbeUsageError, add_options, check_options
from harness.registry import lab_plan, step_ids
from harness.run.destination import bundle_file_name
from harness.run.orchestrate import RunOptions, run_dossier
from harness.signing.keys import signing_key_for_run
from harness.verify import verify_and_view


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "run",
        help="run every lab step and write a signed bundle (what `make dossier` calls)",
        description=f"Run the lab's steps in order ({'; '.join(s.title for s in lab_plan())}), each as its own "
        "probe process. A failed step is recorded and the run goes on; a step whose probe the runner "
        "lacks (an image of an older harness) is listed as not run. Writes OUTPUT_DIR/NAME.tar.gz, signed "
        "with your key, and prints its path. Ctrl-C leaves no bundle behind.",
    )
    parser.add_argument(
        "--output-dir", type=Path, default=Path("bundles"), help="where the bundle goes (default: bundles)"
    )
    parser.add_argument("--name", help="bundle file name without .tar.gz (default: dossier-HOST-TIMESTAMP)")
    add_signing_key(
        parser,
        "Ed25519 private key to sign with (default: $DOSSIER_KEY, else "
        "~/.config/rig-dossier/dossier.key, made on first use)",
        old="--key",
    )
    probe.add_runner_options(parser)
    for spec in registry.PROBES:
        if spec.run_options:
            add_options(
                parser.add_argument_group(f"what the {spec.name} step measures (as `dossier {spec.name}`)"),
                spec.run_options,
            )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="STEP",
        help=f"leave a step out (recorded as not run); one of {', '.join(step_ids())}",
    )
    parser.add_argument(
        "--retest",
        type=count(0, MAX_RETEST, "a step failing more often is failing, not flaky"),
        default=0,
        metavar="N",
        help=f"run a probe step that failed (crashed, timed out, wrote invalid JSON) again, up to "
        f"N times (0-{MAX_RETEST}, default 0); every attempt is kept in the bundle and "
        f"acceptance counts a pass on a later attempt as WARN unless the profile says otherwise",
    )
    parser.add_argument(
        "--prometheus",
        type=Path,
        metavar="FILE.prom",
        help="also write each step's status and the bundle's compared figures (base units) for "
        "node_exporter's textfile collector",
    )
    parser.set_defaults(func=handle)


RUNNER_FLAGS = (("--image", "image"), ("--gpus", "gpus"), ("--container-memory", "container_memory"))
MAX_RETEST = 10  # a step failing more often than this is failing, not flaky


def _terminate_as_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM cleans up like Ctrl-C while a run is under way (nothing half-written is left)."""
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def check_destination(args: argparse.Namespace) -> None:
    """--output-dir writable (or creatable), --name a plain file name not taken: before any probe."""
    paths.output_dir(args.output_dir, "--output-dir")
    if args.name:
        destination = args.output_dir / bundle_file_name(args.name)
        if os.path.lexists(destination):
            raise UsageError(f"{destination} already exists", hint="choose another --name")


def prepare(args: argparse.Namespace, skip: list[str]) -> dict[str, object]:
    """Each probe's run options checked and resolved before any probe runs (a probe whose every
    step is skipped is not prepared): by probe, what its steps receive as RunState.prepared."""
    prepared: dict[str, object] = {}
    for spec in registry.PROBES:
        if not any(step.step not in skip for step in spec.steps):
            continue
        try:
            check_options(args, spec.run_options)
        except ProbeUsageError as exc:
            raise UsageError(str(exc)) from None
        if spec.prepare_run is not None:
            prepared[spec.name] = spec.prepare_run(args)
    return prepared


def recorded_options(args: argparse.Namespace) -> tuple[tuple[str, ...], ...]:
    """The run's own flags (runner and probe options), recorded so the report's reproduce command
    repeats them."""
    pairs = tuple((flag, str(getattr(args, attr))) for flag, attr in RUNNER_FLAGS if getattr(args, attr) is not None)
    return pairs + tuple(
        pair for spec in registry.PROBES for option in spec.run_options for pair in option.occurrences(args)
    )


def handle(args: argparse.Namespace) -> int:
    plan = lab_plan()
    unknown = sorted(set(args.skip) - set(step_ids(plan)))
    if unknown:
        raise UsageError(f"--skip {', '.join(unknown)}: no such step", hint=f"steps: {', '.join(step_ids(plan))}")
    if not 0 <= args.retest <= MAX_RETEST:
        raise UsageError(f"--retest {args.retest}: must be 0 to {MAX_RETEST}")
    check_destination(args)
    if args.prometheus is not None:
        from harness.export.textfile import check_path

        check_path(args.prometheus)
    prepared = prepare(args, args.skip)
    runner, why = probe.select_from_args(args)
    key, note = signing_key_for_run(args.signing_key)  # after every refusal: a refused run makes no key
    if note:
        print(note, file=sys.stderr)
    options = RunOptions(
        output_dir=args.output_dir,
        name=args.name,
        runner_choice=args.runner,
        skip=tuple(args.skip),
        runner_options=recorded_options(args),
        prepared=prepared,
        retest=args.retest,
    )
    with terminate_as_interrupt():
        path = run_dossier(options, runner, why, key, plan=plan)
    return conclude(path, key, args.prometheus)


def conclude(path: Path, key, prometheus: Path | None = None) -> int:
    """The run's last lines: the bundle verified with the signer's public key (every check `dossier
    verify` makes), the Prometheus textfile when asked for (from the verified content), the answer line
    (`verdict: FAIL: dossier-vm-8c891dc9-....tar.gz: 3 failed, 6 passed (exit 1)`), the verdict block
    (what passed, failed and could not be judged, and why), the bundle's path on stdout, and the answer
    line again, last; the exit code follows the verdict (FAIL 1, INCOMPLETE 5, PASS and WARN 0), the
    bundle written whatever it says."""
    result, view = verify_and_view(path, key.public)
    if not result.ok or view is None:  # a bug in this build: what it wrote does not verify
        print(f"signed with keyid {key.keyid} ({key.path})", file=sys.stderr)
        print(path)
        first = result.failures[0].line() if result.failures else "no view of the signed content"
        raise CheckFailed(
            f"the bundle written does not verify ({len(result.failures)} check(s)): {first}",
            hint=f"`dossier verify {path} --key PUB` lists every check; please report it",
        )
    if prometheus is not None:
        write_prometheus(view, prometheus)
    verdict = run_verdict(view)
    answer = verdict.answer(path.name)
    lines = [
        answer,
        *(f"  {line}" for line in verdict.block()),
        f"bundle written and verified ({len(result.checks)} checks), signed with keyid {key.keyid[:16]}… "
        f"({key.path}); the report is its report.md: `dossier report {path}`",
    ]
    print("\n".join(lines), file=sys.stderr, flush=True)
    print(path, flush=True)  # stdout: the bundle's path alone, for a script
    print(answer, file=sys.stderr)
    return verdict.exit_code


def write_prometheus(view, destination: Path) -> None:
    """The written bundle's statuses and figures, from its verified content as a verifier reads it."""
    from harness.export import gauges

    gauges.run(view).write(destination)
    print(f"run: wrote {destination}", file=sys.stderr)
