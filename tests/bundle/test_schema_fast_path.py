"""The compiled validator (jsonschema-rs) only ever short-cuts a document jsonschema finds valid:
on every committed fixture document, and on each of them broken in the ways a schema forbids
(a wrong type, a value out of range, a missing or an unknown key), the two agree."""

from __future__ import annotations

import copy
import json
import tarfile
from pathlib import Path

import pytest

from harness import schemas

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUNDLES = [FIXTURES / "h200" / "dossier-h200.tar.gz", FIXTURES / "h200x2" / "dossier-h200x2.tar.gz"]


def documents():
    """(schema, document) for every document of the committed bundles."""
    for bundle in BUNDLES:
        with tarfile.open(bundle) as tar:
            commands = json.load(tar.extractfile("commands.json"))
            yield "commands", commands
            yield "environment", json.load(tar.extractfile("environment.json"))
            for entry in commands["steps"]:
                if entry.get("output"):
                    yield entry["schema"], json.load(tar.extractfile(entry["output"]))


def mutants(document):
    """The document broken at several depths: a number made a string, made negative, a key dropped
    and an unknown key added, at the first object found at each depth."""
    paths, stack = [], [((), document)]
    while stack:
        path, node = stack.pop(0)
        if isinstance(node, dict):
            paths.append(path)
            stack += [((*path, k), v) for k, v in list(node.items())[:3]]
        elif isinstance(node, list) and node:
            stack.append(((*path, 0), node[0]))
    for path in paths[:12]:
        for edit in ("string", "negative", "drop", "extra"):
            copied = copy.deepcopy(document)
            target = copied
            for key in path:
                target = target[key]
            keys = list(target)
            if not keys:
                continue
            first = keys[0]
            if edit == "string":
                target[first] = "not what the schema says"
            elif edit == "negative" and isinstance(target[first], (int, float)) and not isinstance(target[first], bool):
                target[first] = -abs(target[first]) - 1
            elif edit == "drop":
                del target[first]
            elif edit == "extra":
                target["an_unknown_key"] = 1
            yield copied


@pytest.mark.skipif(schemas.jsonschema_rs is None, reason="jsonschema-rs is not installed: no fast path to check")
def test_the_fast_path_never_passes_a_document_jsonschema_fails():
    checked = 0
    for name, document in documents():
        for candidate in [document, *mutants(document)]:
            slow = list(schemas._validator(name).iter_errors(candidate))
            assert schemas._surely_valid(name, candidate) == (not slow), (name, slow[:1])
            checked += 1
    assert checked > 200
