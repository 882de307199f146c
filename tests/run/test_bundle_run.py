"""Running a plan into a bundle: outcomes recorded, deterministic bytes, nothing half-written."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.bundle.read import read_all
from harness.run import destination as dossier  # where the bundle is assembled and written
from harness.run.assemble import assemble
from harness.run.destination import bundle_path
from harness.run.orchestrate import RunOptions, run_dossier
from harness.runners.local import LocalRunner
from harness.verify import verify_bundle
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import collect_test_plan, make_key, quiet_display, tick_modules  # noqa: F401 - a pytest fixture, requested by name

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def recorded(tmp_path, tick_modules):  # noqa: F811 - the fixture imported above
    return collect_test_plan(tmp_path)


def test_each_outcome_is_recorded_and_the_run_goes_on(recorded):
    status = {s.step: s.status for s in recorded.steps}
    assert status == {
        "tick": "completed",
        "fails": "failed",
        "tock": "completed",
        "orphan": "not_run",
        "absent": "not_run",
    }
    by_step = {s.step: s for s in recorded.steps}
    assert by_step["fails"].run.exit_code == 3 and "exited with code 3" in by_step["fails"].why
    assert "needs the failed step's output from the fails step" in by_step["orphan"].why
    assert "no_such_probe.py is not in this build" in by_step["absent"].why
    assert by_step["tock"].run.argv[-2:] == ("--label", "after-tick")


def test_bundle_holds_raw_output_logs_plots_and_commands(recorded, tmp_path):
    key, _ = make_key(tmp_path / "k")
    files = read_all(_write(recorded, key, tmp_path))
    assert json.loads(files["raw/tick.json"])["probe"] == "tick"
    assert files["logs/fails.stdout.txt"] == b'{"partial": \n'
    assert b"the device went away" in files["logs/fails.stderr.txt"]
    assert b"##progress" in files["logs/tick.stderr.txt"]
    assert {"plots/tick/tick.png", "plots/tick/tick.svg"} <= set(files)
    commands = json.loads(files["commands.json"])
    fails = next(s for s in commands["steps"] if s["step"] == "fails")
    assert fails["exit_code"] == 3 and "device went away" in fails["stderr_tail"]
    assert fails["stdout"] == "logs/fails.stdout.txt" and fails["output"] is None
    report = files["report.md"].decode()
    assert "| 2 | A failing probe (test) (`fails`) | test | failed | 3 |" in report  # by its recorded title
    assert "![plots/tick/tick.png](plots/tick/tick.png)" not in report  # not a lab criterion's step
    assert "| `mean_mib_per_s` |" in report and "MiB/s" in report  # a step no criterion reads: its figures' table


def test_same_records_give_byte_identical_bundles(recorded, tmp_path):
    key, _ = make_key(tmp_path / "k")
    assert assemble(recorded, key) == assemble(recorded, key)


def _write(recorded, key, tmp_path):
    from harness.bundle.write import write_atomically

    return write_atomically(assemble(recorded, key), tmp_path / "out" / "b.tar.gz")


def test_a_crash_while_assembling_or_writing_leaves_no_bundle(tmp_path, monkeypatch, tick_modules):  # noqa: F811 - the fixture imported above
    key, _ = make_key(tmp_path / "k")
    options = RunOptions(output_dir=tmp_path / "out", name="crashed")
    runner = LocalRunner(package=test_plan.PACKAGE)
    plan = test_plan.PLAN[:1]

    def boom(*args, **kwargs):
        raise RuntimeError("simulated crash while signing")

    monkeypatch.setattr(dossier, "assemble", boom)
    with pytest.raises(RuntimeError):
        run_dossier(options, runner, "test", key, plan, display=quiet_display(1))
    monkeypatch.undo()
    monkeypatch.setattr(os, "link", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run_dossier(options, runner, "test", key, plan, display=quiet_display(1))
    assert list((tmp_path / "out").iterdir()) == []  # neither the bundle nor a temporary


INTERRUPTED_RUN = """
import sys
from pathlib import Path
from harness.run.orchestrate import RunOptions, run_dossier
from harness.runners.local import LocalRunner
from harness.signing.keys import load_private
from tests.bundle_probes.plan import PACKAGE, SLOW_PLAN
try:
    run_dossier(RunOptions(Path(sys.argv[1]), name="interrupted"), LocalRunner(package=PACKAGE), "test",
                load_private(Path(sys.argv[2])), SLOW_PLAN)
except KeyboardInterrupt:
    raise SystemExit(130)
"""


def sigint_as_at_a_terminal() -> None:
    """In the child, before exec: SIGINT at its default, as in a terminal's foreground job. A shell
    starts a background job (`make test &`, nohup) with SIGINT ignored and children inherit that,
    so Python would never raise KeyboardInterrupt and these tests would wait on a run that cannot
    be interrupted."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_during_a_run_leaves_no_bundle_and_stops_the_probe(tmp_path):
    key, _ = make_key(tmp_path / "k")
    out, pidfile = tmp_path / "out", tmp_path / "probe.pid"
    env = dict(os.environ, DOSSIER_TEST_PIDFILE=str(pidfile), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_RUN, str(out), str(key.path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=sigint_as_at_a_terminal,
    )
    deadline = time.monotonic() + 60
    while not pidfile.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
        time.sleep(0.05)
    probe_pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    assert not out.exists() or list(out.iterdir()) == []
    with pytest.raises(ProcessLookupError):
        os.kill(probe_pid, 0)


# `dossier run` itself (harness.cli.main) on a plan whose first step is plotted, so the background
# plot worker is running when the second step waits for Ctrl-C.
CLI_RUN_OF_THE_TEST_PLAN = """
import sys
from harness import cli
from harness.commands import probe as _probe, run
from harness.runners.local import LocalRunner
from tests.bundle_probes import plan
plan.install()
run.lab_plan = lambda: plan.PLOTTED_SLOW_PLAN
_probe.select_from_args = lambda args: (LocalRunner(package=plan.PACKAGE), "tests: the test-only probes")
raise SystemExit(cli.main(sys.argv[1:]))
"""


def test_ctrl_c_during_dossier_run_prints_no_traceback_from_any_process(tmp_path):
    """Ctrl-C at a terminal signals the whole foreground process group: the CLI and the plot worker."""
    key, _ = make_key(tmp_path / "k")
    out, pidfile = tmp_path / "out", tmp_path / "probe.pid"
    env = dict(os.environ, DOSSIER_TEST_PIDFILE=str(pidfile), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLI_RUN_OF_THE_TEST_PLAN,
            "run",
            "--output-dir",
            str(out),
            "--name",
            "interrupted",
            "--signing-key",
            str(key.path),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=sigint_as_at_a_terminal,
    )
    deadline = time.monotonic() + 120
    while not pidfile.exists():  # the slow probe started: the tick step is done and its plots submitted
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    text = stderr.decode()
    assert proc.returncode == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "interrupted: nothing half-written was left behind" in text
    assert not out.exists() or list(out.iterdir()) == []


def test_bundle_name_defaults_to_host_and_time(recorded, tmp_path):
    path = bundle_path(tmp_path, None, recorded)
    assert path.parent == tmp_path and path.name.startswith("dossier-") and path.name.endswith("Z.tar.gz")


def test_test_plan_bundle_verifies(recorded, tmp_path):
    key, public = make_key(tmp_path / "k")
    from harness.signing.keys import load_public

    result = verify_bundle(_write(recorded, key, tmp_path), load_public(public))
    assert result.ok, [c.line() for c in result.failures]


def test_plots_rendered_in_the_background_equal_plots_rendered_inline(recorded):
    from harness.present.plotting import render_inline

    tick = next(s for s in recorded.steps if s.step == "tick")
    assert tick.plot_files and tick.plot_note is None
    assert dict(tick.plot_files) == render_inline(tick.plots, tick.step, tick.document)[0]


def test_independent_step_prepared_early_records_its_failure_and_the_run_goes_on(tmp_path):
    from harness.registry.steps import ProbeStep, StepSetupFailed

    def no_checkpoint(state):
        raise StepSetupFailed("could not resolve the default checkpoint: offline")

    plan = (
        ProbeStep(
            "early",
            "tick",
            "Prepared early (test)",
            "test",
            schema="common",
            analysis=None,
            plots=None,
            timeout_s=60,
            arguments=no_checkpoint,
            independent=True,
        ),
        test_plan.PLAN[1],
    )
    record = collect_test_plan(tmp_path, plan)
    early, fails = record.steps
    assert early.status == "failed" and "offline" in early.why and early.run is None
    assert fails.status == "failed" and fails.run.exit_code == 3


def test_a_plot_module_that_cannot_import_leaves_a_note_not_a_crash(recorded, monkeypatch, tmp_path):
    import dataclasses

    from harness.present.plotting import render_step_plots

    monkeypatch.setitem(sys.modules, "tests_broken_plots", None)  # importing it raises ImportError
    files, note = render_step_plots("tests_broken_plots", "tick", "tick", {})
    assert files == {} and "cannot import harness/present/plots/tick.py" in note
    key, _ = make_key(tmp_path / "k")
    tick = next(s for s in recorded.steps if s.step == "tick")
    noted = dataclasses.replace(recorded, steps=(dataclasses.replace(tick, plot_files={}, plot_note=note),))
    commands = json.loads(read_all(_write(noted, key, tmp_path))["commands.json"])
    assert commands["steps"][0]["plot_note"] == note and commands["steps"][0]["plots"] == []
