"""Their plan is data: another party's recorded probe arguments, as a replay here may take them.

`vet` parses their argv (the words after `-m harness.probes.PROBE`) with the probe's own options, as
the probe would (abbreviations, `--opt=value`, a repeated option), then applies each option's replay
policy (harness.probes.policy): a value a replay TAKEs must pass the option's parser, its check and
the replay's bound (a number's range, a shape's form: else their plan is refused, exit 2, before any
probe runs); an option a replay REFUSEs (a file, a process, a host of theirs) is left out, said in one
line, and the step's figures are then not comparable; one the step REMAKEs here is left to the step.
What runs is this build's own command line of the values taken (each option's long flag, in the order
the probe declares them), never their words. `refusals` gives, from a bundle alone, the refused options of each of its steps: what
`dossier reproduce` says before it runs their plan and what `dossier verify-reproduction` re-derives.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness import registry
from harness.analysis.verdict import StepStatus
from harness.bundle.view import BundleView
from harness.errors import UsageError
from harness.probes.contract import Option
from harness.probes.policy import REMAKE, TAKE, Replay
from harness.registry.spec import ProbeSpec
from harness.registry.steps import ProbeStep


class _Refused(Exception):
    """Their argv does not parse as the probe's options."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print and exit: a plan is refused instead
        raise _Refused(message)


@dataclass(frozen=True)
class Vetted:
    """Their step's arguments as a replay here takes them."""

    args: tuple[str, ...]  # this build's command line of the values taken
    refused: tuple[str, ...]  # one line per option left out: the flag, and what of their machine it names


def _parse(probe: str, options: Sequence[Option], args: Sequence[str]) -> argparse.Namespace:
    """ARGS as the probe parses them, holding only the options given (a value equal to the default too)."""
    parser = _Parser(prog=f"their {probe} probe", add_help=False)
    for option in options:
        parser.add_argument(*option.flags, **{**option.kwargs, "default": argparse.SUPPRESS, "required": False})
    return parser.parse_args(list(args))


def _words(option: Option, value: Any) -> list[str]:
    """VALUE of OPTION as this build's command-line words."""
    flag = next((f for f in option.flags if f.startswith("--")), option.flags[0])
    action = option.kwargs.get("action")
    if action in ("store_true", "store_false"):
        return [flag]
    if action == "append":
        return [word for item in value for word in (flag, str(item))]
    if isinstance(value, (list, tuple)):
        return [flag, *map(str, value)]
    return [flag, str(value)]


def _policy(option: Option) -> Replay:
    return option.replay or Replay("refuse", None, "no replay policy declared for it in this build")


def vet(probe: str, step: str, options: Sequence[Option], args: Sequence[str]) -> Vetted:
    """Their STEP's ARGS for PROBE (its OPTIONS) as a replay takes them; UsageError (exit 2) when a value
    is not one the probe or a replay accepts."""
    where = f"their plan's {step} step"
    try:
        namespace = _parse(probe, options, args)
    except _Refused as exc:
        raise UsageError(f"{where}: its {probe} arguments are not this build's: {exc}") from None
    words: list[str] = []
    refused = []
    for option in options:
        if not hasattr(namespace, option.dest):
            continue
        policy, value = _policy(option), getattr(namespace, option.dest)
        flag = next((f for f in option.flags if f.startswith("--")), option.flags[0])
        if policy.policy == TAKE:
            for check in (option.check, policy.bound):
                why = check(value) if check is not None and value is not None else None
                if why:
                    raise UsageError(f"{where}: {flag} {why}", hint="their plan is refused before any probe runs")
            words += _words(option, value)
        elif policy.policy != REMAKE:
            refused.append(f"their {flag} is not taken ({policy.why}): the step runs without it")
    return Vetted(tuple(words), tuple(refused))


def base_step(spec: ProbeSpec, step: str) -> ProbeStep:
    """The registry's declaration a replay of their STEP of SPEC's probe follows: the step of that id, else
    the probe's first step (a step id an older build recorded)."""
    steps = [s for s in spec.steps if isinstance(s, ProbeStep)]
    return next((s for s in steps if s.step == step), steps[0])


def made_from(theirs_sha256: str, mine: BundleView) -> bool:
    """Whether MINE records its plan as taken from the bundle of sha256 THEIRS_SHA256 (`dossier reproduce`
    ran it: a step's recorded inputs say `argv_from` it)."""
    for step in mine.steps:
        inputs = step.get("inputs")
        origin = inputs.get("argv_from") if isinstance(inputs, dict) else None
        if isinstance(origin, str) and f"(sha256 {theirs_sha256})" in origin:
            return True
    return False


def _image_why(their_image: Any, mine: Mapping[str, Any] | None) -> str | None:
    mine_image = (mine or {}).get("image")
    if not isinstance(their_image, str) or mine_image == their_image:
        return None
    where = f"in the image {mine_image}" if isinstance(mine_image, str) else "as a local process"
    return f"their probe ran in the docker image {their_image}; here it ran {where}"


def unhonoured(theirs: BundleView, theirs_sha256: str, mine: BundleView) -> dict[str, str]:
    """MINE's steps whose figures are not comparable because their plan was not honoured where MINE was made,
    with why, from the two bundles alone (no host, no clock): none unless MINE is a replay of THEIRS
    (`made_from`); else each probe step of theirs that ran and that MINE ran in another image than theirs, or
    without an option a replay does not take (`vet`). `dossier reproduce` judges with it, and
    `dossier verify-reproduction` derives it again."""
    if not made_from(theirs_sha256, mine):
        return {}
    mine_steps = {s.get("step"): s for s in mine.steps}
    found = {}
    for entry in theirs.steps:
        spec = registry.find(entry.get("probe")) if entry.get("kind") == "probe" else None
        if spec is None or entry.get("status") == StepStatus.NOT_RUN:
            continue
        step = str(entry.get("step"))
        whys = [_image_why(entry.get("image"), mine_steps.get(step))]
        if base_step(spec, step).replay is None:  # a step with its own replay hook re-makes its command whole
            whys += vet(spec.name, step, spec.options, their_args(entry)).refused
        if any(whys):
            found[step] = "; ".join(w for w in whys if w)
    return found


def their_args(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """Their probe's arguments: the recorded argv after `-m PACKAGE.PROBE`."""
    argv = entry.get("argv")
    if not isinstance(argv, list) or "-m" not in argv or argv.index("-m") + 1 >= len(argv):
        raise UsageError(f"their {str(entry.get('step'))[:60]!r} step records no probe command (argv {str(argv)[:80]})")
    return tuple(str(a) for a in argv[argv.index("-m") + 2 :])
