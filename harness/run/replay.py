"""`dossier reproduce THEIRS`: their run's plan, derived from their commands.json, to be run here.

Their steps, in this build's plan order (the bundle written here is of this build's format, whose plan
order verify holds it to: a format-4 plan ran the stress step last), each with their recorded argv
(after `-m harness.probes.PROBE`) as data: parsed with the probe's own options and written again as this
build's command line of what a replay takes (harness.run.policy: each value checked, an option naming a
file, a process or a host of theirs left out and said, a malformed one refused with exit 2, before any
probe runs), except:
- an option the step declares `derived` (the roofline's --bandwidth-gbps: the memory roof it is fed)
  is taken from this run's own earlier step, as `dossier run` takes it, so that each figure stands on
  this machine's measurements;
- a step that declares `replay` is re-made by it (the precision step: their checkpoint fetched here
  by its sha256, the same tensors by name);
- a step they did not run is not run here (their why recorded);
- host steps are this build's (the idle/load diff, under the name their build recorded).
Their runner: local, or docker with the very image digest they ran in. What this host cannot honour
is said before any probe runs: a missing checkpoint fails its step, saying so; an image that is not
here runs their probes locally and every figure of those steps is marked not comparable. A plan that
names a probe, a host function or a format of step this build lacks is refused (exit 2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import registry
from harness.analysis.verdict import StepStatus
from harness.bundle.view import BundleView
from harness.errors import DossierError, UsageError
from harness.registry.steps import HostStep, ProbeStep, RunState, Step, StepArgs
from harness.run import policy
from harness.run.policy import their_args
from harness.runners.images import PinnedImage
from harness.runners.interface import Runner
from harness.runners.local import LocalRunner
from harness.runners.select import first_line

ORDER_STEP = 10


@dataclass(frozen=True)
class Replay:
    """Their plan, as this host runs it."""

    plan: tuple[Step, ...]
    skip: tuple[str, ...]  # their steps that did not run there: not run here either
    runner: Runner
    runner_why: str
    said: tuple[str, ...]  # what this host cannot honour, said before any probe runs
    unhonoured: Mapping[str, str]  # step -> why its figures are not comparable (another image)
    retest: int = 0
    not_run: tuple[str, ...] = ()  # their steps not run there (with their why), not run here

    def to_json(self) -> dict[str, Any]:
        """The plan as a reproduction statement records it."""
        return {
            "steps": [
                {
                    "step": s.step,
                    "kind": s.kind,
                    **(
                        {"probe": s.probe, "derived": list(s.derived)}
                        if isinstance(s, ProbeStep)
                        else {"function": s.function}
                    ),
                }
                for s in self.plan
            ],
            "skipped": list(self.not_run),
            "runner": self.runner.name,
            "runner_why": self.runner_why,
            "not_honoured": list(self.said),
        }


def option_value(args: Sequence[str], option: str) -> str | None:
    """The value given to OPTION in ARGS (`--opt V` or `--opt=V`), or None."""
    for i, arg in enumerate(args):
        if arg == option and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
    return None


def with_option(args: Sequence[str], option: str, value: str) -> tuple[str, ...]:
    """ARGS with OPTION's value replaced by VALUE (added when absent)."""
    out, i, found = [], 0, False
    while i < len(args):
        if args[i] == option and i + 1 < len(args):
            out += [option, value]
            i, found = i + 2, True
            continue
        if args[i].startswith(option + "="):
            out.append(f"{option}={value}")
            i, found = i + 1, True
            continue
        out.append(args[i])
        i += 1
    return tuple(out) if found else (*out, option, value)


def _arguments(
    entry: Mapping[str, Any], base: ProbeStep | None, origin: str, taken: tuple[str, ...]
) -> Callable[[RunState], StepArgs]:
    """Their argv as a replay takes it (TAKEN: harness.run.policy.vet), with each option BASE declares
    derived taken from this run's own earlier steps."""
    theirs = their_args(entry)
    step = entry.get("step")

    def arguments(state: RunState) -> StepArgs:
        args, derived = taken, {}
        if base is not None and base.derived:
            mine = base.arguments(state).args  # NotReady when what it derives from did not complete here
            for option in base.derived:
                value = option_value(mine, option)
                if value is not None and option_value(theirs, option) is not None:
                    derived[option] = {"theirs": option_value(theirs, option), "here": value}
                    args = with_option(args, option, value)
        inputs: dict[str, Any] = {"argv_from": f"{origin}, step {step}"}
        if derived:
            inputs["derived_here"] = derived
        return StepArgs(args, inputs=inputs)

    return arguments


def _registered(step_id: str, probe: str | None) -> Step | None:
    return next(
        (s for s in registry.lab_plan() if s.step == step_id and (probe is None or getattr(s, "probe", None) == probe)),
        None,
    )


def _probe_step(
    entry: Mapping[str, Any], order: int, origin: str, given: Mapping[str, Any], said: list[str], refused: dict
) -> ProbeStep:
    probe = entry.get("probe")
    spec = registry.find(probe)
    if spec is None:
        raise UsageError(
            f"their plan's step {entry.get('step')} runs the probe {probe!r}, which this build lacks "
            f"(it has {', '.join(p.name for p in registry.PROBES)})",
            hint="reproduce it with the build that made their bundle (commands.json tool.git_commit)",
        )
    own = _registered(str(entry["step"]), probe)
    base = policy.base_step(spec, str(entry["step"]))
    step = (
        own
        if isinstance(own, ProbeStep)
        else ProbeStep(
            str(entry["step"]),
            spec.name,
            str(entry.get("title") or entry["step"]),
            str(entry.get("lab_step") or ""),
            spec.schema,
            spec.analysis,
            None,
            base.timeout_s,
        )
    )
    if entry.get("status") == StepStatus.NOT_RUN:
        arguments: Callable[[RunState], StepArgs] = lambda state: StepArgs()  # noqa: E731 - skipped, never called
    else:
        vetted = policy.vet(spec.name, str(entry["step"]), spec.options, their_args(entry))  # exit 2: refused
        if base.replay is not None:  # the step re-makes its command itself from their record
            arguments, cannot = base.replay(entry, given)
            said.extend(cannot)
        else:
            arguments = _arguments(entry, base, origin, vetted.args)
            if vetted.refused:
                refused[str(entry["step"])] = "; ".join(vetted.refused)
                said.extend(f"{entry['step']}: {line}" for line in vetted.refused)
    return dataclasses.replace(step, arguments=arguments, independent=False, order=order)


def _host_step(entry: Mapping[str, Any], order: int) -> HostStep:
    function = str(entry.get("function"))
    try:
        registry.host_function(function)
    except registry.NotInRegistry as exc:
        raise UsageError(f"their plan's step {entry.get('step')}: {exc}") from None
    own = _registered(str(entry["step"]), None)
    if isinstance(own, HostStep):
        return dataclasses.replace(own, order=order)
    needs = entry.get("needs")
    needs = needs if isinstance(needs, list) else []
    return HostStep(
        str(entry["step"]),
        str(entry.get("title") or entry["step"]),
        str(entry.get("lab_step") or ""),
        str(entry.get("schema")),
        tuple(map(str, needs)),
        registry.RECORDED_NAMES.get(function, function),
        order=order,
    )


def _runner(view: BundleView, device: str | None) -> tuple[Runner, str, str | None]:
    """Their runner here: (runner, why, why it is not theirs or None)."""
    runner = view.commands.get("runner")
    runner = runner if isinstance(runner, dict) else {}
    if runner.get("name") != "docker":
        return LocalRunner(), f"their probes ran as local processes ({runner.get('name')}): local here too", None
    refs = sorted({s["image"] for s in view.steps if isinstance(s.get("image"), str)})
    if len(refs) != 1:
        return (
            LocalRunner(),
            "local",
            f"their probes ran in {len(refs)} images ({', '.join(refs) or 'none recorded'}): "
            "this build runs one image a run, so they run locally here",
        )
    try:
        from harness.runners.docker import DockerRunner, connect

        pinned = PinnedImage("theirs", refs[0], Path("their commands.json"))
        docker = DockerRunner(pinned, client=connect(), gpus="all" if device == "cuda" else None)
        docker.check_gpus_inside(docker.resolve())
    except DossierError as exc:
        return (
            LocalRunner(),
            "local",
            f"their probes ran in the docker image {refs[0]}, which this host cannot run "
            f"({first_line(exc)}): they run locally here",
        )
    return docker, f"docker: their image {refs[0]}, the same digest", None


def derive(view: BundleView, origin: str, given: Mapping[str, Any] | None = None, device: str | None = None) -> Replay:
    """Their plan from their bundle's commands.json, as this host runs it (the module docstring's rules).
    ORIGIN names their bundle in each step's recorded inputs; GIVEN holds the reproduce command's options
    for steps that re-make themselves (a local copy of their checkpoint); DEVICE is what they ran on."""
    given = given or {}
    plan: list[Step] = []
    skip: list[str] = []
    said: list[str] = []
    not_run: list[str] = []
    refused: dict[str, str] = {}
    own = {step.step: step.order for step in registry.lab_plan()}
    after = 0  # the order of the last step of theirs this build's plan knows
    for position, entry in enumerate(view.steps, start=1):
        # this build's order for a step it knows (a bundle of this format must list its steps in its plan's
        # order, and a format-4 plan ran the stress step last); one it does not (a format-4 roofline dtype
        # step) right after the known step theirs ran it after
        known = own.get(str(entry.get("step")))
        after = known if known is not None else after
        order = known if known is not None else after + position % ORDER_STEP + 1
        if entry.get("kind") == "host":
            plan.append(_host_step(entry, order))
        else:
            plan.append(_probe_step(entry, order, origin, given, said, refused))
        if entry.get("status") == StepStatus.NOT_RUN:
            skip.append(str(entry["step"]))
            not_run.append(f"{entry['step']}: not run there ({entry.get('why') or 'no reason recorded'}), not run here")
    plan.sort(key=lambda step: step.order)
    runner, why, not_theirs = _runner(view, device)
    unhonoured = dict(refused)
    if not_theirs:
        said.append(not_theirs)
        unhonoured = {
            s.step: "; ".join(w for w in (not_theirs, refused.get(s.step)) if w)
            for s in plan
            if isinstance(s, ProbeStep) and s.step not in skip
        }
    options = view.commands.get("options")
    options = options if isinstance(options, dict) else {}
    retest = options.get("retest")
    retest = retest if isinstance(retest, int) else 0
    return Replay(tuple(plan), tuple(skip), runner, why, tuple(said), unhonoured, retest, tuple(not_run))
