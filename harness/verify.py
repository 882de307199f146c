"""`dossier verify`: is this bundle exactly what the holder of the trusted key signed, and do its
figures follow from its raw JSON?

Checks, in order: the archive's structure (headers only, nothing extracted), the DSSE signature
with the trusted key, the file list against the statement's subjects, every sha256, the predicate
against commands.json, every JSON member against its schema, every step's stated figures against
their recomputation (harness.analysis.*), host-computed documents recomputed, and report.md
re-rendered from the raw JSON. Each failure is one Check with ok=False.
"""

from __future__ import annotations

import difflib
import importlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness import attestation
from harness.analysis import cross_checks
from harness.bundle import layout
from harness.bundle.read import Limits, Member, UnsafeBundle, read_members
from harness.bundle.view import MODULE_NAME, BundleFormatError, BundleView, analysis, compute_figures
from harness.report.render import render_report
from harness.schemas import SCHEMA_DIR, violations
from harness.signing import dsse
from harness.signing.keys import keyid


@dataclass(frozen=True)
class Check:
    check: str  # structure, signature, statement, files, sha256, predicate, schema, figures, report
    subject: str  # the member it concerns, or "bundle"
    ok: bool
    detail: str = ""

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.check} {self.subject}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class Result:
    bundle: str
    keyid: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def to_json(self) -> dict[str, Any]:
        return {"bundle": self.bundle, "keyid": self.keyid, "ok": self.ok,
                "failures": len(self.failures), "checks": [asdict(c) for c in self.checks]}


def _kept(name: str) -> bool:
    """Members whose contents verification needs (the rest are only hashed)."""
    return name.endswith((".json", ".md"))


def check_signature(members: dict[str, Member], trusted: Ed25519PublicKey) -> tuple[list[Check], dict | None]:
    """The signature check, and the statement (verified or, when the signature fails, as claimed)."""
    envelope_member = members.get(layout.ATTESTATION)
    if envelope_member is None:
        return [Check("signature", layout.ATTESTATION, False, "the attestation is missing")], None
    try:
        envelope = dsse.parse(envelope_member.data or b"")
    except dsse.EnvelopeError as exc:
        return [Check("signature", layout.ATTESTATION, False, f"not a DSSE envelope: {exc}")], None
    try:
        payload = dsse.verify(envelope, trusted)
        checks = [Check("signature", layout.ATTESTATION, True, "DSSE Ed25519 signature verifies")]
    except dsse.EnvelopeError as exc:
        checks = [Check("signature", layout.ATTESTATION, False, str(exc))]
        try:  # still compare hashes so the output names what differs; verification already failed
            payload = dsse.claimed_payload(envelope)
        except dsse.EnvelopeError:
            return checks, None
    try:
        stmt = attestation.parse_statement(payload)
        attestation.subject_digests(stmt)
    except attestation.StatementError as exc:
        return checks + [Check("statement", layout.ATTESTATION, False, str(exc))], None
    return checks + [Check("statement", layout.ATTESTATION, True, "in-toto Statement v1")], stmt


def check_files(members: dict[str, Member], stmt: dict) -> list[Check]:
    subjects = attestation.subject_digests(stmt)
    present = {name for name in members if name != layout.ATTESTATION}
    checks = [Check("files", name, False, "listed in the attestation but missing from the bundle")
              for name in sorted(set(subjects) - present)]
    checks += [Check("files", name, False, "in the bundle but not covered by the attestation")
               for name in sorted(present - set(subjects))]
    for name in sorted(present & set(subjects)):
        ok = members[name].sha256 == subjects[name]
        checks.append(Check("sha256", name, ok, "" if ok else
                            f"sha256 {members[name].sha256[:16]}... differs from the signed {subjects[name][:16]}..."))
    if not checks or all(c.check == "sha256" for c in checks):
        checks.insert(0, Check("files", "bundle", True, f"{len(present)} files, exactly the signed subjects"))
    return checks


def check_predicate(view: BundleView, stmt: dict) -> Check:
    expected = attestation.predicate_from_commands(view.commands)
    if stmt.get("predicate") == expected:
        return Check("predicate", layout.ATTESTATION, True, "matches commands.json")
    return Check("predicate", layout.ATTESTATION, False, "the signed predicate differs from commands.json")


def _schema_check(name: str, schema: str, document: Any) -> Check:
    if not MODULE_NAME.fullmatch(schema.replace("-", "_")) or not (SCHEMA_DIR / f"{schema}.schema.json").exists():
        return Check("schema", name, False, f"no schema {schema!r} in this build")
    found = violations(schema, document)
    if found:
        return Check("schema", name, False, f"{len(found)} violation(s) of schemas/{schema}.schema.json, "
                                            f"first {found[0]}")
    return Check("schema", name, True, f"valid against schemas/{schema}.schema.json")


def check_schemas(view: BundleView, names: set[str]) -> list[Check]:
    checks = [_schema_check(layout.COMMANDS, "commands", view.commands),
              _schema_check(layout.ENVIRONMENT, "environment", view.environment)]
    referenced = {layout.COMMANDS, layout.ENVIRONMENT, layout.REPORT, layout.ATTESTATION}
    for entry in view.steps:
        for key in ("stdout", "stderr", "output"):
            if entry.get(key):
                referenced.add(entry[key])
                if entry[key] not in names:
                    checks.append(Check("files", entry[key], False, f"commands.json names it ({entry['step']} "
                                                                     f"{key}) but the bundle lacks it"))
        referenced.update(entry.get("plots") or [])
        if entry.get("output") in view.files:
            checks.append(_schema_check(entry["output"], str(entry.get("schema")), view.documents[entry["step"]]))
    for name in sorted(names - referenced):
        checks.append(Check("files", name, False, "not named by commands.json"))
    return checks


def _recomputed_host_document(view: BundleView, entry: dict[str, Any]) -> Any:
    module_name, function_name = str(entry.get("function")).split(":")
    if not module_name.startswith("harness.analysis.") or not MODULE_NAME.fullmatch(module_name.rsplit(".", 1)[1]):
        raise BundleFormatError(f"host function {entry.get('function')!r} is not in harness.analysis")
    inputs = [view.documents[need] for need in entry.get("needs") or []]
    result = getattr(importlib.import_module(module_name), function_name)(*inputs)
    return json.loads(json.dumps(result, allow_nan=False, sort_keys=True))


def check_figures(view: BundleView) -> list[Check]:
    """Each completed step's stated figures against their recomputation from its raw data."""
    checks = []
    for entry in view.steps:
        step, name = entry["step"], entry.get("output")
        if entry.get("status") != "completed" or step not in view.documents:
            continue
        if entry.get("kind") == "host":
            try:
                same = _recomputed_host_document(view, entry) == view.documents[step]
                checks.append(Check("figures", name, same, f"recomputed by {entry.get('function')}" if same else
                                    f"differs from what {entry.get('function')} computes from {entry.get('needs')}"))
            except Exception as exc:  # noqa: BLE001 - any failure to recompute is a failed check
                checks.append(Check("figures", name, False, f"could not recompute: {type(exc).__name__}: {exc}"))
            continue
        if not entry.get("analysis"):
            continue
        figures = compute_figures(entry["analysis"], view.documents[step])
        if figures.error:
            checks.append(Check("figures", name, False, figures.error))
            continue
        try:
            problems = list(analysis(entry["analysis"]).discrepancies(view.documents[step]))
        except Exception as exc:  # noqa: BLE001
            problems = [f"discrepancies() raised {type(exc).__name__}: {exc}"]
        checks += [Check("figures", name, False, problem) for problem in problems]
        if not problems:
            checks.append(Check("figures", name, True, f"stated figures match harness.analysis.{entry['analysis']}"))
    try:  # figures one step took from another (the roofline's roof is the bandwidth step's median)
        across = cross_checks.discrepancies(view.steps, view.documents)
    except Exception as exc:  # noqa: BLE001
        across = [("bundle", f"cross_checks.discrepancies() raised {type(exc).__name__}: {exc}")]
    checks += [Check("figures", member, False, problem) for member, problem in across]
    return checks


def check_report(view: BundleView) -> Check:
    stored = view.files.get(layout.REPORT)
    if stored is None:
        return Check("report", layout.REPORT, False, "report.md is missing")
    made, tool = view.commands.get("format_version"), view.commands.get("tool", {}).get("version")
    if made != layout.FORMAT_VERSION:
        if isinstance(made, int) and 1 <= made < layout.FORMAT_VERSION:
            # An older report format cannot be re-rendered by this build's rules; its bytes are
            # still covered by the signature, and its figures are checked from the raw JSON above.
            return Check("report", layout.REPORT, True, f"format {made} (rig-dossier {tool}): signed, not "
                         f"re-rendered (this build renders format {layout.FORMAT_VERSION}; `dossier report` shows it so)")
        return Check("report", layout.REPORT, False, f"commands.json format_version {made!r} is not one this "
                     f"build knows (1 to {layout.FORMAT_VERSION}): update rig-dossier")
    expected = render_report(view)
    if stored == expected.encode():
        return Check("report", layout.REPORT, True, "identical to the report re-rendered from the raw JSON")
    stored_lines = stored.decode("utf-8", "replace").splitlines()
    for line in difflib.unified_diff(expected.splitlines(), stored_lines, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            first = line[1:].strip()
            break
    else:
        first = "(lines removed)"
    tool = view.commands.get("tool", {}).get("version")
    return Check("report", layout.REPORT, False, f"differs from the report re-rendered from the raw JSON "
                 f"(bundle made by rig-dossier {tool}); first differing line: {first[:200]}")


def verify_bundle(path: Path, trusted: Ed25519PublicKey, limits: Limits = Limits()) -> Result:
    result = lambda checks: Result(str(path), keyid(trusted), tuple(checks))  # noqa: E731
    try:
        members = read_members(path, _kept, limits)
    except UnsafeBundle as exc:
        return result([Check("structure", "bundle", False, f"{exc}; nothing was extracted")])
    except FileNotFoundError:
        return result([Check("structure", "bundle", False, f"{path} does not exist")])
    checks = [Check("structure", "bundle", True, f"{len(members)} regular files, safe names, "
                    f"{sum(m.size for m in members.values())} bytes")]
    signature_checks, stmt = check_signature(members, trusted)
    checks += signature_checks
    if stmt is not None:
        checks += check_files(members, stmt)
    files = {name: m.data for name, m in members.items() if m.data is not None}
    try:
        view = BundleView.from_files(files)
    except BundleFormatError as exc:
        return result(checks + [Check("files", "bundle", False, str(exc))])
    if stmt is not None:
        checks.append(check_predicate(view, stmt))
    checks += check_schemas(view, set(members)) + check_figures(view)
    checks.append(check_report(view))
    return result(checks)
