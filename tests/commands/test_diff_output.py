"""`dossier diff` for a person: rich tables, no Python reprs, no long lines, the same bytes every
time when not on a terminal (a golden file of the two committed H200 bundles), and --json for
machines."""

import io
import json
from pathlib import Path

from harness import registry
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.cli import main
from harness.present.diff import compare
from harness.present.diff_tables import TEXT_WIDTH, comparison_text, difference, print_comparison

FIXTURES = Path(__file__).parents[1] / "fixtures"
H200 = FIXTURES / "h200" / "dossier-h200.tar.gz"
H200X2 = FIXTURES / "h200x2" / "dossier-h200x2.tar.gz"
GOLDEN = FIXTURES / "diff" / "h200-vs-h200x2.txt"  # made by comparison_text of the two bundles below


def comparison():
    return compare(*(BundleView.from_files(read_all(path), registry.analysis_module) for path in (H200, H200X2)))


def test_the_text_of_the_two_h200_bundles_is_the_golden_file():
    text = comparison_text(comparison(), "h200/dossier-h200.tar.gz", "h200x2/dossier-h200x2.tar.gz")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_the_text_has_no_repr_no_long_line_no_colour_and_no_trailing_space():
    text = GOLDEN.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == lines[-1] and lines[0].startswith("verdict: ")  # the answer, first and last: one line each
    assert max(len(line) for line in lines[1:-1]) <= TEXT_WIDTH
    assert all(line == line.rstrip() for line in lines)
    assert "\x1b[" not in text
    for repr_mark in ("None", "{'", "['", "': ", "unavailable': "):
        assert repr_mark not in text, repr_mark
    # the fixture's git commit was unavailable and no source hash recorded: the version alone, no guess
    assert [line.split() for line in lines if line.lstrip().startswith("rig-dossier")] == [
        ["rig-dossier", "0.1.0", "same"]
    ]
    assert [line.split()[:2] for line in lines if line.lstrip().startswith("device_count")] == [["device_count", "1"]]


def test_the_cli_prints_the_same_tables_when_piped(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")  # the terminal width a pipe inherits changes nothing
    assert main(["diff", str(H200), str(H200X2)]) == 1  # not reproduced (another device count): as reproduce exits
    out = capsys.readouterr().out
    assert out == comparison_text(comparison(), str(H200), str(H200X2))


def test_print_comparison_to_a_pipe_is_the_plain_text():
    stream = io.StringIO()
    print_comparison(comparison(), "a", "b", stream)
    assert stream.getvalue() == comparison_text(comparison(), "a", "b")


def test_json_for_machines_keeps_every_value(capsys):
    assert main(["diff", str(H200), str(H200X2), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    count = next(f for f in result["fields"] if f["field"] == "device_count")
    assert (count["a"], count["b"], count["same"]) == (1, 2, False)
    plateau = next(m for m in result["metrics"] if m["metric"] == "bandwidth plateau")
    assert plateau["unit"] == "GB/s" and 0.99 < plateau["ratio"] < 1.01
    assert plateau["a_spread"] is not None and plateau["b_spread"] is not None


def test_only_what_differs_is_shown_for_dicts_and_lists():
    a, b = difference({"x": "memory", "y": "compute", "z": "compute"}, {"x": "compute", "y": "compute", "z": "compute"})
    assert (a, b) == ("1 of 3 differ: x: memory", "x: compute")
    a, b = difference(["health", "bandwidth"], ["health", "bandwidth", "precision"])
    assert (a, b) == ("2 items, all in the other", "3 items; only here: precision")
    assert difference([], ["one"]) == ("none", "1 item; only here: one")
    assert difference(None, {"unavailable": "NVML not found"}) == ("none", "unavailable (NVML not found)")
