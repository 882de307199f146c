"""Every field of every document a bundle holds, and what verify does with it (issue 28 item 3).

A field is a property path in a schema: keys, `[]` for an array's items, `*` for any key of a map
(`devices[].clocks.sm_mhz`, `host.packages.*`). `schema_fields(NAME)` walks schemas/NAME.schema.json
(its `$ref`s, `anyOf`/`oneOf`/`allOf` branches, array items and maps) and lists them all, so a field
added to a schema is listed here without anyone remembering to.

`mutations(document, schema, path)` gives the schema-valid edits of the field's first and last
instance in a real document that a hand-editing key holder could make: a number scaled, an integer
moved by one, a flag flipped, a string or enum value changed, a list shortened or scaled, an optional
field removed. docs/bundle.md ("What verify checks in each document") lists the fields that are
free (text, provenance) or raw (the measurements themselves) with the reason; every other field must
be checked: each of its schema-valid edits is refused by the document's checks (tests/test_field_inventory.py).
bench/fuzz_verify.py classifies the mutants it sees accepted with the same table.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"
DOC = ROOT / "docs" / "bundle.md"
FieldPath = tuple[str, ...]
ITEMS, ANY_KEY = "[]", "*"


def shown(path: FieldPath) -> str:
    """`devices[].clocks.sm_mhz` for ("devices", "[]", "clocks", "sm_mhz")."""
    text = ""
    for part in path:
        text += part if part == ITEMS else (("." if text else "") + part)
    return text


@cache
def _schema_file(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())


def _resolve(node: dict[str, Any], file: str) -> tuple[dict[str, Any], str]:
    ref = node["$ref"]
    target, _, pointer = ref.partition("#")
    file = target or file
    found: Any = _schema_file(file)
    for part in [p for p in pointer.split("/") if p]:
        found = found[part.replace("~1", "/").replace("~0", "~")]
    return found, file


@dataclass
class Field:
    path: FieldPath
    optional: bool  # absent from some parent's `required`
    enums: list[Any]  # every enum/const value the schema allows here (for a changed value)


def _walk(node: Any, file: str, path: FieldPath, out: dict[FieldPath, Field], seen: frozenset) -> None:
    if not isinstance(node, dict):
        return
    if "$ref" in node:
        key = (file, node["$ref"])
        if key not in seen:
            target, target_file = _resolve(node, file)
            _walk(target, target_file, path, out, seen | {key})
    for keyword in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(keyword, []):
            _walk(branch, file, path, out, seen)
    if path in out:
        out[path].enums += node.get("enum", []) + ([node["const"]] if "const" in node else [])
    required = set(node.get("required", []))
    for key, child in node.get("properties", {}).items():
        here = path + (key,)
        field = out.setdefault(here, Field(here, key not in required, []))
        field.optional = field.optional or key not in required
        _walk(child, file, here, out, seen)
    for keyword in ("additionalProperties",):
        if isinstance(node.get(keyword), dict):
            here = path + (ANY_KEY,)
            out.setdefault(here, Field(here, True, []))
            _walk(node[keyword], file, here, out, seen)
    for child in node.get("patternProperties", {}).values():
        here = path + (ANY_KEY,)
        out.setdefault(here, Field(here, True, []))
        _walk(child, file, here, out, seen)
    if isinstance(node.get("items"), dict):
        _walk(node["items"], file, path + (ITEMS,), out, seen)
    for item in node.get("prefixItems", []):
        _walk(item, file, path + (ITEMS,), out, seen)


@cache
def schema_fields(name: str) -> dict[FieldPath, Field]:
    """Every property path of schemas/NAME.schema.json (the paths of array items themselves are
    their array's field: a list is edited as a whole)."""
    out: dict[FieldPath, Field] = {}
    _walk(_schema_file(f"{name}.schema.json"), f"{name}.schema.json", (), out, frozenset())
    return {path: field for path, field in out.items() if path and path[-1] != ITEMS}


def instances(document: Any, path: FieldPath) -> list[tuple[Any, Any]]:
    """(container, key) of every place PATH is present in DOCUMENT, in document order."""
    places = [(None, None, document)]
    for part in path:
        following = []
        for _, _, value in places:
            if part == ITEMS and isinstance(value, list):
                following += [(value, i, item) for i, item in enumerate(value)]
            elif part == ANY_KEY and isinstance(value, dict):
                following += [(value, key, item) for key, item in value.items()]
            elif part not in (ITEMS, ANY_KEY) and isinstance(value, dict) and part in value:
                following.append((value, part, value[part]))
        places = following
    return [(container, key) for container, key, _ in places]


def _scaled(value: Any, factor: float) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return (value + 1 if factor > 1 else value - 1) if isinstance(value, int) else value * factor


def changed_values(value: Any, field: Field) -> Iterator[tuple[str, Any]]:
    """(what, new value) edits of VALUE, the plausible ones first."""
    others = [e for e in field.enums if e != value]
    if others:
        yield f"{value!r} -> {others[0]!r}", others[0]
    if isinstance(value, bool):
        yield f"{value} -> {not value}", not value
    elif isinstance(value, int):
        for new in (value + 1, value - 1, value * 2, 0):
            if new != value:
                yield f"{value} -> {new}", new
    elif isinstance(value, float):
        for new in (value * 1.25, value * 0.8, value + 1.0, -value, 0.5):
            if new != value:
                yield f"{value} -> {new}", new
    elif isinstance(value, str):
        yield "text changed", value + "x" if value else "x"
        yield "text changed", "0" + value[1:] if value[:1] != "0" else "1" + value[1:]
    elif isinstance(value, list) and value:
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            yield "every number scaled", [_scaled(v, 1.25) for v in value]
        yield "last item removed", value[:-1]
        yield "first item repeated", [value[0]] + value
        if len(value) > 1:
            yield "order reversed", value[::-1]
    elif isinstance(value, dict) and field.path[-1:] != (ANY_KEY,) and value:
        key = sorted(value)[-1]
        yield f"key {key!r} removed", {k: v for k, v in value.items() if k != key}
    elif value is None:
        for new in (0, 1.0, "x", True, [], {}):
            yield f"null -> {new!r}", new


@dataclass(frozen=True)
class Edit:
    path: FieldPath
    index: int  # which instance (0 first, -1 last)
    what: str
    document: Any


def edits(document: Any, field: Field) -> Iterator[Edit]:
    """Every edit of FIELD's first and last instance in DOCUMENT (a changed value, and, where the
    field is optional, its removal); the caller keeps the schema-valid ones."""
    places = instances(document, field.path)
    for index in sorted({0, len(places) - 1}) if places else []:
        container, key = places[index]
        for what, new in changed_values(container[key], field):
            changed = copy.deepcopy(document)
            inner = instances(changed, field.path)[index][0]
            inner[key] = new
            yield Edit(field.path, index, what, changed)
        if isinstance(container, dict) and field.optional:
            changed = copy.deepcopy(document)
            del instances(changed, field.path)[index][0][key]
            yield Edit(field.path, index, "removed", changed)


# The table in docs/bundle.md: | document | field | kind | why |

ROW = re.compile(r"^\| `(?P<document>[a-z0-9-]+)` \| `(?P<field>[^`]+)` \| (?P<kind>free|raw) \| (?P<why>.+) \|$")


@dataclass(frozen=True)
class Listed:
    document: str  # schema name
    pattern: str  # a field, `**` any run of parts, `*` a part
    kind: str  # free (text, provenance: nothing in the bundle implies it) or raw (a measurement)
    why: str

    def matches(self, document: str, path: FieldPath) -> bool:
        if document != self.document:
            return False
        return _glob(self.pattern).fullmatch(shown(path)) is not None


@cache
def _glob(pattern: str) -> re.Pattern:
    out = ""
    for token in re.split(r"(\*\*|\*)", pattern):
        out += {"**": r".*", "*": r"[^.\[\]]*"}.get(token, re.escape(token))
    return re.compile(out)


@cache
def listed() -> tuple[Listed, ...]:
    """The free and raw fields docs/bundle.md lists, with why."""
    rows = []
    for line in DOC.read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows.append(Listed(**match.groupdict()))
    return tuple(rows)


def listing(document: str, path: FieldPath) -> Listed | None:
    return next((row for row in listed() if row.matches(document, path)), None)


__all__ = ["Edit", "Field", "Listed", "changed_values", "edits", "fnmatch", "instances", "listed", "listing",
           "schema_fields", "shown"]
