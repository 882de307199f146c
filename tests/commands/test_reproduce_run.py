"""`dossier reproduce THEIRS` re-running their plan here: the plan derived from their commands.json
(harness.run.replay: their steps and argv, the options a step derives from this run, the checkpoint by
sha256, their image digest) and, on this CPU, a whole reproduction of a CPU dossier made in the test
through `dossier run`'s orchestration. The CPU's figures are this shared machine's, so the test holds the
process (the plan run, the bundle, the statement), never the verdict."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import importlib
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from harness import registry
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.cli import main
from harness.errors import UsageError
from harness.probes import roofline as roofline_probe
from harness.registry.roofline import roofline_arguments
from harness.registry.steps import NotReady, ProbeStep, RunState, StepArgs, StepSetupFailed
from harness.run import replay
from harness.run.assemble import assemble
from harness.run.orchestrate import Companions, RunOptions, collect
from harness.runners.local import LocalRunner
from harness.verify import verify_bundle
from tests.accept_support import h200_bandwidth
from tests.bundle_support import make_key, quiet_display

FIXTURES = Path(__file__).parents[1] / "fixtures"
H200_FULL = FIXTURES / "h200" / "dossier-h200-full.tar.gz"  # format 4: the roofline's dtypes in steps of their own


def parsed(probe: str, argv: list[str]) -> dict:
    """A recorded argv as the probe reads it: the same values, however written (harness.run.policy)."""
    parser = importlib.import_module(f"harness.probes.{probe}").build_parser()
    return vars(parser.parse_args(argv[argv.index("-m") + 2 :]))


def view(path: Path) -> BundleView:
    return BundleView.from_files(read_all(path), registry.analysis_module)


@pytest.fixture
def no_cache(tmp_path, monkeypatch):
    """An empty checkpoint cache, offline, and no Docker engine to reach."""
    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")


# --- the plan ------------------------------------------------------------------------------------


def test_options_are_read_and_replaced_as_given():
    args = ("--bandwidth-gbps", "4245.52", "--dtype", "fp8", "--shapes", "1x2x3")
    assert replay.option_value(args, "--bandwidth-gbps") == "4245.52"
    assert replay.with_option(args, "--bandwidth-gbps", "2000") == (
        "--bandwidth-gbps",
        "2000",
        "--dtype",
        "fp8",
        "--shapes",
        "1x2x3",
    )
    assert replay.with_option(("--x=1",), "--x", "2") == ("--x=2",)
    assert replay.with_option((), "--x", "2") == ("--x", "2")
    assert replay.their_args({"argv": ["/opt/python3", "-m", "harness.probes.roofline", "--dtype", "bf16"]}) == (
        "--dtype",
        "bf16",
    )
    with pytest.raises(UsageError, match="records no probe command"):
        replay.their_args({"step": "x", "argv": None})


def test_their_plan_is_their_steps_and_argv_with_the_roof_taken_from_this_run(no_cache):
    """The full H200 dossier (format 4): every step theirs, in this build's order (the stress step before health
    under load), the roofline's per-dtype steps after the roofline as they ran; each roofline step fed this
    run's bandwidth median, the rest of its argv theirs; their local checkpoint cannot be had here, which is
    said before any probe runs."""
    theirs = view(H200_FULL)
    made = replay.derive(theirs, "their bundle (test)")
    assert sorted(s.step for s in made.plan) == sorted(s["step"] for s in theirs.steps)
    assert [s.order for s in made.plan] == sorted(s.order for s in made.plan)
    assert made.runner.name == "local" and made.skip == () and made.unhonoured == {}
    assert len(made.said) == 1
    assert made.said[0].startswith("precision: their checkpoint .gpu/minilm3.safetensors (sha256 26aeb714")
    assert "give a copy with `dossier reproduce --checkpoint PATH`" in made.said[0]
    state = RunState(analyses=registry.analysis_module)
    state.add("bandwidth", h200_bandwidth(scale=0.5), "bandwidth")
    here = f"{state.headlines('bandwidth', 'test')['repeat_median_gbps']:.6g}"
    fp8 = next(s for s in made.plan if s.step == "roofline-fp8")
    assert isinstance(fp8, ProbeStep) and fp8.probe == "roofline" and fp8.analysis == "roofline"
    args = fp8.arguments(state)
    recorded = next(s for s in theirs.steps if s["step"] == "roofline-fp8")["argv"][3:]
    parser = roofline_probe.build_parser()  # their values, as this build writes them (harness.run.policy)
    assert vars(parser.parse_args(args.args)) == vars(
        parser.parse_args([here if a == "4245.52" else a for a in recorded])
    )
    assert args.inputs["derived_here"] == {"--bandwidth-gbps": {"theirs": "4245.52", "here": here}}
    assert next(s for s in made.plan if s.step == "transfer").arguments(state).args == (
        "--sizes",
        "4K",
        "64K",
        "1M",
        "4M",
        "16M",
        "64M",
        "256M",
        "512M",
        "--point-budget-s",
        "0.03",
    )
    with pytest.raises(StepSetupFailed, match="was a local file of theirs"):
        next(s for s in made.plan if s.step == "precision").arguments(state)
    diff = next(s for s in made.plan if s.step == "health-diff")
    assert diff.function == "harness.analysis.health.diff:diff"  # the name their build recorded, this build's


def test_their_checkpoint_is_found_by_its_sha256_in_a_copy_given(no_cache, tmp_path):
    torch.manual_seed(3)
    copy = tmp_path / "their-copy.safetensors"
    save_file({"tok.weight": torch.randn(64, 128) * 0.05}, str(copy))
    sha = hashlib.sha256(copy.read_bytes()).hexdigest()
    entry = {
        "step": "precision",
        "checkpoint": {"file_sha256": sha, "label": "/their/disk/model.safetensors"},
        "argv": [
            "python",
            "-m",
            "harness.probes.precision",
            "--file",
            "/their/disk/x",
            "--tensor",
            "embedding=tok.weight",
        ],
    }
    precision = next(s for s in registry.spec("precision").steps if isinstance(s, ProbeStep))
    arguments, cannot = precision.replay(entry, {"checkpoint": copy})
    args = arguments(RunState()).args
    assert cannot == [] and Path(args[args.index("--file") + 1]).name == sha  # the copy, cached by its sha256
    assert "embedding=tok.weight" in args
    other = tmp_path / "other.safetensors"
    save_file({"tok.weight": torch.zeros(2, 2)}, str(other))
    arguments, cannot = precision.replay(entry, {"checkpoint": other})
    assert len(cannot) == 1 and f"their checkpoint sha256 {sha} cannot be had here" in cannot[0]
    with pytest.raises(StepSetupFailed):
        arguments(RunState())


def test_an_image_this_host_cannot_run_makes_their_figures_not_comparable(no_cache):
    """Their probes ran in a docker image (the record edited to say so); no engine answers here: their plan
    runs locally, said before running, and every probe step's figures are marked not comparable."""
    theirs = view(H200_FULL)
    ref = "ghcr.io/example/rig-dossier-cuda@sha256:" + "a" * 64
    commands = {
        **theirs.commands,
        "runner": {"name": "docker", "why": "test"},
        "steps": [{**s, "image": ref} if s.get("kind") == "probe" else s for s in theirs.steps],
    }
    made = replay.derive(dataclasses.replace(theirs, commands=commands), "their bundle (test)")
    assert made.runner.name == "local"
    note = next(line for line in made.said if "docker image" in line)
    assert note.startswith(f"their probes ran in the docker image {ref}, which this host cannot run (")
    assert set(made.unhonoured) == {s["step"] for s in theirs.steps if s.get("kind") == "probe"}


def test_a_plan_naming_what_this_build_lacks_is_refused(no_cache):
    theirs = view(H200_FULL)
    for edit, message in (({"probe": "warp"}, "runs the probe 'warp', which this build lacks"),):
        steps = [{**s, **edit} if s["step"] == "bandwidth" else s for s in theirs.steps]
        with pytest.raises(UsageError, match=message):
            replay.derive(dataclasses.replace(theirs, commands={**theirs.commands, "steps": steps}), "test")
    steps = [{**s, "function": "harness.analysis.gone:diff"} if s["step"] == "health-diff" else s for s in theirs.steps]
    with pytest.raises(UsageError, match="no host step in this build's registry computes with"):
        replay.derive(dataclasses.replace(theirs, commands={**theirs.commands, "steps": steps}), "test")


def test_a_gpu_bundle_is_not_re_run_on_a_host_without_one(tmp_path, capsys):
    from harness.runners.select import host_has_nvidia_gpu

    if host_has_nvidia_gpu()[0]:
        pytest.skip("this host has a GPU")
    key, public = make_key(tmp_path / "k")
    code = main(
        [
            "reproduce",
            str(H200_FULL),
            "--key",
            str(FIXTURES / "h200" / "dossier-h200-full.pub"),
            "--output-dir",
            str(tmp_path / "out"),
            "--signing-key",
            str(key.path),
            "--allow-format",
            "4",
        ]
    )  # the committed full dossier's format, older than this build's
    err = capsys.readouterr().err
    assert code == 2 and "THEIRS was measured on 1 x NVIDIA H200 (h200-sxm-141gb); this host has no GPU" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# --- a whole reproduction on this CPU ------------------------------------------------------------

SMALL_BANDWIDTH = StepArgs(("--repeats", "3", "--size-mib", "1", "4", "--point-budget-s", "0.05"))
RAN = ("health", "bandwidth", "roofline")


def small_roofline(state: RunState) -> StepArgs:
    made = roofline_arguments(state)
    return dataclasses.replace(made, args=(*made.args, "--no-default-shapes", "--shapes", "256x256x256", "--no-fusion"))


@pytest.fixture(scope="module")
def theirs_on_cpu(tmp_path_factory):
    """Their dossier of this CPU: health, a small bandwidth sweep and a one-shape roofline fed its median."""
    tmp = tmp_path_factory.mktemp("theirs")
    key, public = make_key(tmp / "key")
    plan = tuple(
        dataclasses.replace(s, arguments=lambda state: SMALL_BANDWIDTH)
        if s.step == "bandwidth"
        else dataclasses.replace(s, arguments=small_roofline)
        if s.step == "roofline"
        else s
        for s in registry.lab_plan()
    )
    record = collect(
        RunOptions(output_dir=tmp, skip=tuple(s.step for s in plan if s.step not in RAN)),
        LocalRunner(),
        "test: this CPU",
        plan,
        display=quiet_display(len(plan)),
    )
    path = tmp / "theirs.tar.gz"
    path.write_bytes(assemble(record, key))
    return path, public


def test_their_cpu_dossier_is_re_run_here_and_judged(theirs_on_cpu, tmp_path, capsys):
    theirs, their_public = theirs_on_cpu
    key, public = make_key(tmp_path / "mine-key")
    out = tmp_path / "out"
    code = main(
        [
            "reproduce",
            str(theirs),
            "--key",
            str(their_public),
            "--output-dir",
            str(out),
            "--name",
            "mine",
            "--signing-key",
            str(key.path),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err  # the verdict is this shared CPU's; the process is what is tested
    assert "reproduce: precision: not run there (skipped with --skip precision), not run here" in captured.err
    mine = out / "mine.tar.gz"
    assert verify_bundle(mine, key.public).ok
    recorded = {s["step"]: s for s in json.loads(read_all(theirs)["commands.json"])["steps"]}
    made = {s["step"]: s for s in json.loads(read_all(mine)["commands.json"])["steps"]}
    assert list(made) == list(recorded)
    assert [s for s in made if made[s]["status"] == "completed"] == list(RAN)
    assert parsed("bandwidth", made["bandwidth"]["argv"]) == parsed("bandwidth", recorded["bandwidth"]["argv"])
    roof = made["roofline"]["inputs"]["derived_here"]["--bandwidth-gbps"]
    assert roof["theirs"] == recorded["roofline"]["argv"][recorded["roofline"]["argv"].index("--bandwidth-gbps") + 1]
    assert parsed("roofline", made["roofline"]["argv"]) == parsed(
        "roofline", [roof["here"] if a == roof["theirs"] else a for a in recorded["roofline"]["argv"]]
    )
    assert made["roofline"]["inputs"]["argv_from"].startswith("their bundle theirs.tar.gz (sha256 ")
    result = json.loads(captured.out)
    assert result["made"]["mode"] == "rerun" and result["verdict"] in ("reproduced", "not_reproduced")
    assert [s["step"] for s in result["made"]["plan"]["steps"]] == list(recorded)
    assert {f["probe"] for f in result["figures"]} == {"health", "bandwidth", "roofline"}
    statement = out / "reproduction-theirs-vs-mine.intoto.json"
    subjects = json.loads(base64.b64decode(json.loads(statement.read_bytes())["payload"]))["subject"]
    assert [s["name"] for s in subjects] == ["theirs/theirs.tar.gz", "mine/mine.tar.gz"]
    assert main(["verify-reproduction", str(statement), str(theirs), str(mine), "--key", str(public)]) == 0


def test_their_health_under_load_and_all_reduce_follow_this_builds_rules_here(no_cache):
    """Their health under load is taken under this run's load (never a pid of theirs), in this build's place:
    the full dossier took it before its stress step, with its own load; here it comes after the stress step in
    the plan and is taken during it, as `dossier run` takes it; their one-GPU all-reduce starts no process
    where this run's health step counted one GPU (the backend is this run's, from the count), as `dossier
    run` does."""
    theirs = view(H200_FULL)
    made = replay.derive(theirs, "their bundle (test)")
    load = next(s for s in made.plan if s.step == "health-load")
    assert load.during == "stress" and [s.step for s in made.plan].index("health-load") > [
        s.step for s in made.plan
    ].index("stress")
    assert Companions(made.plan, LocalRunner(), made.skip).waiting == {"health-load": load}  # taken during it
    state = RunState(analyses=registry.analysis_module)
    assert load.arguments(state).args == ("--under-load", "8")
    state.loads["stress"] = {"pids": [4242], "what": "this run's stress GEMM", "remaining_s": 30.0}
    assert load.arguments(state).args[:2] == ("--during-load", "4242")
    entry = next(s for s in theirs.steps if s["step"] == "health-load")
    recorded = {**entry, "argv": [*entry["argv"][:3], "--during-load", "999", "--load-window", "2"]}
    arguments, cannot = load.replay(recorded, {})
    assert cannot == [] and "999" not in arguments(state).args  # their pids named processes of their machine
    allreduce = next(s for s in made.plan if s.step == "allreduce")
    one = RunState(analyses=registry.analysis_module)
    one.add("health", json.loads(read_all(H200_FULL)["raw/health.json"]), "health")
    with pytest.raises(NotReady, match="no all-reduce process was started"):
        allreduce.arguments(one)
    two = RunState(analyses=registry.analysis_module)
    two.add("health", json.loads(read_all(FIXTURES / "h200x2" / "dossier-h200x2.tar.gz")["raw/health.json"]), "health")
    args = allreduce.arguments(two)
    assert args.args == ("--backend", "nccl") and args.inputs["derived_here"] == {
        "--backend": {"theirs": "nccl", "here": "nccl"}
    }


def test_a_format_4_plan_is_run_in_this_builds_order(no_cache):
    """The committed format-4 H200 dossier ran health under load and the idle/load diff before the stress step,
    and its roofline's dtypes in steps of their own: replayed, the steps this build knows take its plan's order
    (stress, then health under load during it, then the diff: the order verify holds a bundle of this format
    to), and the dtype steps stay right after the roofline."""
    theirs = view(H200_FULL)
    assert [s["step"] for s in theirs.steps][-3:] == ["health-load", "health-diff", "stress"]
    made = replay.derive(theirs, "test")
    steps = [s.step for s in made.plan]
    assert steps == [
        "health",
        "bandwidth",
        "roofline",
        "roofline-fp8",
        "roofline-fp16",
        "roofline-tf32",
        "roofline-fp32",
        "precision",
        "allreduce",
        "transfer",
        "stress",
        "health-load",
        "health-diff",
    ]
    assert len({s.order for s in made.plan}) == len(steps)
    own = {s.step: i for i, s in enumerate(registry.lab_plan())}
    planned = [own[s] for s in steps if s in own]
    assert planned == sorted(planned)
