"""The reproduction summary a person reads in a minute: the verdict first, then what did not reproduce
and the likely why (the differences of environment that can move those figures), what could not be
compared and why, what reproduced, and how to check the signed statement (Markdown, one Jinja2
template: harness/present/templates/reproduce_summary.md.j2).

Only the judgement, the bundles' references and the file names given go in (no clock, no host
lookups), so the same inputs render the same bytes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.analysis.units import number
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.outcome import BundleRef
from harness.judge.reproduction.engine import NOT_COMPARABLE, FigureResult, Judgement
from harness.present import templating

HEADLINE = {"reproduced": "REPRODUCED", "not_reproduced": "NOT REPRODUCED", "not_comparable": "NOT COMPARABLE"}
SHOWN_ROWS = 30  # rows of the table of figures that did not reproduce (the statement and --json hold every one)
SHOWN_NAMES = 6  # figure ids named per reason a figure was not comparable


@dataclass(frozen=True)
class Files:
    """How the reader refers to the files (as given on the command line)."""

    theirs: str
    mine: str
    statement: str | None = None
    signer_key: str | None = None  # the public key that checks the statement


def _value(value: Any, unit: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{number(value)} {unit}".rstrip()
    if isinstance(value, dict) and "unavailable" in value:
        return f"unavailable ({value['unavailable']})"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return "not stated" if value is None else str(value)


def _row(f: FigureResult) -> dict[str, Any]:
    return {
        "figure": f.figure,
        "name": f.name,
        "theirs": _value(f.theirs, f.unit),
        "mine": _value(f.mine, f.unit),
        "ratio": f"{f.ratio:.4f}" if f.ratio is not None else "",
        "tolerance": "equal" if f.tolerance == 0 else f"+-{(f.tolerance or 0) * 100:.2f} %",
        "measured": "measured" if f.measured else "stated default",
        "why": f.why,
        "role_why": f.role_why,
        "likely": ", ".join(f.likely_why) or "no difference of environment recorded that moves it",
    }


def _differences(judgement: Judgement) -> list[dict[str, str]]:
    return [
        {"field": d.field, "section": d.section, "theirs": _value(d.theirs, ""), "mine": _value(d.mine, "")}
        for d in judgement.differences
        if d.explains
    ]


def _not_comparable(judgement: Judgement) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for f in judgement.named(Verdict.SKIP):
        groups.setdefault(f.why, []).append(f.figure)
    return [
        {
            "why": why,
            "count": len(ids),
            "figures": ", ".join(ids[:SHOWN_NAMES])
            + (f" and {len(ids) - SHOWN_NAMES} more" if len(ids) > SHOWN_NAMES else ""),
        }
        for why, ids in groups.items()
    ]


def _side(ref: BundleRef, identity: Any, made: str) -> dict[str, str]:
    return {
        "name": ref.name,
        "sha256": ref.sha256,
        "keyid": ref.signer_keyid[:16],
        "checks": str(ref.checks_passed),
        "measured_on": identity.text,
        "made": made,
    }


def render_markdown(
    judgement: Judgement, theirs: BundleRef, mine: BundleRef, files: Files, made: str, tool: str, unhonoured: list[str]
) -> str:
    """The summary: verdict first, then why, then the rest."""
    failed = [_row(f) for f in judgement.named(Verdict.FAIL)]
    moved = [_row(f) for f in judgement.moved()]
    passed = judgement.named(Verdict.PASS)
    noise = [f for f in judgement.figures if f.verdict != Verdict.SKIP and f.kind not in ("count", "exact")]
    model = judgement.model.to_json()
    context = {
        "headline": HEADLINE[judgement.word],
        "word": judgement.word,
        "result": judgement.result.value,
        "why": judgement.why,
        "counts": judgement.counts(),
        "comparable": judgement.comparable,
        "theirs": _side(theirs, judgement.theirs, "given"),
        "mine": _side(mine, judgement.mine, made),
        "files": files,
        "tool": tool,
        "unhonoured": unhonoured,
        "differences": _differences(judgement),
        "other_differences": [d.field for d in judgement.differences if not d.explains],
        "failed": failed[:SHOWN_ROWS],
        "failed_more": max(0, len(failed) - SHOWN_ROWS),
        "moved": moved[:SHOWN_ROWS],
        "moved_more": max(0, len(moved) - SHOWN_ROWS),
        "rule": {"text": judgement.rule.text},
        "campaign_id": (judgement.model.campaign.get("source") or {}).get("id") or "no campaign",
        "not_comparable": _not_comparable(judgement),
        "reproduced_by_probe": sorted(Counter(f.probe for f in passed).items()),
        "noise_measured": sum(1 for f in noise if f.measured),
        "noise_stated": sum(1 for f in noise if not f.measured),
        "model": model,
        "notes": list(judgement.notes),
        "not_comparable_word": NOT_COMPARABLE,
    }
    return templating.environment().get_template("reproduce_summary.md.j2").render(**context)
