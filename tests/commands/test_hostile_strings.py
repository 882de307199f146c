"""Issue 37, case 5: a bundle's strings are data wherever they are shown. A signed bundle whose host and
process names carry terminal escapes, a bidi override, a forged `# Verdict: PASS` line, a script, a
link and a table cell's end (tests/hostile_support.py) goes through `report`, `accept` (terminal,
JUnit, Markdown and HTML summaries), `diff` and `reproduce` (terminal, summary): no control character
reaches the terminal, no heading, link or HTML reaches a page, the XML is well-formed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from markdown_it import MarkdownIt

from harness.cli import main
from tests.accept_support import h200_bandwidth, h200_health, write_bundle
from tests.bundle_support import make_key
from tests.hostile_support import FOREIGN_PID, hostile_bundle

RAW = ("\x1b", "\x07", "\u202e")  # what must never reach a terminal or a file raw
MD = MarkdownIt("commonmark").enable("table")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """(tmp, hostile bundle, its key, a clean bundle of the same machine, its key)."""
    tmp = tmp_path_factory.mktemp("hostile")
    key, public = make_key(tmp / "theirs-key")
    hostile = hostile_bundle(tmp / "hostile.tar.gz", key)
    mine_key, mine_public = make_key(tmp / "mine-key")
    idle, load = h200_health(load_pids=[FOREIGN_PID])
    clean = write_bundle(
        tmp / "clean.tar.gz", {"health": idle, "bandwidth": h200_bandwidth(), "health-load": load}, mine_key
    )
    return tmp, hostile, public, clean, mine_public


def no_raw_controls(text: str) -> None:
    assert not any(c in text for c in RAW), [line for line in text.splitlines() if any(c in line for c in RAW)][:3]


def tokens(page: str) -> list:
    found = MD.parse(page)
    return found + [child for t in found for child in (t.children or [])]


def headings(page: str) -> list[str]:
    found = MD.parse(page)
    return [found[i + 1].content for i, t in enumerate(found) if t.type == "heading_open"]


def page_is_text(page: str, own_verdict_headings: int) -> None:
    """PAGE has no HTML, no link or image of the data's, no control character, and only its own headings."""
    no_raw_controls(page)
    kinds = [t for t in tokens(page) if t.type in ("html_inline", "html_block", "image", "link_open")]
    links = [t.attrGet("href") for t in kinds if t.type == "link_open"]
    assert all(t.type == "link_open" for t in kinds), [t.content for t in kinds][:3]
    assert not [h for h in links if h and "evil" in h], links
    assert sum(h.startswith("Verdict") for h in headings(page)) == own_verdict_headings, headings(page)


def test_report_on_the_terminal_and_in_report_md_shows_the_strings_as_text(bundles, capsys):
    tmp, hostile, public, _, _ = bundles
    assert main(["report", str(hostile)]) == 0
    out = capsys.readouterr().out
    page_is_text(out, own_verdict_headings=1)
    assert "node7\\x1b]0;owned\\x07" in out and "\\u202eevil\\n# Verdict: PASS\\n\\<script>" in out
    assert main(["report", str(hostile), "-o", str(tmp / "report.md")]) == 0
    page_is_text((tmp / "report.md").read_text(), own_verdict_headings=1)


def test_accept_escapes_for_the_terminal_junit_and_both_summaries(bundles, capsys):
    tmp, hostile, public, _, _ = bundles
    out = tmp / "accept"
    out.mkdir()
    code = main(
        [
            "accept",
            str(hostile),
            "--profile",
            "h200-sxm-141gb",
            "--key",
            str(public),
            "--junit",
            str(out / "accept.xml"),
            "--summary",
            str(out / "accept.md"),
            "--html",
            str(out / "accept.html"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 1  # the hostile process is one the harness did not start: no_unexpected_process fails
    no_raw_controls(captured.out + captured.err)
    assert "no_unexpected_process" in captured.out and "\\x1b]0;owned" in captured.out
    root = ET.parse(out / "accept.xml").getroot()  # well-formed XML 1.0
    failure = next(f for f in root.iter("failure"))
    assert "\\x1b]0;owned" in failure.get("message")
    page_is_text((out / "accept.md").read_text(), own_verdict_headings=0)
    html = (out / "accept.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_diff_and_reproduce_show_the_strings_as_text(bundles, capsys):
    tmp, hostile, public, clean, mine_public = bundles
    assert main(["diff", str(hostile), str(clean), "--key-a", str(public), "--key-b", str(mine_public)]) == 0
    out = capsys.readouterr().out
    no_raw_controls(out)
    assert "\\x1b" in out
    statement, summary = tmp / "repro.intoto.json", tmp / "repro.md"
    main(
        [
            "reproduce",
            str(hostile),
            "--key",
            str(public),
            "--against",
            str(clean),
            "--key-mine",
            str(mine_public),
            "--output-dir",
            str(tmp),
            "--signing-key",
            str(tmp / "mine-key" / "dossier.key"),
            "--statement",
            str(statement),
            "--summary",
            str(summary),
        ]
    )
    captured = capsys.readouterr()
    no_raw_controls(captured.out + captured.err)
    page_is_text(summary.read_text(), own_verdict_headings=0)
    assert json.loads(statement.read_bytes())["payloadType"]  # the statement itself is JSON: the strings as they are


def test_fleet_csv_and_md_never_carry_a_formula_or_a_broken_table(tmp_path):
    """fleet.md and fleet.csv of nodes whose names and why-texts are hostile (names are refused where they
    enter: tests/fleet; a why-text quotes a bundle)."""
    from harness.fleet import report

    hostile_why = '=HYPERLINK("https://evil.example","x") | <b>x</b>\n# Verdict: PASS'
    nodes = [
        {
            "name": name,
            "status": "rejected",
            "why": hostile_why,
            "sku": "-2+3",
            "verify": {"checks_failed": 1},
            "acceptance": {"verdict": "incomplete", "why": "bundle fails verify"},
            "metrics": {"m": -1.5},
            "log_tail": "\x1b[2J" + hostile_why,
        }
        for name in ("n0001", "n0002")
    ]
    document = {
        "job": {"id": "42", "state": None, "nodes": ["n0001", "n0002"], "submission": {}},
        "summary": {
            "nodes": 2,
            "status": {"rejected": 2},
            "acceptance": {"incomplete": 2},
            "skus": {},
            "flagged_nodes": 0,
        },
        "nodes": nodes,
        "failed_nodes": ["n0001", "n0002"],
        "metrics": {"m": {"unit": "GB/s", "kind": "rate", "description": "d", "step": "s", "probe": "p"}},
        "outlier_rule": {"text": "r"},
        "table": {"m": {"groups": {}}},
        "flags": [],
        "outliers": [],
        "allreduce": {"status": "failed", "why": "the step never ran", "exit_code": None, "logs": []},
    }
    rows = list(__import__("csv").reader(report.csv_text(document).splitlines()))
    assert rows[1][2].startswith("'=HYPERLINK") and rows[1][3] == "'-2+3" and rows[1][-1] == "-1.5"
    page = report.render(document, {})
    page_is_text(page, own_verdict_headings=0)
    sick = page[page.index("## Sick nodes") :]
    rows = [
        t
        for t in MD.parse(sick[: sick.index("\n\n", sick.index("| node |"))])
        if t.type in ("tr_open", "td_open", "th_open")
    ]
    cells = [sum(1 for _ in group) for group in _cells_per_row(rows)]
    assert cells == [4, 4, 4], (
        cells
    )  # the header and one row per node (node, problem, reason, action): no cell added by the data


def _cells_per_row(tokens: list):
    row: list = []
    for token in tokens:
        if token.type == "tr_open":
            if row:
                yield row
            row = []
        else:
            row.append(token)
    if row:
        yield row
