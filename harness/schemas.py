"""The JSON Schemas under schemas/ (2020-12), and validation against them."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"
SCHEMA_BASE = "https://rig-dossier.dev/schemas/"


@dataclass(frozen=True)
class SchemaViolation:
    """One place where a document breaks its schema."""

    path: str  # JSON pointer into the document, e.g. /devices/0/uuid
    schema_path: str  # where in the schema the rule lives
    message: str

    def __str__(self) -> str:
        return f"at {self.path or '/'} (schema {self.schema_path}): {self.message}"


@functools.cache
def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


def schema_id(name: str) -> str:
    return f"{SCHEMA_BASE}{name}.schema.json"


def load_schema(name: str) -> dict[str, Any]:
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.exists():
        raise FileNotFoundError(f"no schema {path}")
    return json.loads(path.read_text())


def violations(name: str, document: Any) -> list[SchemaViolation]:
    """Every violation of schemas/NAME.schema.json by `document`, most specific first."""
    validator = jsonschema.Draft202012Validator(load_schema(name), registry=_registry(),
                                                format_checker=jsonschema.FormatChecker())
    found = []
    for error in sorted(validator.iter_errors(document), key=lambda e: (list(e.absolute_path), e.message)):
        found.append(SchemaViolation(
            path="".join(f"/{p}" for p in error.absolute_path),
            schema_path="/" + "/".join(str(p) for p in error.absolute_schema_path),
            message=error.message if len(error.message) < 400 else error.message[:400] + "...",
        ))
    return found
