"""Every schema is 2020-12 without an $id (its $refs resolve next to the file, offline), and every
number in it says what it measures."""

import json
import re

import jsonschema
import pytest

from harness.schemas import SCHEMA_DIR, _registry, referenced, schema_id

SCHEMAS = sorted(SCHEMA_DIR.glob("*.schema.json"))


def numeric_properties_without_description(node, path="#"):
    """Yield JSON pointers of properties that can hold a number but have no description."""
    if isinstance(node, dict):
        props = node.get("properties", {})
        for name, sub in props.items():
            if isinstance(sub, dict) and _can_be_number(sub) and not sub.get("description"):
                yield f"{path}/properties/{name}"
        for key, value in node.items():
            yield from numeric_properties_without_description(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from numeric_properties_without_description(value, f"{path}/{i}")


def _can_be_number(schema):
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if {"number", "integer"} & set(types):
        return True
    return any(_can_be_number(s) for key in ("anyOf", "oneOf") for s in schema.get(key, []) if isinstance(s, dict))


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_schema_is_valid_2020_12_and_refers_to_others_by_file_name(path):
    schema = json.loads(path.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # No $id: an https one named a domain that serves nothing, so standard tools could not resolve
    # the relative $refs offline; without one they resolve against the file's own location.
    assert "$id" not in schema
    jsonschema.Draft202012Validator.check_schema(schema)
    for ref in re.findall(r'"\$ref":\s*"([^"#]*)', path.read_text()):
        assert ref == "" or (SCHEMA_DIR / ref).is_file(), ref  # local, or a schema beside it


def test_the_harness_registry_holds_each_schema_under_its_file_uri():
    assert schema_id("common") == (SCHEMA_DIR / "common.schema.json").as_uri()
    resolved = _registry().resolver().lookup(schema_id("common") + "#/$defs/probe_meta")
    assert resolved.contents["type"] == "object"


def test_referenced_follows_refs_to_every_schema_needed():
    assert referenced(["health-diff", "bandwidth"]) == ["bandwidth", "common", "health-diff"]
    assert referenced(["no-such-schema"]) == []


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_number_has_a_description_with_its_unit(path):
    missing = list(numeric_properties_without_description(json.loads(path.read_text())))
    assert not missing, f"numbers without a description (and unit): {missing}"


def test_the_unit_checker_can_fail():
    bad = {"properties": {"bandwidth_gbps": {"type": "number"}}}
    assert list(numeric_properties_without_description(bad)) == ["#/properties/bandwidth_gbps"]
