"""The schemas a bundle carries (format 4 on): each one its documents use is there, and each is
the schema this build validates with; where one differs, which and why.

A bundle's schemas let anyone check its documents with standard tools, offline (docs/bundle.md);
verify itself validates with this build's schemas (harness.schemas), so a bundled schema that
differs means a third party's check and this one could disagree: in a bundle of the format this
build writes it fails, naming the member and the build that made the bundle; in an older format
(allowed with --allow-format) the comparison is a check not done, since that format's schemas are
not in this build. Bundles before format 4 carry none, and none is asked of them (a schemas/
member in one fails: harness.verify.formats).
"""

from __future__ import annotations

from harness.analysis.tool import tool_text
from harness.bundle import layout
from harness.bundle.view import BundleView
from harness.schemas import referenced, schema_path
from harness.verify.check import Check
from harness.verify.formats import Format, renders


def _used(view: BundleView) -> list[str]:
    names = ["commands", "environment"]
    names += [str(e.get("schema")) for e in view.steps if e.get("output") and isinstance(e.get("schema"), str)]
    return referenced(names)


def _made_by(view: BundleView) -> str:
    return tool_text(view.commands.get("tool"))


def check_bundled_schemas(view: BundleView, fmt: Format, skipped: list[Check] | None = None) -> list[Check]:
    """The schema members format FMT carries; a differing one of an older format goes to SKIPPED."""
    if not fmt.schemas:
        return []
    listed = view.commands.get("schemas")
    listed = [m for m in listed if isinstance(m, str)] if isinstance(listed, list) else []
    checks = [
        Check(
            "files",
            layout.schema_member(name),
            False,
            "a document of the bundle uses this schema but the bundle does not carry it",
        )
        for name in _used(view)
        if layout.schema_member(name) not in listed
    ]
    for member in listed:
        name = member.removeprefix(layout.SCHEMAS_DIR).removesuffix(".schema.json")
        data, mine = view.files.get(member), schema_path(name)
        if data is None:
            checks.append(Check("files", member, False, "commands.json lists it but the bundle lacks it"))
        elif not mine.is_file():
            checks.append(
                Check(
                    "schema-file",
                    member,
                    False,
                    f"this build has no schemas/{name}.schema.json (the bundle was made by {_made_by(view)})",
                )
            )
        elif data == mine.read_bytes():
            checks.append(Check("schema-file", member, True, "identical to the schema this build validates with"))
        elif not renders(fmt.version) and skipped is not None:
            skipped.append(
                Check(
                    "schema-file",
                    member,
                    True,
                    f"not compared: it differs from this build's "
                    f"schemas/{name}.schema.json, and format {fmt.version}'s schemas are not in this build "
                    f"(the documents were checked against this build's)",
                )
            )
        else:
            checks.append(
                Check(
                    "schema-file",
                    member,
                    False,
                    f"differs from this build's schemas/{name}.schema.json: "
                    f"the bundle was made by {_made_by(view)}, whose schema this is; its documents were "
                    f"checked against this build's (the schema checks), not against this one",
                )
            )
    return checks
