"""report.md renders from any bundle data BundleView accepts: a malformed field renders as what it
is, never a jinja2 UndefinedError, AttributeError or TypeError (issue 14 item 1). `dossier report`
and `dossier diff` read unverified bundles; verify renders only schema-valid ones."""

import json
from pathlib import Path

import pytest

from harness import registry
from harness.bundle import layout
from harness.bundle.read import read_all
from harness.bundle.view import BundleFormatError, BundleView
from harness.present.report import render_report

H200 = Path(__file__).parents[1] / "fixtures" / "h200" / "dossier-h200.tar.gz"
ODD = ([], "x", None)


@pytest.fixture(scope="module")
def files():
    return read_all(H200)


def rendered(files, name, value):
    changed = dict(files, **{name: json.dumps(value).encode()})
    try:
        view = BundleView.from_files(changed, registry.analysis_module)
    except BundleFormatError:
        return None  # refused as a whole, with the member named: also not a traceback
    return render_report(view)


def test_every_document_replaced_by_an_odd_value_still_renders(files):
    documents = [n for n in sorted(files) if n.startswith(("raw/", "derived/"))]
    assert len(documents) >= 10
    for name in documents:
        for value in ODD:
            assert rendered(files, name, value).startswith("# Rig Dossier"), (name, value)


def test_a_criterion_that_cannot_read_its_document_fails_with_the_reason(files):
    text = rendered(files, "derived/health-diff.json", ["not", "an", "object"])
    assert "ould not be judged from this bundle's data: AttributeError" in text  # a sentence: capital C


@pytest.mark.parametrize("step_index", [0, 3])
def test_every_step_key_missing_or_odd_renders_or_is_refused_by_name(files, step_index):
    commands = json.loads(files[layout.COMMANDS])
    outcomes = []
    for key in list(commands["steps"][step_index]):
        for value in ("missing", []):
            changed = json.loads(files[layout.COMMANDS])
            if value == "missing":
                del changed["steps"][step_index][key]
            else:
                changed["steps"][step_index][key] = value
            outcomes.append(rendered(files, layout.COMMANDS, changed))
    assert sum(text is not None for text in outcomes) > len(outcomes) * 0.8


def test_every_top_level_commands_key_missing_or_odd_renders(files):
    commands = json.loads(files[layout.COMMANDS])
    for key in [k for k in commands if k != "steps"]:
        for value in ("missing", [], {"unavailable": 1}):
            changed = dict(commands)
            if value == "missing":
                del changed[key]
            else:
                changed[key] = value
            assert rendered(files, layout.COMMANDS, changed).startswith("# Rig Dossier"), (key, value)
