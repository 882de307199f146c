"""The one-page acceptance summary a buyer reads: Markdown and HTML from one context, two Jinja2
templates (harness/present/templates/accept_summary.{md,html}.j2).

Only the acceptance, the bundle's own data and the file names given go in (no clock, no host
lookups), so the same inputs render the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2

from harness import registry
from harness.analysis.health import figures as health_figures
from harness.analysis.tool import tool_text
from harness.analysis.verdict import Verdict
from harness.bundle.view import BundleView
from harness.judge.acceptance.criteria import NOT_MEASURED_NOT_REQUIRED, NOT_MEASURED_REQUIRED
from harness.judge.acceptance.outcome import Acceptance
from harness.judge.facts import BundleFacts
from harness.present import templating

VERDICT_WORDS = {
    Verdict.PASS: "ACCEPTED",
    Verdict.WARN: "ACCEPTED, WITH WARNINGS",
    Verdict.FAIL: "REJECTED",
    Verdict.INCOMPLETE: "NOT ACCEPTED: INCOMPLETE",
}
STATUS_WORDS = {
    Verdict.PASS: "Pass",
    Verdict.WARN: "Warn",
    Verdict.FAIL: "FAIL",
    Verdict.INCOMPLETE: "INCOMPLETE",
    Verdict.SKIP: "Skipped",
}


@dataclass(frozen=True)
class Files:
    """How the reader refers to the files (names as given on the command line)."""

    bundle: str
    signer_key: str
    attestation: str | None = None
    acceptor_keyid: str | None = None
    profile_file: str | None = None
    profile_key: str | None = None


PAGE_WHY = 140  # characters of a why on the one-page summary
PAGE_GROUPS = 8  # lines of "not measured" on the one-page summary (required ones first; the rest under Details)


def _environment() -> jinja2.Environment:
    return templating.environment()


def _text(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"unavailable"}:
        return f"unavailable ({value['unavailable']})"
    return "not recorded" if value is None else str(value)


def machine(view: BundleView) -> dict[str, Any]:
    """Host, GPUs and software as the bundle recorded them."""
    facts = BundleFacts(view)
    host = (view.environment or {}).get("host") or {}
    health = facts.figures("health").values or {}
    gpus = [
        f"GPU{d.get('index')}: {_text(d.get('name'))} (identified as {d.get('sku_id') or 'no catalogue SKU'}; "
        f"UUID {_text(d.get('uuid'))})"
        for d in health.get("devices") or []
    ]
    tool = view.commands.get("tool") or {}
    return {
        "hostname": health_figures.host_label(host.get("hostname"), view.documents.get("health")),
        "cpu": _text(host.get("cpu_model")),
        "os": _text(host.get("os")),
        "gpus": gpus or ["no GPU listed (raw/health.json)" if health else "health did not complete"],
        "driver": _text(health.get("driver_version")),
        "cuda": _text(health.get("cuda_driver_version")),
        "torch": _text(health.get("torch_version")),
        "started_at": _text(view.commands.get("started_at")),
        "finished_at": _text(view.commands.get("finished_at")),
        "tool": tool_text(tool),
        "runner": _text((view.commands.get("runner") or {}).get("name")),
    }


def _row(result) -> dict[str, Any]:
    return {
        "name": result.name,
        "title": result.title,
        "status": result.status,
        "status_word": STATUS_WORDS[result.status],
        "required": result.required,
        "measured": result.measured.text if result.measured else "not measured",
        "threshold": result.threshold.text if result.threshold else "none stated",
        "evidence": result.evidence,
        "why": result.why,
        "why_short": short(result.why.removeprefix(NOT_MEASURED_REQUIRED).removeprefix(NOT_MEASURED_NOT_REQUIRED)),
        "action": str(result.recommendation.action),
        "rule": result.recommendation.rule,
        "action_why": result.recommendation.why,
    }


def _verdict_sentence(acceptance: Acceptance) -> str:
    failed, incomplete = acceptance.named(Verdict.FAIL), acceptance.named(Verdict.INCOMPLETE)
    warned, skipped = acceptance.named(Verdict.WARN), acceptance.named(Verdict.SKIP)
    total = len(acceptance.results)
    skip_note = (
        f" {len(skipped)} the profile does not require could not be measured in this bundle and were not "
        "judged (below)."
        if skipped
        else ""
    )
    if failed:
        return (
            f"{len(failed)} of {total} criteria failed ({', '.join(failed)}); "
            "the machine is not accepted as this SKU." + skip_note
        )
    if incomplete:
        return (
            f"No criterion failed, but {len(incomplete)} the profile requires could not be measured in this "
            f"bundle ({', '.join(incomplete)}): the machine is not accepted until they are." + skip_note
        )
    if warned:
        return (
            f"Every judged criterion passed; {len(warned)} only within a WARN band or on a retest "
            f"({', '.join(warned)})." + skip_note
        )
    return f"All {total - len(skipped)} judged criteria passed." + skip_note


def context(acceptance: Acceptance, view: BundleView, files: Files) -> dict[str, Any]:
    rows = [_row(r) for r in acceptance.results]
    profile = acceptance.profile
    rerun = ["dossier", "accept", files.bundle, "--profile", profile.sku_id]
    if files.profile_file:
        rerun += ["--profile-file", files.profile_file]
    if files.profile_key:
        rerun += ["--profile-key", files.profile_key]
    rerun += ["--key", files.signer_key]
    made = view.commands.get("format_version")
    allow = f" --allow-format {made}" if acceptance.bundle.checks_not_done and isinstance(made, int) else ""
    rerun += allow.split()
    return {
        "verdict": VERDICT_WORDS[acceptance.result],
        "result": acceptance.result.shown,
        "verdict_sentence": _verdict_sentence(acceptance),
        "recommendation": acceptance.recommendation,
        "machine": machine(view),
        "profile": profile,
        "bundle": acceptance.bundle,
        "files": files,
        "rows": rows,
        "failed": [r for r in rows if r["status"] == Verdict.FAIL],
        "warned": [r for r in rows if r["status"] == Verdict.WARN],
        "not_measured": [r for r in rows if r["status"] in (Verdict.INCOMPLETE, Verdict.SKIP)],
        "not_measured_grouped": grouped(
            [r for verdict in (Verdict.INCOMPLETE, Verdict.SKIP) for r in rows if r["status"] == verdict]
        ),
        "rerun": " ".join(rerun),
        "allow": allow,
        "page_groups": PAGE_GROUPS,
        "references": references(profile),
        "groups": [
            {"word": STATUS_WORDS[verdict], "names": [r["name"] for r in rows if r["status"] == verdict]}
            for verdict in (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN, Verdict.PASS, Verdict.SKIP)
            if any(r["status"] == verdict for r in rows)
        ],
    }


def grouped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows that say the same (status, required, why) as one line naming them all, in first-seen order."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = (row["status_word"], row["required"], row["why_short"])
        groups.setdefault(key, {"names": [], "status_word": key[0], "required": key[1], "why_short": key[2]})
        groups[key]["names"].append(row["name"])
    return list(groups.values())


def short(text: str, limit: int = PAGE_WHY) -> str:
    """TEXT on the one-page summary: cut past LIMIT characters (the details after the page have it whole)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit].rsplit(" ", 1)[0] + " …"


def references(profile) -> list[str]:
    """The known-good figures the shares are taken of, each with where it was measured."""
    return [
        f"{kind.title.format(key)} {r.value:g} {r.unit}: {r.source}"
        for kind in registry.known_good_kinds()
        for key, r in sorted(profile.known(kind).items())
    ]


def render_markdown(acceptance: Acceptance, view: BundleView, files: Files) -> str:
    return _environment().get_template("accept_summary.md.j2").render(context(acceptance, view, files))


def render_html(acceptance: Acceptance, view: BundleView, files: Files) -> str:
    return _environment().get_template("accept_summary.html.j2").render(context(acceptance, view, files))
