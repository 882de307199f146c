"""A bundle's JSON read through orjson gives exactly what the standard parser gives (harness/bundle/view.py
parse_json): the same values of the same types, the same refusals in the same words, on every document
of the committed H200 bundles, on the corner cases where the two parsers differ, and on generated JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.bundle import view
from harness.bundle.read import read_all

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUNDLES = [FIXTURES / "h200" / "dossier-h200-full.tar.gz", FIXTURES / "h200" / "dossier-h200.tar.gz"]


def standard(data: bytes):
    """What parse_json answered before orjson: the standard parser, then the same structure check."""
    try:
        value = view._standard(data)
    except RecursionError:
        return ("error", f"nested more than {view.MAX_JSON_DEPTH} deep")
    except ValueError as exc:
        return ("error", str(exc))
    why = view._checked_structure(value, view.MAX_JSON_DEPTH)
    return ("error", why) if why else ("value", value)


def answered(data: bytes):
    try:
        return ("value", view.parse_json(data))
    except ValueError as exc:
        return ("error", str(exc))


def typed(value):
    """The value with every number's type spelt out (1 and 1.0 compare equal in Python)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}, list(value)
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value if not (isinstance(value, float) and math.isnan(value)) else "nan")


def same(data: bytes) -> bool:
    a, b = standard(data), answered(data)
    return a[0] == b[0] and (typed(a[1]) == typed(b[1]) if a[0] == "value" else a[1] == b[1])


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_every_real_document_reads_the_same(bundle):
    documents = {name: data for name, data in read_all(bundle).items() if name.endswith(".json")}
    assert len(documents) > 10 and all(same(data) for data in documents.values())


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": 1, "b": 2, "a": 3}',
        b"18446744073709551615",
        b"18446744073709551616",
        b"-9223372036854775809",
        b"123456789012345678901234567890",
        b"[1e19, 2]",
        b"null",
        b"1e999",
        b"[NaN]",
        b"[-Infinity]",
        b'"\\ud800"',
        b"\xef\xbb\xbf{}",
        b"[" * 70 + b"]" * 70,
        b"[" * 5000 + b"]" * 5000,
        b" \t\n{}\r\n",
        b"-0.0",
        b"[0.1, 1e-320]",
        b'{"k": "\xff"}',
        b"[1,]",
        b"01",
        b'"a\nb"',
        b"",
        b"{} {}",
        b'{"x": 9.3e18, "y": [9223372036854775807]}',
    ],
)
def test_where_the_parsers_differ_the_standard_answer_stands(data):
    assert same(data)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_generated_json_reads_the_same(value):
    assert same(json.dumps(value).encode())
