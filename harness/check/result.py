"""`dossier check`'s answer: the result document (schemas/check.schema.json, `--json`) and the lines
an operator or Slurm's log reads (NHC's form, one per check that did not pass, then one line for
the node: Azure's `host | Healthy` convention, in the verdict vocabulary). A failed check's line ends
with its recommended action and the rule that chose it; the node's line with the node's (the most
severe of its failed checks')."""

from __future__ import annotations

from collections import Counter
from typing import Any

from harness import catalogue
from harness.analysis import device_rules
from harness.analysis.actions import Action
from harness.analysis.verdict import Verdict, answer_line, counted, overall
from harness.check.advice import recommended
from harness.check.expectation import Expectation
from harness.check.findings import Finding, recommend

KIND = "rig-dossier check"
FORMAT_VERSION = 1
IN_WORDS = {
    Verdict.PASS: "healthy",
    Verdict.WARN: "healthy, with warnings",
    Verdict.FAIL: "sick",
    Verdict.INCOMPLETE: "cannot judge",
}
PREFIX = {
    Verdict.FAIL: "ERROR: dossier check: Health check failed",
    Verdict.INCOMPLETE: "ERROR: dossier check: Cannot judge",
    Verdict.WARN: "WARNING: dossier check",
}


def document(node: str, findings: list[Finding], expect: Expectation, reading: dict[str, Any]) -> dict[str, Any]:
    verdict = overall(f.verdict for f in findings)
    rules = catalogue.node_check_rules()
    return {
        "kind": KIND,
        "format_version": FORMAT_VERSION,
        "node": node,
        "verdict": str(verdict),
        "exit_code": verdict.exit_code,
        "summary": summary_line(node, findings, reading),
        "checks": [f.to_json() for f in findings],
        "recommendation": recommend(findings).to_json(),
        "driver_recovery_actions": driver_actions(reading),
        "expectation": expect.to_json(),
        "rules": {
            "fatal_xids": [e["xid"] for e in rules["fatal_xids"]],
            "remapped_rows_uncorrectable_max": int(catalogue.rule("check_remapped_rows_uncorrectable_max")),
            "retired_pages_fail_at": int(catalogue.rule("check_retired_pages_fail_at")),
            "source": "the catalogue (harness/data/gpus.json): node_check's fatal XIDs and the rules "
            "check_remapped_rows_uncorrectable_max, check_retired_pages_fail_at, each with its source",
        },
        "reading": reading,
    }


def first_problem(findings: list[Finding]) -> Finding | None:
    """The finding a drain reason names: the first failed check, else the first that could not be judged."""
    for verdict in (Verdict.FAIL, Verdict.INCOMPLETE):
        found = next((f for f in findings if f.verdict == verdict), None)
        if found:
            return found
    return None


def driver_actions(reading: dict[str, Any] | None) -> list[dict[str, Any]]:
    """What the driver itself recommends for each GPU (NVML's recovery action), beside ours."""
    devices = (reading or {}).get("devices")
    return [
        {"gpu": d.get("nvml_index"), **device_rules.driver_action(d)}
        for d in (devices if isinstance(devices, list) else [])
        if isinstance(d, dict)
    ]


def summary_line(node: str, findings: list[Finding], reading: dict[str, Any] | None = None) -> str:
    """The node's line; a sick node's names its action and, from READING, what the driver says beside it."""
    verdict = overall(f.verdict for f in findings)
    counts = Counter(f.verdict for f in findings)
    tally = ", ".join(
        f"{counts[v]} {str(v)}"
        for v in (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN, Verdict.PASS, Verdict.SKIP)
        if counts[v]
    )
    named = [f.name for f in findings if f.verdict == verdict] if verdict != Verdict.PASS else []
    action = recommend(findings)
    return (
        f"{node} | {verdict.shown}: {IN_WORDS[verdict]}"
        + (f" ({', '.join(named)})" if named else "")
        + f" [{tally}]"
        + (f" -> {action.action}" if verdict in (Verdict.FAIL, Verdict.INCOMPLETE) else "")
        + (f" (driver: {_driver(reading)})" if verdict == Verdict.FAIL and reading is not None else "")
    )


def _driver(reading: dict[str, Any]) -> str:
    devices = reading.get("devices")
    return device_rules.driver_said(devices) if isinstance(devices, list) and devices else "no GPU readable"


def lines(node: str, findings: list[Finding], reading: dict[str, Any] | None = None) -> list[str]:
    """One NHC-form line per check that did not pass, then the node's line (the answer line comes
    before and after them: `answer`)."""
    shown = [
        f"{PREFIX[f.verdict]}: {f.name}: {f.message}"
        + (f" -> {f.action.shown()}" if f.verdict in (Verdict.FAIL, Verdict.INCOMPLETE) else "")
        for f in findings
        if f.verdict in PREFIX
    ]
    return shown + [summary_line(node, findings, reading)]


def answer(node: str, findings: list[Finding], result: dict[str, Any] | None = None) -> str:
    """The answer line, first and last: `verdict: FAIL: n1 sick (gpu_count): 1 failed, 9 incomplete,
    1 passed, 2 skipped; action: DRAIN (exit 1)`, the action the RESULT document recommends
    (harness.check.advice) where there is one to take."""
    verdict = overall(f.verdict for f in findings)
    named = [f.name for f in findings if f.verdict == verdict] if verdict != Verdict.PASS else []
    what = f"{node} {IN_WORDS[verdict]}" + (f" ({', '.join(named)})" if named else "")
    action = recommended(result)[0] if result is not None else Action.NONE
    said = None if action == Action.NONE else str(action)
    return answer_line(verdict, f"{what}: {counted(f.verdict for f in findings)}", action=said)
