"""Every field of every document a bundle holds, and what verify does with it (issue 28 item 3).

A field is a property path in a schema: keys, `[]` for an array's items, `*` for any key of a map
(`devices[].clocks.sm_mhz`, `host.packages.*`). `schema_fields(NAME)` walks schemas/NAME.schema.json
(its `$ref`s, `anyOf`/`oneOf`/`allOf` branches, array items and maps), so a field added to a schema
is listed here without anyone remembering to.

docs/bundle.md ("What verify checks in each document") classes every field, by patterns, as
recomputed or consistent (verify refuses a changed value: its figure checks recompute it from the
raw data, or check it against the raw data) or free or raw (nothing in the bundle implies it: text,
provenance, or a measurement itself; the row says why). tests/verify/test_field_inventory.py holds the two
together: every field is classed, and every recomputed or consistent field that a real document
holds is proved so: each schema-valid edit a key holder could make to it (`edits`: a number
scaled, an integer moved by one, a flag flipped, a string or enum value changed, a list shortened,
scaled, repeated or reversed, an optional field removed) is refused by `refusal`. bench/fuzz_verify.py
classes the re-signed mutants verify accepts with the same table.
"""

from __future__ import annotations

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
Concrete = tuple[Any, ...]  # keys and list indices to one instance
ITEMS, ANY_KEY = "[]", "*"
CHECKED_KINDS = ("recomputed", "consistent")
KINDS = CHECKED_KINDS + ("free", "raw")


def shown(path: FieldPath) -> str:
    """`devices[].clocks.sm_mhz` for ("devices", "[]", "clocks", "sm_mhz")."""
    text = ""
    for part in path:
        text += part if part == ITEMS else (("." if text else "") + part)
    return text


def generic(concrete: Concrete) -> FieldPath:
    """The field a concrete path is an instance of (list indices as `[]`; map keys are left as keys)."""
    return tuple(ITEMS if isinstance(part, int) else part for part in concrete)


@cache
def _schema_file(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())


def _resolve(ref: str, file: str) -> tuple[Any, str]:
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
    enums: list[Any]  # every enum or const value the schema allows here


def _walk(node: Any, file: str, path: FieldPath, out: dict[FieldPath, Field], seen: frozenset) -> None:
    if not isinstance(node, dict):
        return
    if "$ref" in node and (file, node["$ref"]) not in seen:
        target, target_file = _resolve(node["$ref"], file)
        _walk(target, target_file, path, out, seen | {(file, node["$ref"])})
    for keyword in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(keyword, []):
            _walk(branch, file, path, out, seen)
    if path in out:
        out[path].enums += node.get("enum", []) + ([node["const"]] if "const" in node else [])
    required = set(node.get("required", []))
    children = [((key,), child, key not in required) for key, child in node.get("properties", {}).items()]
    children += [((ANY_KEY,), child, True) for child in node.get("patternProperties", {}).values()]
    if isinstance(node.get("additionalProperties"), dict):
        children.append(((ANY_KEY,), node["additionalProperties"], True))
    if isinstance(node.get("items"), dict):
        children.append(((ITEMS,), node["items"], False))
    for part, child, optional in children:
        here = path + part
        field = out.setdefault(here, Field(here, optional, []))
        field.optional = field.optional or optional
        _walk(child, file, here, out, seen)


@cache
def schema_fields(name: str) -> dict[FieldPath, Field]:
    """Every property path of schemas/NAME.schema.json (an array's items are edited with their
    array, as a whole, so they are not fields of their own)."""
    out: dict[FieldPath, Field] = {}
    _walk(_schema_file(f"{name}.schema.json"), f"{name}.schema.json", (), out, frozenset())
    return {path: field for path, field in out.items() if path[-1] != ITEMS}


def instances(document: Any, path: FieldPath) -> list[Concrete]:
    """The concrete path of every place PATH is present in DOCUMENT, in document order."""
    places: list[tuple[Concrete, Any]] = [((), document)]
    for part in path:
        following = []
        for where, value in places:
            if part == ITEMS and isinstance(value, list):
                following += [(where + (i,), item) for i, item in enumerate(value)]
            elif part == ANY_KEY and isinstance(value, dict):
                following += [(where + (key,), item) for key, item in value.items()]
            elif part not in (ITEMS, ANY_KEY) and isinstance(value, dict) and part in value:
                following.append((where + (part,), value[part]))
        places = following
    return [where for where, _ in places]


def value_at(document: Any, where: Concrete) -> Any:
    for part in where:
        document = document[part]
    return document


_REMOVE = object()


def replaced(document: Any, where: Concrete, new: Any = _REMOVE) -> Any:
    """DOCUMENT with the value at WHERE set to NEW (or removed), copying only the containers on the way."""
    if not where:
        return new
    copy = dict(document) if isinstance(document, dict) else list(document)
    head, rest = where[0], where[1:]
    if not rest and new is _REMOVE:
        del copy[head]
    else:
        copy[head] = replaced(document[head], rest, new)
    return copy


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def changed_values(value: Any, field: Field) -> Iterator[tuple[str, Any]]:
    """(what, new value) edits of VALUE, the plausible ones first."""
    for other in [e for e in field.enums if e != value][:2]:
        yield f"{value!r} -> {other!r}", other
    if isinstance(value, bool):
        yield f"{value} -> {not value}", not value
    elif isinstance(value, int):
        yield from ((f"{value} -> {new}", new) for new in (value + 1, value - 1))
    elif isinstance(value, float):
        yield from ((f"{value:g} -> x{factor}", value * factor) for factor in (1.25, 0.8) if value)
        if abs(value) < 1e3:  # beyond, adding one is below a recomputation's rounding tolerance
            yield f"{value:g} -> {value + 1:g}", value + 1.0
    elif isinstance(value, str):
        yield "text changed", value + "x"
    elif isinstance(value, list) and value:
        if all(_number(v) for v in value):
            yield "every number x1.25", [v * 1.25 if isinstance(v, float) else v + 1 for v in value]
        yield "last item removed", value[:-1]
        yield "first item repeated", [value[0]] + value
        if len(value) > 1 and value[::-1] != value:
            yield "order reversed", value[::-1]
    elif isinstance(value, dict) and value and field.path[-1] == ANY_KEY:
        pass  # a map's entries are the field `*` below it
    elif value is None:
        for new in (0, 1.5, "x", True):
            yield f"null -> {new!r}", new


@dataclass(frozen=True)
class Edit:
    where: Concrete
    what: str
    document: Any

    def describe(self) -> str:
        return f"{'.'.join(map(str, self.where))}: {self.what}"


def edits(document: Any, field: Field, instances_tried: int = 2) -> Iterator[Edit]:
    """The edits of FIELD's first and last instance in DOCUMENT (a changed value and, where the field
    is optional, its removal; a map key is renamed); the caller keeps the schema-valid ones."""
    places = instances(document, field.path)
    chosen = [places[0], places[-1]][:instances_tried] if places else []
    for where in dict.fromkeys(chosen):
        value = value_at(document, where)
        for what, new in changed_values(value, field):
            yield Edit(where, what, replaced(document, where, new))
        if field.path[-1] == ANY_KEY:
            parent = value_at(document, where[:-1])
            renamed = {(k + "x" if k == where[-1] else k): v for k, v in parent.items()}
            yield Edit(where, "key renamed", replaced(document, where[:-1], renamed))
        if field.optional:
            yield Edit(where, "removed", replaced(document, where))


# The inventory in docs/bundle.md: | `document` | `field pattern` | kind | why |

ROW = re.compile(
    r"^\| `(?P<document>[a-z0-9-]+)` \| `(?P<pattern>[^`]+)` \| (?P<kind>" + "|".join(KINDS) + r") \| (?P<why>.+) \|$"
)


@dataclass(frozen=True)
class Listed:
    document: str  # the schema's name
    pattern: str  # a field; `**` any run of characters, `*` one part (no `.` or `[`), `{p}` an optional prefix p
    kind: str  # recomputed, consistent, free or raw
    why: str

    def matches(self, document: str, path: FieldPath) -> bool:
        return document == self.document and _glob(self.pattern).fullmatch(shown(path)) is not None


@cache
def _glob(pattern: str) -> re.Pattern:
    out = ""
    for token in re.split(r"(\*\*|\*|\{[^}]*\})", pattern):
        if token.startswith("{") and token.endswith("}"):
            out += f"(?:{re.escape(token[1:-1])})?"
        else:
            out += {"**": r".*", "*": r"[^.\[\]]*"}.get(token, re.escape(token))
    return re.compile(out)


@cache
def listed() -> tuple[Listed, ...]:
    """The rows of docs/bundle.md's inventory, in order (the first that matches a field classes it)."""
    return tuple(Listed(**m.groupdict()) for m in map(ROW.match, DOC.read_text().splitlines()) if m)


def listing(document: str, path: FieldPath) -> Listed | None:
    return next((row for row in listed() if row.matches(document, path)), None)
