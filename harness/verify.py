"""`dossier verify`: is this bundle exactly what the holder of the trusted key signed, and do its
figures follow from its raw JSON?

Checks, in order: the archive's structure and canonical form (headers only, nothing extracted),
the DSSE signature with the trusted key, the statement, the file list against the statement's
subjects, every sha256. A failure there ends the checks: nothing is read from content that is not
what the key signed. Then the signed content: commands.json against its schema (its failure ends
the checks: every other document is found through it), the predicate against commands.json,
every document against its schema, every schema-valid step's stated figures against their
recomputation (harness.analysis.*), host-computed documents recomputed, and report.md
re-rendered from the raw JSON when every document it is rendered from is schema-valid. Each
failure is one Check with ok=False; `verify_bundle` never raises.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness import registry
from harness.analysis import cross_checks
from harness.bundle import layout, seal
from harness.bundle.read import Limits, Member, UnsafeBundle, read_members
from harness.bundle.view import (MODULE_NAME, BundleFormatError, BundleView, analysis, compute_figures,
                                 load_json)
from harness.report.render import render_report
from harness.schemas import SCHEMA_DIR, violations
from harness.signing import dsse
from harness.signing.keys import keyid
from harness.signing.statement import StatementError, subject_digests, unsigned_changes

MAX_ATTESTATION_BYTES = 8 << 20  # parsed before its signature is checked: kept small
INTERNAL_ERROR = "internal error"  # a check that raised: a bug in this build, never a verdict on the bundle


@dataclass(frozen=True)
class Check:
    check: str  # structure, signature, statement, files, sha256, schema, predicate, figures, report, internal
    subject: str  # the member it concerns, or "bundle"
    ok: bool
    detail: str = ""

    def line(self) -> str:
        """One printable line (a lone surrogate from a document's string shown escaped, never raised on)."""
        text = f"{'ok  ' if self.ok else 'FAIL'} {self.check} {self.subject}" + (f": {self.detail}" if self.detail else "")
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


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


def _failed(checks: list[Check]) -> bool:
    return any(not c.ok for c in checks)


def check_signature(members: dict[str, Member], trusted: Ed25519PublicKey,
                    limits: Limits = Limits()) -> tuple[list[Check], dict | None]:
    """The signature and statement checks, and the statement when both pass."""
    member = members.get(layout.ATTESTATION)
    if member is None or member.data is None:
        return [Check("signature", layout.ATTESTATION, False, "the attestation is missing")], None
    if member.size > MAX_ATTESTATION_BYTES:
        return [Check("signature", layout.ATTESTATION, False, f"{member.size} bytes, over the cap of "
                      f"{MAX_ATTESTATION_BYTES} bytes for an attestation")], None
    try:
        payload = dsse.verify(dsse.parse(member.data), trusted)
    except dsse.EnvelopeError as exc:
        return [Check("signature", layout.ATTESTATION, False, str(exc))], None
    checks = [Check("signature", layout.ATTESTATION, True, "DSSE Ed25519 signature verifies")]
    try:
        stmt = seal.parse(payload)
        subjects = subject_digests(stmt)
        if len(subjects) > limits.max_members:
            raise StatementError(f"{len(subjects)} subjects, more than {limits.max_members}")
    except StatementError as exc:
        return checks + [Check("statement", layout.ATTESTATION, False, str(exc))], None
    return checks + [Check("statement", layout.ATTESTATION, True, "in-toto Statement v1")], stmt


def check_files(members: dict[str, Member], stmt: dict) -> list[Check]:
    subjects = subject_digests(stmt)
    present = {name: m.sha256 for name, m in members.items() if name != layout.ATTESTATION}
    changes = unsigned_changes(present, subjects)
    checks = [Check("files", name, False, "listed in the attestation but missing from the bundle")
              for name in changes["missing"]]
    checks += [Check("files", name, False, "in the bundle but not covered by the attestation")
               for name in changes["unsigned"]]
    for name in sorted(set(present) & set(subjects)):
        ok = name not in changes["changed"]
        checks.append(Check("sha256", name, ok, "" if ok else
                            f"sha256 {present[name][:16]}... differs from the signed {subjects[name][:16]}..."))
    if not checks or all(c.check == "sha256" for c in checks):
        checks.insert(0, Check("files", "bundle", True, f"{len(present)} files, exactly the signed subjects"))
    return checks


def check_predicate(view: BundleView, stmt: dict) -> Check:
    expected = seal.predicate_from_commands(view.commands)
    if stmt.get("predicate") == expected:
        return Check("predicate", layout.ATTESTATION, True, "matches commands.json")
    return Check("predicate", layout.ATTESTATION, False, "the signed predicate differs from commands.json")


def _schema_check(name: str, schema: Any, document: Any) -> Check:
    if (not isinstance(schema, str) or not MODULE_NAME.fullmatch(schema.replace("-", "_"))
            or not (SCHEMA_DIR / f"{schema}.schema.json").exists()):
        return Check("schema", name, False, f"no schema {str(schema)[:60]!r} in this build")
    found = violations(schema, document)
    if found:
        return Check("schema", name, False, f"{len(found)} violation(s) of schemas/{schema}.schema.json, "
                                            f"first {str(found[0])[:500]}")
    return Check("schema", name, True, f"valid against schemas/{schema}.schema.json")


def check_schemas(view: BundleView, names: set[str]) -> list[Check]:
    """environment.json and every step's document against their schemas; every member named."""
    checks = [_schema_check(layout.ENVIRONMENT, "environment", view.environment)]
    referenced = {layout.COMMANDS, layout.ENVIRONMENT, layout.REPORT, layout.ATTESTATION}
    for entry in view.steps:
        for key in ("stdout", "stderr", "output"):
            if entry.get(key):
                referenced.add(entry[key])
                if entry[key] not in names:
                    checks.append(Check("files", entry[key], False, f"commands.json names it ({entry['step']} "
                                                                     f"{key}) but the bundle lacks it"))
        referenced.update(entry.get("plots") or [])
        if entry["step"] in view.documents:
            checks.append(_schema_check(entry["output"], entry.get("schema"), view.documents[entry["step"]]))
    for name in sorted(names - referenced):
        checks.append(Check("files", name, False, "not named by commands.json"))
    return checks


def _host_function(entry: dict[str, Any]) -> Any:
    """The function a host step names, only if it is a public harness.analysis function that a
    registry entry's host step names (never an import of a string the bundle chose)."""
    name = str(entry.get("function"))
    module_name, _, function_name = name.partition(":")
    if (not module_name.startswith("harness.analysis.") or not MODULE_NAME.fullmatch(module_name.rsplit(".", 1)[1])
            or not MODULE_NAME.fullmatch(function_name)):
        raise BundleFormatError(f"host function {name[:80]!r} is not in harness.analysis")
    try:
        return registry.host_function(name)
    except registry.NotInRegistry as exc:
        raise BundleFormatError(f"{module_name} defines no function {function_name!r} that a host step of this "
                                f"build's registry names") from exc


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
    return Check("figures", name, same, f"recomputed by {entry['function']}" if same else
                 f"differs from what {entry['function']} computes from {needs}")


def _check_step_figures(view: BundleView, entry: dict[str, Any]) -> list[Check]:
    name, step = entry["output"], entry["step"]
    figures = compute_figures(entry["analysis"], view.documents[step])
    if figures.error:
        return [Check("figures", name, False, figures.error)]
    try:
        problems = [str(p) for p in analysis(entry["analysis"]).discrepancies(view.documents[step])]
    except Exception as exc:  # noqa: BLE001
        problems = [f"discrepancies() raised {type(exc).__name__}: {str(exc)[:300]}"]
    if problems:
        return [Check("figures", name, False, problem) for problem in problems]
    return [Check("figures", name, True, f"stated figures match harness.analysis.{entry['analysis']}")]


def check_figures(view: BundleView, valid: set[str]) -> list[Check]:
    """Each completed step's stated figures against their recomputation from its raw data (only
    steps whose document is in VALID: present and schema-valid)."""
    checks = []
    for entry in view.steps:
        if entry.get("status") != "completed" or entry["step"] not in valid:
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
    return checks + [Check("figures", member, False, problem) for member, problem in across]


def _first_difference(expected: str, stored: bytes) -> str:
    """The stored report's first line that differs from the re-rendered one (a linear scan: no
    diff algorithm whose time could grow with the square of a hostile report's length)."""
    stored_lines = stored.decode("utf-8", "replace").splitlines()
    for mine, theirs in zip(expected.splitlines(), stored_lines):
        if mine != theirs:
            return theirs.strip()
    return "(lines removed)" if len(stored_lines) < len(expected.splitlines()) else "(lines added at the end)"


def check_report(view: BundleView) -> Check:
    stored = view.files.get(layout.REPORT)
    if stored is None:
        return Check("report", layout.REPORT, False, "report.md is missing")
    made, tool = view.commands.get("format_version"), view.commands["tool"].get("version")
    if made != layout.FORMAT_VERSION:
        if isinstance(made, int) and 1 <= made < layout.FORMAT_VERSION:
            # An older report format cannot be re-rendered by this build's rules; its bytes are
            # still covered by the signature, and its figures are checked from the raw JSON above.
            return Check("report", layout.REPORT, True, f"format {made} (rig-dossier {tool}): signed, not "
                         f"re-rendered (this build renders format {layout.FORMAT_VERSION}; `dossier report` shows it so)")
        return Check("report", layout.REPORT, False, f"commands.json format_version {made!r} is not one this "
                     f"build knows (1 to {layout.FORMAT_VERSION}): update rig-dossier")
    try:
        expected = render_report(view)
        rendered = expected.encode()  # a lone surrogate in a document cannot be UTF-8: a failure, not a raise
    except Exception as exc:  # noqa: BLE001 - a document this build cannot render is a failed check
        return Check("report", layout.REPORT, False, f"could not be re-rendered from the raw JSON: "
                     f"{type(exc).__name__}: {str(exc)[:300]}")
    if stored == rendered:
        return Check("report", layout.REPORT, True, "identical to the report re-rendered from the raw JSON")
    return Check("report", layout.REPORT, False, f"differs from the report re-rendered from the raw JSON "
                 f"(bundle made by rig-dossier {tool}); first differing line: {_first_difference(expected, stored)[:200]}")


def check_content(members: dict[str, Member], stmt: dict) -> list[Check]:
    """The checks of signed content: schemas, predicate, figures, report."""
    files = {name: m.data for name, m in members.items() if m.data is not None}
    checks: list[Check] = []
    try:
        checks.append(_schema_check(layout.COMMANDS, "commands", load_json(files, layout.COMMANDS)))
        if _failed(checks):  # every other document is found through commands.json: stop here
            return checks
        view = BundleView.from_files(files)
    except BundleFormatError as exc:
        return checks + [Check("files" if exc.missing else "schema", exc.member or "bundle", False, str(exc))]
    checks.append(check_predicate(view, stmt))
    documents = check_schemas(view, set(members))
    invalid = {c.subject for c in documents if c.check == "schema" and not c.ok}
    valid = {step for step in view.documents if (view.step(step) or {}).get("output") not in invalid}
    checks += documents + check_figures(view, valid)
    if invalid:
        return checks  # the report is rendered from these documents: never from schema-invalid ones
    return checks + [check_report(view)]


def _checks(path: Path, trusted: Ed25519PublicKey, limits: Limits) -> list[Check]:
    try:
        members = read_members(path, _kept, limits)
    except UnsafeBundle as exc:
        return [Check("structure", "bundle", False, f"{exc}; nothing was extracted")]
    except FileNotFoundError:
        return [Check("structure", "bundle", False, f"{path} does not exist")]
    checks = [Check("structure", "bundle", True, f"{len(members)} regular files in the canonical form, "
                    f"safe names, {sum(m.size for m in members.values())} bytes")]
    signature_checks, stmt = check_signature(members, trusted, limits)
    checks += signature_checks
    if stmt is None:
        return checks
    checks += check_files(members, stmt)
    if _failed(checks):  # content that is not what the key signed is never read
        return checks
    return checks + check_content(members, stmt)


def verify_bundle(path: Path, trusted: Ed25519PublicKey, limits: Limits = Limits()) -> Result:
    """Every check of the bundle at PATH against the TRUSTED key. Never raises: a check that raises
    is reported as an internal-error failure (a bug in this build), so nothing unverified passes."""
    try:
        checks = _checks(path, trusted, limits)
    except Exception as exc:  # noqa: BLE001 - the last guard: verify answers every input with a result
        checks = [Check("internal", "bundle", False, f"{INTERNAL_ERROR}: {type(exc).__name__}: {str(exc)[:300]} "
                        "(a bug in rig-dossier: please report it with the bundle)")]
    return Result(str(path), keyid(trusted), tuple(checks))
