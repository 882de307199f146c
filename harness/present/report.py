"""Rendering report.md from a bundle's data with the package's Jinja2 template.

Only bundle contents go in (no clock, no host lookups), so `dossier verify` can re-render the
report from the raw JSON and compare it byte for byte. It is written in plain words: the verdict
first, in sentences a buyer can act on, with each headline rate beside its SKU's known-good; each
criterion named by what it judges, its evidence in sentences with units; each step by what it
measured (its name only a reference beside it); each limitation once; nothing machine-local
(harness.present.portable: paths as the reader has them, the host by its name and its first GPU).
"""

from __future__ import annotations

import re
from collections.abc import Set
from typing import Any

import jinja2

from harness import registry
from harness.analysis.health import figures as health_figures
from harness.analysis.tool import tool_text
from harness.analysis.units import number_or_none, value_text, without_empty
from harness.analysis.verdict import StepStatus, Verdict
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.judge import known_good
from harness.judge.engine import Result
from harness.judge.evidence import checkpoint_name
from harness.present import contention, limitations, repeatability, step_tables, templating
from harness.present.folding import FOLD_AT, fold, wrap_markdown
from harness.present.portable import portable
from harness.present.reproduce_steps import (
    checkpoint_lines,
    command_line,
    dossier_command,
    environment_context,
    sentence,
)
from harness.present.verdict import RunVerdict, labels, rate_rows, run_verdict, step_titles

TEMPLATE = "report.md.j2"
LIMITATIONS = "limitations"  # a document's limitations: listed, with why, under Limitations (not as a figure)
SIZING_AT = 160  # characters of a step's sizing in the report (its document has it whole)
SAME_OPENING = 120  # a step's sizing that begins like an earlier step's of the same probe is named, not repeated
STEP_KEYS = ("step", "lab_step", "status", "timed_out", "exit_code", "why", "image", "kind", "function")


def _environment() -> jinja2.Environment:
    return templating.environment()


def _strings(value: Any) -> list[str]:
    """VALUE if it is a list of strings, else an empty list (a malformed field renders as nothing)."""
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _output_of(steps: list[dict[str, Any] | None]) -> str:
    """Where a criterion's figures come from: its first step's document, else commands.json."""
    outputs = [str(s["output"]) for s in steps if s and isinstance(s.get("output"), str)]
    return outputs[0] if outputs else layout.COMMANDS


def plain_lab_step(text: Any) -> str:
    """A step's place in the lab as a reader says it (bundles before format 5 recorded an internal
    issue number for the steps beyond the lab: "issue 17", "issue 16 (beyond lab M1)")."""
    text = str(text or "")
    return "beyond lab M1" if re.fullmatch(r"issue \d+( \(beyond lab M1\))?", text) else text


def plot_groups(plots: list[str]) -> list[dict[str, Any]]:
    """Plots by stem, one line each: the PNG shown, its other formats (SVG) linked beside it."""
    stems: dict[str, list[str]] = {}
    for plot in plots:
        stems.setdefault(plot.rsplit(".", 1)[0], []).append(plot)
    return [
        {
            "png": next((p for p in found if p.endswith(".png")), None),
            "others": [p for p in found if not p.endswith(".png")],
        }
        for found in stems.values()
    ]


def _against_known_good(judged: Result, rated: Result | None) -> list[str]:
    """The known-good rates judged from the same step as JUDGED (its last step), in one sentence
    (the verdict's table has each with its known-good and the share asked)."""
    if rated is None or judged.name == known_good.NAME or not judged.steps:
        return []
    rows = [r for r in rated.rows if r.steps[-1:] == judged.steps[-1:]]
    said = [known_good.share_text(r) for r in rows]
    return [f"Against the known-good: {'; '.join(said)}."] if said else []


def criteria_context(view: BundleView, verdict: RunVerdict) -> list[dict[str, Any]]:
    words, titles, rated = labels(), step_titles(), verdict.known_good()
    rows = []
    for judged in verdict.results:
        steps = [view.step(s) for s in judged.steps]
        where = _output_of(steps)
        evidence = [sentence(fold(str(line), where)) for line in judged.findings]
        if judged.rows:  # the rates against the known-good: the table under Verdict sets them out
            source = evidence[0].removeprefix("Against ").rstrip(":.")
            evidence = [
                sentence(f"{source}: each rate, its known-good and the share asked are in the table under Verdict")
            ]
        rows.append(
            {
                "status": judged.status,
                "label": words.get(judged.name) or judged.name,
                "name": judged.name,
                "text": judged.title,
                "evidence": evidence + _against_known_good(judged, rated),
                "action": (
                    fold(f"{judged.recommendation.shown()}: {judged.recommendation.why}", where)
                    if judged.status == Verdict.FAIL
                    else None
                ),
                "plots": plot_groups([p for s in judged.steps for p in view.plots(s)]),
                "steps": list(judged.steps),
                "plot_notes": [
                    f"{titles.get(str(s.get('step')), s.get('step'))}: {_one_line(s.get('plot_note'))}"
                    for s in steps
                    if s and isinstance(s.get("plot_note"), str) and s.get("plot_note")
                ],
            }
        )
    return rows


def _one_line(text: Any, limit: int = FOLD_AT) -> str:
    """TEXT's first line, folded past LIMIT characters (an error message may span lines)."""
    flat = " ".join((str(text).strip().splitlines() or [""])[0].split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _title(entry: dict[str, Any], titles: dict[str, str]) -> str:
    """What a step measured: this build's title for it, else the one its bundle recorded, else its name."""
    step = str(entry.get("step"))
    recorded = entry.get("title")
    return titles.get(step) or (recorded if isinstance(recorded, str) and recorded else step)


def _sizing(entry: dict[str, Any], view: BundleView) -> str | None:
    sizing = _mapping(view.documents.get(str(entry["step"]))).get("sizing")
    if not sizing:
        return None
    return sentence(fold(" ".join(str(sizing).split()), str(entry.get("output")), SIZING_AT))


def sizing_context(view: BundleView) -> list[dict[str, Any]]:
    """Each completed step with what it measured: how its probe sized the work (a sizing already
    said for an earlier step, or for an earlier step of the same probe that it begins like, named,
    not repeated), its table and whether its figures recompute."""
    titles, sections = step_titles(), []
    said: dict[str, str] = {}  # a sizing's opening (and its probe) -> the step that said it
    for entry in view.steps:
        if entry.get("status") != StepStatus.COMPLETED or not entry.get("output"):
            continue
        step, sizing = str(entry["step"]), _sizing(entry, view)
        opening = f"{entry.get('probe')}: {(sizing or '')[:SAME_OPENING]}"
        same_as = said.get(opening) if sizing else None
        if sizing and same_as is None:
            said[opening] = _title(entry, titles)
        sections.append(
            {
                "label": _title(entry, titles),
                "step": step,
                "output": entry.get("output"),
                "sizing": sizing,
                "sizing_as": same_as,
                "tables": [{"member": m, "title": _table_title(view, m)} for m in view.tables(step)],
                "error": view.figures(step).error if entry.get("analysis") else None,
                "host": entry.get("kind") == "host",
            }
        )
    return sections


def figures_context(view: BundleView, read: Set[str]) -> list[dict[str, Any]]:
    """The headline figures of each completed step no criterion reads (READ: the steps criteria
    read, whose evidence says their figures in words), as a small table of figure and value with
    its unit: a probe added without a report criterion still shows what it measured."""
    sections = []
    for entry in view.steps:
        step = str(entry.get("step"))
        if entry.get("status") != StepStatus.COMPLETED or not entry.get("analysis") or step in read:
            continue
        figures = {str(k): without_empty(v) for k, v in _mapping(view.figures(step).values).items()}
        rows = [
            {"key": k, "value": fold(value_text(k, v), str(entry.get("output")))}
            for k, v in sorted(figures.items())
            if v not in (None, {}, []) and k != LIMITATIONS
        ]
        sections.append(
            {"label": _title(entry, step_titles()), "step": step, "output": entry.get("output"), "rows": rows}
        )
    return [s for s in sections if s["rows"]]


def _table_title(view: BundleView, member: str) -> str:
    data = view.files.get(member)
    return _one_line(step_tables.title(data.decode("utf-8", "replace")) if data is not None else "missing", 120)


def limitations_context(view: BundleView, noted: Set[str] = frozenset()) -> list[str]:
    """Every step that did not complete, every limitation a document records, and why a step has
    no plots (unless a criterion already says so: the steps in NOTED), each once."""
    words, found = step_titles(), []
    for entry in view.steps:
        step = str(entry["step"])
        name = words.get(step, step)
        if entry.get("status") != StepStatus.COMPLETED:
            found.append((name, f"{str(entry['status']).replace('_', ' ')}: {entry.get('why')}"))
        recorded = _mapping(view.documents.get(step)).get(LIMITATIONS)
        for item in recorded if isinstance(recorded, list) else []:
            if isinstance(item, dict):
                found.append((name, f"{item.get('what')}: {item.get('why')}"))
        note = entry.get("plot_note")
        if isinstance(note, str) and note and step not in noted:
            found.append((name, f"no plots: {note}"))
    return limitations.lines(found)


def host_context(view: BundleView) -> list[str]:
    """The host in sentences: the machine, then the interpreter and packages the host side ran with
    (by version: the interpreter's path is the machine's own, in environment.json)."""
    host = _mapping(view.environment.get("host"))
    machine = [str(host[k]) for k in ("os", "machine", "cpu_model") if isinstance(host.get(k), str) and host.get(k)]
    if number_or_none(host.get("cpu_count")) is not None:
        machine.append(f"{host['cpu_count']} CPUs")
    if number_or_none(host.get("memory_total_mib")) is not None:
        machine.append(f"{host['memory_total_mib']:.0f} MiB of memory")
    lines = [f"{host.get('hostname') or 'This host'}: {', '.join(machine)}."] if machine else []
    python = _mapping(host.get("python"))
    packages = sorted(_mapping(host.get("packages")).items())
    if python or packages:
        with_packages = ", ".join(f"{name} {version}" for name, version in packages)
        lines.append(
            f"The host side ran on Python {python.get('version', 'of an unrecorded version')}"
            + (f" with {with_packages}." if with_packages else ".")
        )
    return lines


def attempts_note(entry: dict[str, Any], commands: dict[str, Any]) -> str | None:
    """ "attempt 2 of 3 (attempt 1: why)" for a step run again with --retest; None for one run once."""
    earlier = [a for a in entry.get("attempts") or [] if isinstance(a, dict)]
    if not earlier:
        return None
    retest = _mapping(commands.get("options")).get("retest")
    of = f" of {retest + 1}" if isinstance(retest, int) and not isinstance(retest, bool) else ""
    return (
        f"attempt {len(earlier) + 1}{of} ("
        + "; ".join(f"attempt {a.get('attempt')}: {a.get('why')}" for a in earlier)
        + ")"
    )


def step_rows(view: BundleView) -> list[dict[str, Any]]:
    """Each step as the template reads it: what it measured, every key present, numbers and lists
    only where valid; a retested step's note says which attempt this is and why the earlier ones failed."""
    words, rows = step_titles(), []
    for entry in view.steps:
        note = attempts_note(entry, view.commands)
        why = "; ".join(str(w) for w in (entry.get("why"), note) if w) or None
        rows.append(
            {
                **{key: entry.get(key) for key in STEP_KEYS},
                "label": _title(entry, words),
                "lab_step": plain_lab_step(entry.get("lab_step")),
                "command": command_line(entry),
                "duration_s": number_or_none(entry.get("duration_s")),
                "needs": [words.get(n, n) for n in _strings(entry.get("needs"))],
                "why": why,
            }
        )
    return rows


def host_title(view: BundleView) -> str:
    """The host as the report's title names it: its hostname and its first GPU's UUID tail."""
    hostname = _mapping(view.environment.get("host")).get("hostname")
    tail = health_figures.gpu_tail(view.documents.get("health"))
    name = hostname if isinstance(hostname, str) and hostname else "unknown host"
    return f"{name} (first GPU's UUID ending {tail})" if tail else f"{name} (no GPU identified)"


def context(view: BundleView) -> dict[str, Any]:
    commands = view.commands
    images = sorted({s["image"] for s in view.steps if isinstance(s.get("image"), str) and s["image"]})
    checkpoints = [
        {"label": checkpoint_name(s["checkpoint"]) or "checkpoint", "lines": checkpoint_lines(s["checkpoint"])}
        for s in view.steps
        if isinstance(s.get("checkpoint"), dict) and s["checkpoint"]
    ]
    runner = _mapping(commands.get("runner"))
    verdict = run_verdict(view)
    criteria = criteria_context(view, verdict)
    rated = verdict.known_good()
    return {
        "title": host_title(view),
        "tool": tool_text(commands.get("tool")),
        "verdict": verdict,
        "groups": [
            {"heading": g["heading"], "lines": [f"{line.named}: {sentence(line.why)}" for line in g["lines"]]}
            for g in verdict.groups()
        ],
        "passed": [line.label or line.name for line in verdict.passed()],
        "rates": rate_rows(rated),
        "rates_caption": rated.findings[0].rstrip(":") if rated is not None and rated.rows else "",
        "runner": {k: runner.get(k) for k in ("name", "why")},
        "started_at": commands.get("started_at"),
        "finished_at": commands.get("finished_at"),
        "duration_s": number_or_none(commands.get("duration_s")),
        "criteria": criteria,
        "steps": step_rows(view),
        "sizing": sizing_context(view),
        "figures": figures_context(view, {s for c in registry.lab_criteria() for s in c.steps}),
        "environment": environment_context(view),
        "limitations": limitations_context(view, {s for c in criteria for s in c["steps"] if c["plot_notes"]}),
        "host": host_context(view),
        "repeatability": repeatability.lines(commands.get("repeatability")),
        "contention": contention.lines(view),
        "images": images,
        "checkpoints": checkpoints,
        "dossier_command": dossier_command(commands),
    }


def render_report(view: BundleView) -> str:
    """report.md: the template rendered from the bundle's data, every machine-local path as the
    reader has it (harness.present.portable), lines wrapped (harness.present.folding)."""
    return wrap_markdown(portable(_environment().get_template(TEMPLATE).render(context(view))))
