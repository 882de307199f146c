"""The bundle formats this build knows, and which of each format's checks it can do (issue 28).

A bundle says which format it is in commands.json (`format_version`, covered by the signature
like every member); environment.json repeats it. verify judges a bundle by the rules of the format
it claims, all of them: the members that format carries (schemas/, tables/ from format 4 on: a
format-3 bundle holding them is a format-4 bundle relabelled, and fails), and its report.md and
tables re-rendered by that format's renderer. This build has the renderer of one format only, the
one it writes (`harness.present.report`: `layout.FORMAT_VERSION`); an older format's report rules
are not kept, so its report.md and tables cannot be re-rendered here. A format whose every check
this build can do is *fully checked*; any other one is refused (a failed `format` check) unless
the caller allows that format (`dossier verify --allow-format N`), and then each check not done
is listed with why. Nothing here is a constant to remember: when FORMAT_VERSION moves on, the
format it leaves loses its renderer and stops being fully checked by itself, and
tests/verify/test_verify_formats.py fails until FORMATS has a row for the new one.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from harness.bundle import layout
from harness.verify.check import Check


@dataclass(frozen=True)
class Format:
    version: int
    what: str  # what made this format: the tool and what changed in it
    schemas: bool  # carries schemas/NAME.schema.json, listed in commands.json's `schemas`
    tables: bool  # carries tables/STEP.md for each completed step whose probe has a table
    repeatability: bool = False  # commands.json records the run-to-run block (or why none applies)
    contention: bool = False  # carries host-contention.json: the host read while each probe step ran


FORMATS: dict[int, Format] = {
    f.version: f
    for f in (
        Format(1, "rig-dossier 0.1.0, the first bundles (the committed H200 ones)", schemas=False, tables=False),
        Format(2, "criteria could say not-run", schemas=False, tables=False),
        Format(3, "criteria say pass, fail or not-measured (harness.analysis.verdict)", schemas=False, tables=False),
        Format(
            4, "schemas/ and tables/ members; report commands short, the environment once", schemas=True, tables=True
        ),
        Format(
            5,
            "criteria in the one verdict vocabulary (pass, warn, fail, incomplete, skip); module paths of the "
            "per-probe folders; digests and retests recorded; the roofline's dtypes in one step, timed in windows",
            schemas=True,
            tables=True,
            repeatability=True,
        ),
        Format(
            6,
            "report.md in plain words: the verdict in sentences, each headline rate beside its SKU's known-good "
            "(the `known-good` criterion), evidence as sentences with units, steps by what they measured, each "
            "limitation once, nothing machine-local; the driver's own recovery action in health.json's devices "
            "(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION); report.md names the recommended action of each failed "
            "criterion and of the run (harness.analysis.actions); host-contention.json: the host read while each "
            "probe step ran, named beside a failing criterion; a disturbed bandwidth repeat spread INCOMPLETE, "
            "not FAIL; longer repeats measured again",
            schemas=True,
            tables=True,
            repeatability=True,
            contention=True,
        ),
    )
}


def renders(version: int) -> bool:
    """Whether this build can re-render report.md and tables/ by the rules of format VERSION: its
    renderer (harness.present.report, harness.present.step_tables) writes layout.FORMAT_VERSION only."""
    return version == layout.FORMAT_VERSION


def not_done(fmt: Format) -> list[Check]:
    """The checks format FMT calls for that this build cannot do (empty: fully checked). Each is a
    Check that passed nothing: ok, but listed apart from the checks done."""
    missing = []
    if not renders(fmt.version):
        missing.append(
            Check(
                "report",
                layout.REPORT,
                True,
                f"not re-rendered: format {fmt.version}'s report rules are not in this build (it renders "
                f"format {layout.FORMAT_VERSION}), so a figure edited in report.md would not be seen; "
                "the figures in the raw JSON are still recomputed",
            )
        )
        if fmt.tables:
            missing.append(
                Check(
                    "report",
                    f"{layout.TABLES_DIR}*",
                    True,
                    f"not re-rendered: format {fmt.version}'s table rules are not in this build",
                )
            )
    return missing


def fully_checked() -> list[int]:
    """The formats whose every check this build does."""
    return sorted(v for v, fmt in FORMATS.items() if not not_done(fmt))


def oldest_fully_checked() -> int:
    """The oldest format from which every newer one is fully checked here (formats older than it are
    refused unless allowed)."""
    oldest = layout.FORMAT_VERSION
    while oldest - 1 in FORMATS and not not_done(FORMATS[oldest - 1]):
        oldest -= 1
    return oldest


def _tool(document: Any) -> Any:
    return document.get("tool") if isinstance(document, dict) else None


def _environment_agrees(commands: dict[str, Any], environment: dict[str, Any]) -> list[Check]:
    """That environment.json repeats commands.json's format_version and its tool: two checks."""
    made = commands.get("format_version")
    stated = environment.get("format_version")
    same = stated == made and type(stated) is type(made)
    same_tool = _tool(environment) == _tool(commands)
    return [
        Check(
            "format",
            layout.ENVIRONMENT,
            same,
            f"format_version {stated!r}, as commands.json says"
            if same
            else f"format_version {str(stated)[:40]!r} but commands.json says {str(made)[:40]!r}",
        ),
        Check(
            "format",
            layout.ENVIRONMENT,
            same_tool,
            "tool as commands.json and the signed predicate name it"
            if same_tool
            else "tool (name, version, commit) differs from commands.json's, which the signed predicate names",
        ),
    ]


def check_format(
    commands: dict[str, Any], environment: Any, allowed: Collection[int]
) -> tuple[list[Check], Format | None]:
    """The format commands.json claims: known to this build, repeated by environment.json (its
    format_version and tool: the same tool the statement's predicate names), and either fully
    checked here or ALLOWED. Returns the checks and the format's rules (None when unknown)."""
    made = commands.get("format_version")
    fmt = FORMATS.get(made) if isinstance(made, int) and not isinstance(made, bool) else None
    checks = _environment_agrees(commands, environment) if isinstance(environment, dict) else []
    if fmt is None:
        newest = max(FORMATS)
        return checks + [
            Check(
                "format",
                layout.COMMANDS,
                False,
                f"format_version {str(made)[:40]!r} is not a bundle "
                f"format this build knows (1 to {newest})"
                + (": a newer rig-dossier made it" if isinstance(made, int) and made > newest else ""),
            )
        ], None
    missing = not_done(fmt)
    if not missing:
        return checks + [Check("format", layout.COMMANDS, True, f"format {made}: every check of its rules done")], fmt
    if made in allowed:
        return checks + [
            Check(
                "format",
                layout.COMMANDS,
                True,
                f"format {made} ({fmt.what}), allowed with "
                f"--allow-format {made}: {len(missing)} check(s) of its rules not done here",
            )
        ], fmt
    oldest = oldest_fully_checked()
    return checks + [
        Check(
            "format",
            layout.COMMANDS,
            False,
            f"format {made} ({fmt.what}) is older than the oldest "
            f"this build fully checks ({oldest}): {'; '.join(c.subject + ' ' + c.detail.split(':')[0] for c in missing)}. "
            f"Pass --allow-format {made} to accept it verified without those checks",
        )
    ], fmt


def _listed(commands: dict[str, Any], directory: str) -> list[Any]:
    """What commands.json lists of the members under DIRECTORY (schemas/: its `schemas`; tables/:
    every step's `tables`)."""
    if directory == layout.SCHEMAS_DIR:
        return list(commands.get("schemas") or [])
    return [t for s in commands.get("steps", []) if isinstance(s, dict) for t in (s.get("tables") or [])]


def check_members(commands: dict[str, Any], names: Collection[str], fmt: Format) -> list[Check]:
    """The members and records only some formats carry: a format without schemas/ or tables/ holds and
    lists none (a newer bundle relabelled with an older format fails here); commands.json records the
    run-to-run block exactly from the format that records it (`dossier run` always does: the block, or
    why none applies)."""
    checks = []
    if fmt.repeatability != ("repeatability" in commands):
        checks.append(
            Check(
                "format",
                layout.COMMANDS,
                False,
                f"format {fmt.version} bundles "
                f"{'record' if fmt.repeatability else 'carry no'} repeatability in commands.json, but this one "
                f"{'does not' if fmt.repeatability else 'does (a newer format relabelled?)'}",
            )
        )
    for carried, directory in ((fmt.schemas, layout.SCHEMAS_DIR), (fmt.tables, layout.TABLES_DIR)):
        held = sorted(n for n in names if n.startswith(directory))
        if not carried and (held or _listed(commands, directory)):
            checks.append(
                Check(
                    "format",
                    held[0] if held else layout.COMMANDS,
                    False,
                    f"format {fmt.version} bundles carry no {directory} members, but this one "
                    f"{'holds ' + str(len(held)) if held else 'lists some'} (a newer format relabelled?)",
                )
            )
    return checks
