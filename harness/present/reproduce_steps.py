"""report.md's How to reproduce: the whole run's `dossier run` command, each step's command short,
the allowlisted environment once, and the checkpoints by what finds them again anywhere (a file of
the machine that ran it by its name and sha256; harness.present.portable rewrites the rest)."""

from __future__ import annotations

import re
import shlex
from typing import Any

from harness.bundle.view import BundleView
from harness.judge.evidence import checkpoint_name
from harness.present.folding import environment_text, short_command


def _strings(value: Any) -> list[str]:
    """VALUE if it is a list of strings, else an empty list (a malformed field renders as nothing)."""
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def sentence(text: Any) -> str:
    """TEXT as a sentence: its first letter capital, ending in a full stop."""
    flat = " ".join(str(text).split())
    if not flat:
        return flat
    flat = flat[0].upper() + flat[1:]
    return flat if flat.endswith((".", "!", "?", ":", "…")) else flat + "."


def command_line(entry: dict[str, Any]) -> str | None:
    """The step's command, short: `python -m harness.probes.NAME ARGS`, long arguments folded (the
    exact argv and environment are in commands.json)."""
    argv = _strings(entry.get("argv"))
    return short_command(argv) if argv else None


def _step_environment(entry: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in _mapping(entry.get("env")).items() if isinstance(k, str) and isinstance(v, str)}


def environment_context(view: BundleView) -> dict[str, Any]:
    """The allowlisted environment once: the variables every step that ran had alike (`common`),
    and by step what differs from that (`by_step`)."""
    recorded = [
        (str(entry.get("step")), _step_environment(entry)) for entry in view.steps if _strings(entry.get("argv"))
    ]
    common = dict(recorded[0][1]) if recorded else {}
    for _, env in recorded[1:]:
        common = {k: v for k, v in common.items() if env.get(k) == v}
    by_step = {step: environment_text({k: v for k, v in env.items() if common.get(k) != v}) for step, env in recorded}
    return {
        "common": environment_text(common),
        "by_step": {k: v for k, v in by_step.items() if v},
        "steps": len(recorded),
    }


LOCAL_FILE = re.compile(r"[^@\s]*/[^/@\s]+\.\w+")  # a relative or absolute path to a file (not org/repo@revision)


def _option_value(value: str) -> str:
    """An option's value as the reader can give it: a file of the machine that ran it by its name
    (the sha256 beside it pins the file), any other value as it was."""
    return value.replace("\\", "/").rsplit("/", 1)[-1] if LOCAL_FILE.fullmatch(value) else value


def dossier_command(commands: dict[str, Any]) -> list[str]:
    """`dossier run` with the run's options, one option a line (the template joins them with a
    shell line continuation)."""
    options = _mapping(commands.get("options"))
    lines = [shlex.join(["dossier", "run", "--runner", str(options.get("runner", "auto"))])]
    pairs = options.get("runner_options")
    for pair in pairs if isinstance(pairs, list) else []:
        words = _strings(pair)[:2]
        lines.append(shlex.join([*words[:1], *map(_option_value, words[1:])]))
    for step in _strings(options.get("skip")):
        lines.append(shlex.join(["--skip", step]))
    return lines


def checkpoint_lines(checkpoint: dict[str, Any]) -> list[str]:
    """A checkpoint by what finds it again anywhere: its file and sha256, what pinned it, and where
    this machine read it (`$CACHE`, a package's file: harness.present.portable; a relative path of
    that machine by the file's name)."""
    name = checkpoint_name(checkpoint)
    file = "" if checkpoint.get("file") == name else f"file {checkpoint.get('file')}, "
    lines = [sentence(f"{file}sha256 {checkpoint.get('file_sha256')}")]
    if checkpoint.get("pinned_by"):
        lines.append(f"Pinned by {checkpoint['pinned_by']}.")
    if checkpoint.get("source"):
        source = " ".join(_option_value(w) if not w.startswith("/") else w for w in str(checkpoint["source"]).split())
        lines.append(f"Read from {source}.")
    return lines
