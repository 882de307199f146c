"""The signed content: every document against its schema, the predicate against commands.json,
each step's stated figures against their recomputation (the analysis and host function its
registry entry names), and figures one step took from another (harness.analysis.cross_checks)."""

from __future__ import annotations

import json
from typing import Any

from harness import registry
from harness.analysis import cross_checks, repeatability
from harness.analysis.timestamps import duration_s
from harness.analysis.verdict import StepStatus
from harness.bundle import layout, seal
from harness.bundle.view import MODULE_NAME, BundleFormatError, BundleView
from harness.schemas import SCHEMA_DIR, violations
from harness.verify.attempts import attempt_discrepancies
from harness.verify.check import Check


def check_predicate(view: BundleView, stmt: dict) -> Check:
    expected = seal.predicate_from_commands(view.commands)
    if stmt.get("predicate") == expected:
        return Check("predicate", layout.ATTESTATION, True, "matches commands.json")
    return Check("predicate", layout.ATTESTATION, False, "the signed predicate differs from commands.json")


def _duration(where: str, entry: dict[str, Any]) -> list[str]:
    started, finished, stated = entry.get("started_at"), entry.get("finished_at"), entry.get("duration_s")
    if not isinstance(started, str) or not isinstance(finished, str):
        return [] if stated is None else [f"{where}duration_s {stated} without a start and an end"]
    try:
        again = duration_s(started, finished)
    except ValueError as exc:
        return [f"{where}started_at or finished_at is not a time ({exc})"]
    return [] if stated == again else [f"{where}duration_s {stated} but {started} to {finished} is {again} s"]


def _step_members(entry: dict[str, Any]) -> list[str]:
    """The members a step names, as the writer names them from its id, kind and status."""
    step, ran, completed = entry["step"], entry.get("argv") is not None, entry["status"] == StepStatus.COMPLETED
    output = (
        (layout.raw_name(step) if entry.get("kind") != "host" else layout.derived_name(step)) if completed else None
    )
    expected = {
        "stdout": (layout.raw_name(step) if completed else layout.stdout_name(step)) if ran else None,
        "stderr": layout.stderr_name(step) if ran else None,
    }
    found = [
        f"step {step[:60]}: {key} {entry.get(key)!r}, but a {entry['status']} step's is {want!r}"
        for key, want in expected.items()
        if key in entry and entry.get(key) != want
    ]
    if entry.get("output") not in (None, output):
        found.append(f"step {step[:60]}: output {entry['output']!r}, but a {entry['status']} step's is {output!r}")
    if not ran and any(entry.get(key) is not None for key in ("env", "runner", "image", "exit_code", "timed_out")):
        found.append(
            f"step {step[:60]}: no process ran it (no argv), but it records a process's environment, "
            "runner, image or exit"
        )
    for key in ("plots", "tables"):
        if isinstance(entry.get(key), list) and entry[key] != sorted(set(entry[key])):
            found.append(f"step {step[:60]}: {key} not sorted, each once, as the writer lists them")
    if (
        completed
        and entry.get("kind") != "host"
        and (entry.get("exit_code") != 0 or entry.get("timed_out") or entry.get("schema_violations"))
    ):
        found.append(
            f"step {step[:60]}: completed, but exit code {entry.get('exit_code')!r}, timed out "
            f"{entry.get('timed_out')!r}, {len(entry.get('schema_violations') or [])} schema violation(s)"
        )
    return found


def _declared(entry: dict[str, Any]) -> list[str]:
    """A step of this build's plan is what the plan declares it to be (kind, probe, schema, analysis,
    host function and inputs: verify checks its document with them, so none can be renamed or left
    out to escape a check; a host function an earlier build recorded by another name, by the name
    this build gives the same code: registry.RECORDED_NAMES); a completed step of another plan, what
    its probe's registry entry declares; a probe step names no host function or inputs, a host step
    no probe."""
    step = entry["step"]
    declared = next((s for s in registry.lab_plan() if s.step == step), None)
    found = []
    if entry.get("kind") == "probe" and (entry.get("function") is not None or entry.get("needs") not in (None, [])):
        found.append(f"step {step[:60]}: a probe step names a host function or inputs")
    if entry.get("kind") == "host" and entry.get("probe") is not None:
        found.append(f"step {step[:60]}: a host step names a probe")
    if declared is not None:
        expected = {
            "kind": declared.kind,
            "probe": getattr(declared, "probe", None),
            "schema": declared.schema,
            "analysis": declared.analysis,
            "function": getattr(declared, "function", None),
            "needs": list(getattr(declared, "needs", ())),
        }
        function: Any = entry.get("function")  # any JSON: a name no earlier build recorded stays as it is
        recorded = {**entry, "function": registry.RECORDED_NAMES.get(function, function)}
        differ = [key for key, value in expected.items() if recorded.get(key) != value]
        return found + (
            [f"step {step[:60]}: {', '.join(differ)} not what this build's plan declares for it"] if differ else []
        )
    spec = registry.find(entry.get("probe"))
    if entry["status"] != StepStatus.COMPLETED:
        return found
    if entry.get("kind") != "probe" or spec is None:
        return found + [
            f"step {step[:60]}: no step or probe {str(entry.get('probe'))[:60]!r} in this build's registry "
            "to check it by"
        ]
    if entry.get("schema") != spec.schema or entry.get("analysis") != spec.analysis:
        found.append(
            f"step {step[:60]}: schema {entry.get('schema')!r} and analysis {entry.get('analysis')!r}, but this "
            f"build's registry checks it with {spec.schema!r} and {spec.analysis!r}"
        )
    return found


def plan_order(made: Any) -> list[str]:
    """The steps in the order a build of format MADE ran them: this build's plan; before format 5 the
    stress step came last, after health under load and its comparison (now health under load is taken
    during the stress step and recorded after it)."""
    steps = [step.step for step in registry.lab_plan()]
    if isinstance(made, int) and made < 5 and "stress" in steps:
        steps.remove("stress")
        steps.append("stress")
    return steps


def run_record_discrepancies(commands: dict[str, Any]) -> list[str]:
    """commands.json against itself and the registry: every duration from its start and end, every
    member a step names from the step's id, kind and status (harness.bundle.layout), a completed
    probe step's exit, the schema and analysis each completed step is checked with, and a retested
    step's earlier attempts (harness.verify.attempts)."""
    found = _duration("", commands)
    listed = commands.get("schemas")
    if isinstance(listed, list) and listed != sorted(set(listed)):
        found.append("schemas not sorted, each once, as the writer lists them")
    order = {step: i for i, step in enumerate(plan_order(commands.get("format_version")))}
    planned = [order[e["step"]] for e in commands.get("steps", []) if e.get("step") in order]
    if planned != sorted(set(planned)):
        found.append("steps are not in the order of their format's plan, each once")
    retest = (commands.get("options") or {}).get("retest")
    for entry in commands.get("steps", []):
        found += _duration(f"step {str(entry.get('step'))[:60]}: ", entry) + _step_members(entry) + _declared(entry)
        found += attempt_discrepancies(entry, retest)
    return found


def check_run_record(view: BundleView) -> list[Check]:
    found = run_record_discrepancies(view.commands)
    return [Check("figures", layout.COMMANDS, False, problem) for problem in found] or [
        Check("figures", layout.COMMANDS, True, "durations and member names follow from what it records")
    ]


def schema_check(name: str, schema: Any, document: Any) -> Check:
    if (
        not isinstance(schema, str)
        or not MODULE_NAME.fullmatch(schema.replace("-", "_"))
        or not (SCHEMA_DIR / f"{schema}.schema.json").exists()
    ):
        return Check("schema", name, False, f"no schema {str(schema)[:60]!r} in this build")
    found = violations(schema, document)
    if found:
        return Check(
            "schema",
            name,
            False,
            f"{len(found)} violation(s) of schemas/{schema}.schema.json, first {str(found[0])[:500]}",
        )
    return Check("schema", name, True, f"valid against schemas/{schema}.schema.json")


def check_schemas(view: BundleView, names: set[str]) -> list[Check]:
    """environment.json and every step's document against their schemas; every member named."""
    checks = [schema_check(layout.ENVIRONMENT, "environment", view.environment)]
    referenced = {layout.COMMANDS, layout.ENVIRONMENT, layout.CONTENTION, layout.REPORT, layout.ATTESTATION}
    listed = view.commands.get("schemas")
    referenced.update(m for m in (listed if isinstance(listed, list) else []) if isinstance(m, str))
    for entry in view.steps:
        attempts = [a for a in entry.get("attempts") or [] if isinstance(a, dict)]  # dossier run --retest
        for where, key in [(entry, k) for k in ("stdout", "stderr", "output")] + [
            (a, k) for a in attempts for k in ("stdout", "stderr")
        ]:
            if where.get(key) and (where is entry or isinstance(where[key], str)):
                referenced.add(where[key])
                if where[key] not in names:
                    checks.append(
                        Check(
                            "files",
                            where[key],
                            False,
                            f"commands.json names it ({entry['step']} {key}) but the bundle lacks it",
                        )
                    )
        referenced.update(entry.get("plots") or [])
        referenced.update(view.tables(str(entry["step"])))
        if entry["step"] in view.documents:
            checks.append(schema_check(entry["output"], entry.get("schema"), view.documents[entry["step"]]))
    for name in sorted(names - referenced):
        checks.append(Check("files", name, False, "not named by commands.json"))
    return checks


def _host_function(entry: dict[str, Any]) -> Any:
    """The function a host step names, only if it is a public harness.analysis function that a
    registry entry's host step names (never an import of a string the bundle chose)."""
    name = str(entry.get("function"))
    module_name, _, function_name = name.partition(":")
    if (
        not module_name.startswith("harness.analysis.")
        or not MODULE_NAME.fullmatch(module_name.rsplit(".", 1)[1])
        or not MODULE_NAME.fullmatch(function_name)
    ):
        raise BundleFormatError(f"host function {name[:80]!r} is not in harness.analysis")
    try:
        return registry.host_function(name)
    except registry.NotInRegistry as exc:
        raise BundleFormatError(
            f"{module_name} defines no function {function_name!r} that a host step of this build's registry names"
        ) from exc


def _check_host_document(view: BundleView, entry: dict[str, Any], valid: set[str]) -> Check:
    name, needs = entry["output"], entry.get("needs") or []
    unusable = [need for need in needs if need not in valid]
    if unusable:
        return Check("figures", name, False, f"not recomputed: its inputs {unusable} are missing or schema-invalid")
    try:
        result = _host_function(entry)(*[view.documents[need] for need in needs])
        same = json.loads(json.dumps(result, allow_nan=False, sort_keys=True)) == view.documents[entry["step"]]
    except Exception as exc:  # noqa: BLE001 - any failure to recompute is a failed check
        return Check("figures", name, False, f"could not recompute: {type(exc).__name__}: {str(exc)[:300]}")
    return Check(
        "figures",
        name,
        same,
        f"recomputed by {entry['function']}"
        if same
        else f"differs from what {entry['function']} computes from {needs}",
    )


def _check_step_figures(view: BundleView, entry: dict[str, Any]) -> list[Check]:
    name, step = entry["output"], entry["step"]
    figures = view.figures(step)  # computed once: the report, the tables' neighbours and acceptance read it again
    if figures.error:
        return [Check("figures", name, False, figures.error)]
    try:
        problems = [str(p) for p in view.analysis(entry["analysis"]).discrepancies(view.documents[step])]
    except Exception as exc:  # noqa: BLE001 - an analysis that raises is a failed check
        problems = [f"discrepancies() raised {type(exc).__name__}: {str(exc)[:300]}"]
    if problems:
        return [Check("figures", name, False, problem) for problem in problems]
    return [Check("figures", name, True, f"stated figures match harness.analysis.{entry['analysis']}")]


def check_figures(view: BundleView, valid: set[str]) -> list[Check]:
    """Each completed step's stated figures against their recomputation from its raw data (only
    steps whose document is in VALID: present and schema-valid), figures one step took from another,
    and commands.json's run-to-run block against the SKU those documents identify."""
    checks = []
    for entry in view.steps:
        if entry.get("status") != StepStatus.COMPLETED or entry["step"] not in valid:
            continue
        if entry.get("kind") == "host":
            checks.append(_check_host_document(view, entry, valid))
        elif entry.get("analysis"):
            checks += _check_step_figures(view, entry)
    documents = {step: document for step, document in view.documents.items() if step in valid}
    try:  # figures one step took from another (the roofline's roof is the bandwidth step's median)
        across = cross_checks.discrepancies(view.steps, documents)
    except Exception as exc:  # noqa: BLE001 - any failure to recompute is a failed check
        across = [("bundle", f"cross_checks.discrepancies() raised {type(exc).__name__}: {str(exc)[:300]}")]
    try:  # the run-to-run block dossier run recorded for the SKU the documents identify
        declared = repeatability.declaration_discrepancies(view.commands.get("repeatability"), documents)
    except Exception as exc:  # noqa: BLE001 - any failure to recompute is a failed check
        declared = [f"repeatability.declaration_discrepancies() raised {type(exc).__name__}: {str(exc)[:300]}"]
    return (
        checks
        + [Check("figures", member, False, problem) for member, problem in across]
        + [Check("figures", layout.COMMANDS, False, problem) for problem in declared]
    )
