"""The JSON Schemas under schemas/ (2020-12), and validation against them.

The schema files carry no `$id`: each is identified by where it lies, and refers to the others by
file name (`common.schema.json#/$defs/...`), so a standard validator given the file (e.g.
`check-jsonschema --schemafile schemas/X.schema.json DOC.json` in an extracted bundle, which holds
the schemas its documents use) resolves every `$ref` offline, next to it. The harness registers
each under its file URI here (`schema_id`) and validates with that as the base.

Each schema is compiled once per process (`_validator`). A document is first checked by
jsonschema-rs (a compiled 2020-12 validator, about a hundred times faster on the large raw
documents a bundle holds); only when it says "invalid", or is not installed, does the pure-Python
`jsonschema` walk the document to name every violation. The violations reported are always
`jsonschema`'s own: the fast validator only ever short-cuts a document with none, and
tests/bundle/test_schema_fast_path.py checks that the two agree on valid and invalid documents alike.
`dossier fleet collect` verifies a thousand bundles in about a minute on that path (docs/fleet.md).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

try:  # the fast path; without it every document takes the pure-Python walk (same verdicts)
    import jsonschema_rs
except ImportError:  # pragma: no cover - a dependency, but never a reason to refuse to validate
    jsonschema_rs = None  # type: ignore[assignment]  # the name stays bound: None says the fast path is absent

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"
SUFFIX = ".schema.json"
REFERENCE = re.compile(r'"\$ref":\s*"([a-z][a-z0-9-]*)\.schema\.json[#"]')


@dataclass(frozen=True)
class SchemaViolation:
    """One place where a document breaks its schema."""

    path: str  # JSON pointer into the document, e.g. /devices/0/uuid
    schema_path: str  # where in the schema the rule lives
    message: str

    def __str__(self) -> str:
        return f"at {self.path or '/'} (schema {self.schema_path}): {self.message}"


def schema_path(name: str) -> Path:
    return SCHEMA_DIR / f"{name}{SUFFIX}"


def schema_id(name: str) -> str:
    """The URI the harness's registry holds schemas/NAME.schema.json under: its file URI."""
    return schema_path(name).as_uri()


@functools.cache
def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMA_DIR.glob(f"*{SUFFIX}")):
        contents = {**json.loads(path.read_text()), "$id": path.as_uri()}
        resources.append((path.as_uri(), Resource.from_contents(contents)))
    return Registry().with_resources(resources)


def load_schema(name: str) -> dict[str, Any]:
    """schemas/NAME.schema.json, with its file URI as `$id` (the base its relative `$ref`s resolve
    against)."""
    path = schema_path(name)
    if not path.exists():
        raise FileNotFoundError(f"no schema {path}")
    return {**json.loads(path.read_text()), "$id": path.as_uri()}


def referenced(names: Iterable[str]) -> list[str]:
    """NAMES and every schema they refer to, directly or not (by file name), sorted."""
    found: set[str] = set()
    todo = [n for n in names if schema_path(n).exists()]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        todo += [n for n in REFERENCE.findall(schema_path(name).read_text()) if n not in found]
    return sorted(found)


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        load_schema(name), registry=_registry(), format_checker=jsonschema.FormatChecker()
    )


@functools.cache
def _fast_registry() -> Any:
    resources = [
        (path.as_uri(), {**json.loads(path.read_text()), "$id": path.as_uri()})
        for path in sorted(SCHEMA_DIR.glob(f"*{SUFFIX}"))
    ]
    return jsonschema_rs.Registry(resources)


@functools.cache
def _fast_validator(name: str) -> Any:
    """The compiled validator of schemas/NAME.schema.json, or None where jsonschema-rs cannot build one."""
    if jsonschema_rs is None:
        return None
    try:
        return jsonschema_rs.Draft202012Validator(load_schema(name), registry=_fast_registry(), validate_formats=True)
    except Exception:  # noqa: BLE001 - a schema it cannot compile takes the pure-Python path
        return None


def _surely_valid(name: str, document: Any) -> bool:
    """True only when the compiled validator finds nothing wrong with DOCUMENT."""
    fast = _fast_validator(name)
    if fast is None:
        return False
    try:
        return bool(fast.is_valid(document))
    except Exception:  # noqa: BLE001 - e.g. a value it cannot convert: let jsonschema judge it
        return False


def is_valid(name: str, document: Any) -> bool:
    """Whether DOCUMENT breaks no rule of schemas/NAME.schema.json (the compiled validator's answer,
    `jsonschema`'s where it has none): for a caller that needs no list of violations."""
    return _surely_valid(name, document) or (_fast_validator(name) is None and not violations(name, document))


def violations(name: str, document: Any) -> list[SchemaViolation]:
    """Every violation of schemas/NAME.schema.json by `document`, most specific first."""
    if _surely_valid(name, document):
        return []
    validator = _validator(name)
    found = []
    for error in sorted(validator.iter_errors(document), key=lambda e: (list(e.absolute_path), e.message)):
        found.append(
            SchemaViolation(
                path="".join(f"/{p}" for p in error.absolute_path),
                schema_path="/" + "/".join(str(p) for p in error.absolute_schema_path),
                message=error.message if len(error.message) < 400 else error.message[:400] + "...",
            )
        )
    return found
