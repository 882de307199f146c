"""`dossier verify`: is this bundle exactly what the holder of the trusted key signed, and do its
figures follow from its raw JSON?

Checks, in order: the archive's structure and canonical form (headers only, nothing extracted),
the DSSE signature with the trusted key, the statement, the file list against the statement's
subjects, every sha256. A failure there ends the checks: nothing is read from content that is not
what the key signed. Then the signed content, by the rules of the format it claims
(harness.verify.formats: a format this build cannot fully check fails unless the caller
allows it, and then the checks not done are the result's `not_done`): commands.json against its
schema (its failure ends the checks: every other document is found through it), the format's
members and environment.json's agreement, the predicate against commands.json, commands.json
against itself and the registry (a retested step's attempts: harness.verify.attempts), every
document against its schema, host-contention.json (format 6 on: its windows' summaries recomputed from
their samples), every schema-valid step's stated figures against their
recomputation (harness.analysis.*), host-computed documents recomputed, the run-to-run block
against the SKU the documents identify, and report.md
re-rendered from the raw JSON when every document it is rendered from is schema-valid (and each
table member likewise); the schemas a bundle carries (format 4 on) against this build's. Each
failure is one Check with ok=False; `verify_bundle` never raises.

By kind: `signed` (structure aside, what the key signed), `formats` (the formats and their rules),
`content` (schemas, predicate, run record, figures), `bundled` (the schema members), `report`
(report.md re-rendered); `check` is the one Check they all give.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from harness import registry
from harness.analysis.memo import remembering
from harness.bundle import layout
from harness.bundle.read import Limits, Member, UnsafeBundle, read_members
from harness.bundle.view import BundleFormatError, BundleView, load_json
from harness.signing.keys import keyid
from harness.verify.bundled import check_bundled_schemas
from harness.verify.check import Check
from harness.verify.content import check_figures, check_predicate, check_run_record, check_schemas, schema_check
from harness.verify.contention import check_contention
from harness.verify.formats import check_format, check_members, not_done
from harness.verify.report import check_report, check_tables
from harness.verify.signed import check_files, check_signature

__all__ = ["INTERNAL_ERROR", "Check", "Result", "verify_and_view", "verify_bundle"]

INTERNAL_ERROR = "internal error"  # a check that raised: a bug in this build, never a verdict on the bundle


@dataclass(frozen=True)
class Result:
    bundle: str
    keyid: str
    checks: tuple[Check, ...]
    not_done: tuple[Check, ...] = ()  # checks the bundle's format calls for that this build cannot do

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def passed(self) -> int:
        return len(self.checks) - len(self.failures)

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "keyid": self.keyid,
            "ok": self.ok,
            "failures": len(self.failures),
            "checks": [asdict(c) for c in self.checks],
            "not_done": [asdict(c) for c in self.not_done],
        }


def _kept(name: str) -> bool:
    """Members whose contents verification needs (the rest are only hashed)."""
    return name.endswith((".json", ".md"))


def _failed(checks: list[Check]) -> bool:
    return any(not c.ok for c in checks)


def check_content(
    members: dict[str, Member],
    stmt: dict,
    seen: list[BundleView] | None = None,
    allow_formats: Collection[int] = (),
    skipped: list[Check] | None = None,
) -> list[Check]:
    """The checks of signed content by the rules of the format it claims: format, schemas,
    predicate, figures, report (the view checked is appended to SEEN, for a caller that judges the
    same content next; the checks its format calls for that this build cannot do, when the format is
    in ALLOW_FORMATS, to SKIPPED)."""
    files = {name: m.data for name, m in members.items() if m.data is not None}
    checks: list[Check] = []
    try:
        checks.append(schema_check(layout.COMMANDS, "commands", load_json(files, layout.COMMANDS)))
        if _failed(checks):  # every other document is found through commands.json: stop here
            return checks
        view = BundleView.from_files(files, registry.analysis_module)
        if seen is not None:
            seen.append(view)
    except BundleFormatError as exc:
        return checks + [Check("files" if exc.missing else "schema", exc.member or "bundle", False, str(exc))]
    format_checks, fmt = check_format(view.commands, view.environment, allow_formats)
    checks += format_checks
    if fmt is None:  # no rules to judge the rest by
        return checks
    if skipped is not None:
        skipped += not_done(fmt)
    checks += check_members(view.commands, set(members), fmt)
    checks.append(check_predicate(view, stmt))
    checks += check_run_record(view)
    checks += check_bundled_schemas(view, fmt, skipped)
    documents = check_schemas(view, set(members))
    host = check_contention(view, fmt, set(members))
    invalid = {c.subject for c in documents + host if c.check == "schema" and not c.ok}
    valid = {step for step in view.documents if (view.step(step) or {}).get("output") not in invalid}
    checks += documents + host + check_figures(view, valid)
    if invalid:
        return checks  # the report is rendered from these documents: never from schema-invalid ones
    return checks + check_report(view, fmt) + check_tables(view, fmt)


def _checks(
    path: Path,
    trusted: Ed25519PublicKey,
    limits: Limits,
    seen: list[BundleView],
    allow_formats: Collection[int],
    skipped: list[Check],
) -> list[Check]:
    try:
        members = read_members(path, _kept, limits)
    except UnsafeBundle as exc:
        return [Check("structure", "bundle", False, f"{exc}; nothing was extracted")]
    except FileNotFoundError:
        return [Check("structure", "bundle", False, f"{path} does not exist")]
    checks = [
        Check(
            "structure",
            "bundle",
            True,
            f"{len(members)} regular files in the canonical form, "
            f"safe names, {sum(m.size for m in members.values())} bytes",
        )
    ]
    signature_checks, stmt = check_signature(members, trusted, limits)
    checks += signature_checks
    if stmt is None:
        return checks
    checks += check_files(members, stmt)
    if _failed(checks):  # content that is not what the key signed is never read
        return checks
    return checks + check_content(members, stmt, seen, allow_formats, skipped)


def verify_bundle(
    path: Path, trusted: Ed25519PublicKey, limits: Limits = Limits(), allow_formats: Collection[int] = ()
) -> Result:
    """Every check of the bundle at PATH against the TRUSTED key, by the rules of the format it
    claims; a format this build cannot fully check fails unless it is in ALLOW_FORMATS, and then
    the checks not done are the result's `not_done`. Never raises: a check that raises is reported
    as an internal-error failure (a bug in this build), so nothing unverified passes."""
    return verify_and_view(path, trusted, limits, allow_formats)[0]


def verify_and_view(
    path: Path, trusted: Ed25519PublicKey, limits: Limits = Limits(), allow_formats: Collection[int] = ()
) -> tuple[Result, BundleView | None]:
    """`verify_bundle`, and the view of the signed content it checked when every check passed (None
    otherwise): `dossier fleet collect` judges acceptance on it without reading the bundle again."""
    seen: list[BundleView] = []
    skipped: list[Check] = []
    try:
        with remembering():  # each document's headlines computed once for every check that reads them
            checks = _checks(path, trusted, limits, seen, allow_formats, skipped)
    except Exception as exc:  # noqa: BLE001 - the last guard: verify answers every input with a result
        checks = [
            Check(
                "internal",
                "bundle",
                False,
                f"{INTERNAL_ERROR}: {type(exc).__name__}: {str(exc)[:300]} "
                "(a bug in rig-dossier: please report it with the bundle)",
            )
        ]
    result = Result(str(path), keyid(trusted), tuple(checks), tuple(skipped))
    return result, (seen[0] if result.ok and seen else None)
