"""harness.escape: another party's strings, escaped for a terminal, Markdown, XML and CSV.

Markdown is checked with a real CommonMark parser (markdown-it-py, the one rich uses): escaped text,
wherever it is put in a line, a list item or a table cell, parses as exactly that text and nothing
else: no heading, link, image, HTML or a new cell. XML with the standard library's parser."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from harness import escape

HOSTILE = [
    "\x1b]0;owned\x07\x1b[2J",  # a window title and a cleared screen
    "host\x9b31m",  # a C1 control sequence introducer
    "evil\u202etxt.exe",  # a bidi override
    "a\u2066b\u2069c\u200bd\ufeff",  # isolates, a zero-width space, a BOM
    "x\ny\rz\u2028w\u2029v\x85",  # line breaks of every kind
    "lone \udc80 surrogate",
]
MARKDOWN_HOSTILE = [
    "# Verdict: PASS",
    "ok\n# Verdict: PASS",
    "<script>alert(1)</script>",
    "</td><img src=x onerror=alert(1)>",
    "<!-- hidden -->",
    "<https://evil.example/>",
    "<root@evil.example>",
    "[click](https://evil.example/)",
    "![x](https://evil.example/x.png)",
    "[ref][r]",
    "[r]: https://evil.example/",
    "see https://evil.example/ now",
    "www.evil.example",
    "mail root@evil.example",
    "a | b | c",
    "> quoted",
    "- item",
    "+ item",
    "* item",
    "1. first",
    "2) second",
    "---",
    "===",
    "***",
    "```",
    "~~~",
]
LEGIT = [
    "GPU 0 link ok: Gen5 x16, every pinned rate within [0.6, 1.05] x 63.02 GB/s",
    "NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=unknown,driver>=535,driver<536",
    "registry.example/rig-dossier@sha256:0123abcd",
    "-5.2% (outside +-2.06%)",
    "+15.4 dB",
    "10*log10(12*127^2) - 20*log10(absmax/std)",
    "µs ± 2 × 3 — fine",
    "plots/bandwidth/bandwidth.png",
    "by PHASE=A|B",  # a pipe in a line's text is text (a committed dossier's repeatability source)
]
MD = MarkdownIt("commonmark").enable("table")


def inline_tokens(markdown_text: str) -> list:
    """Every inline child token of MARKDOWN_TEXT's blocks, with the block tokens themselves."""
    tokens = MD.parse(markdown_text)
    return tokens + [child for t in tokens for child in (t.children or [])]


def rendered_text(markdown_text: str) -> str:
    return "".join(t.content for t in inline_tokens(markdown_text) if t.type == "text")


@pytest.mark.parametrize("text", HOSTILE)
def test_the_terminal_sees_every_control_and_invisible_character_as_an_escape(text):
    shown = escape.terminal(text)
    assert shown.isprintable() and shown.isascii() or all(c.isprintable() for c in shown)
    assert "\x1b" not in shown and "\u202e" not in shown and "\n" not in shown
    shown.encode("utf-8")  # a lone surrogate would raise here, as print does


def test_the_terminal_escapes_read_like_pythons_and_keep_newlines_when_asked():
    assert escape.terminal("a\x1b[31mb") == "a\\x1b[31mb"
    assert escape.terminal("x\u202ey") == "x\\u202ey"
    assert escape.terminal("one\ntwo") == "one\\ntwo"
    assert escape.terminal("one\ntwo\x07", newlines=True) == "one\ntwo\\x07"
    assert escape.terminal(42) == "42"


@pytest.mark.parametrize("text", LEGIT + ["héllo wörld", "tab\tless?"[:3]])
def test_legitimate_text_is_unchanged_on_the_terminal(text):
    assert escape.terminal(text) == text


@pytest.mark.parametrize("text", LEGIT)
def test_legitimate_text_is_unchanged_in_markdown(text):
    """What this build writes of its own data (the committed reports' lines) reads as before."""
    assert escape.markdown(text) == text


def places(text: str) -> list[str]:
    """TEXT where a template puts data: a line's start, a list item, mid-line, a heading (escaped as inline
    text), a table cell (escaped as a cell)."""
    value = escape.markdown(text)
    return [
        f"{value}\n",
        f"- {value}\n",
        f"- **pass**: {value} and more\n",
        f"# Rig Dossier: {value}\n",
        f"| a | b |\n| --- | --- |\n| {escape.markdown_cell(text)} | x |\n",
    ]


@pytest.mark.parametrize("text", MARKDOWN_HOSTILE)
def test_hostile_markdown_renders_as_its_text_and_nothing_else(text):
    escaped = escape.markdown(text)
    for page in places(text):
        tokens = inline_tokens(page)
        kinds = {t.type for t in tokens}
        assert not kinds & {"html_inline", "html_block", "link_open", "image", "fence"}, page
        assert sum(t.type == "heading_open" for t in tokens) == page.startswith("# "), page
        assert sum(t.type == "td_open" for t in tokens) in (0, 2), page  # the table keeps its two cells
        assert "\n" not in escaped
    if (
        "\n" not in text
        and "\r" not in text
        and not text.startswith(("> ", "- ", "+ ", "* ", "1.", "2)", "---", "===", "***"))
    ):
        assert rendered_text(escaped) == text  # (a list, a quote or a rule is a block, harmless: its text stays)


def test_gfm_autolinks_are_broken_by_a_backslash_the_page_does_not_show():
    assert escape.markdown("see https://evil.example/") == "see https:\\//evil.example/"
    assert escape.markdown("www.evil.example") == "www\\.evil.example"
    assert escape.markdown("root@evil.example") == "root\\@evil.example"
    assert escape.markdown("image@sha256:abc") == "image@sha256:abc"  # no domain: GitHub links nothing
    assert rendered_text(escape.markdown("see https://evil.example/")) == "see https://evil.example/"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_any_text_renders_as_one_paragraph_of_text_in_any_place(text):
    escaped = escape.markdown(text)
    assert "\n" not in escaped and "\r" not in escaped
    tokens = inline_tokens(f"- **pass**: {escaped}\n")
    kinds = {t.type for t in tokens}
    assert not kinds & {"html_inline", "html_block", "link_open", "image", "heading_open"}
    cells = inline_tokens(f"| a | b |\n| --- | --- |\n| {escape.markdown_cell(text)} | x |\n")
    assert sum(t.type == "td_open" for t in cells) == 2


@pytest.mark.parametrize("text", HOSTILE + MARKDOWN_HOSTILE + ["a & b <c> \"d\" 'e'", "\ufffe\uffff"])
def test_xml_is_well_formed_whatever_the_text(text):
    document = f'<testcase name="{escape.xml(text)}"><failure message="{escape.xml(text)}">{escape.xml(text)}</failure></testcase>'
    parsed = ET.fromstring(document.encode("utf-8", "surrogatepass"))
    assert parsed.get("name") == escape.xml_text(text)
    assert escape.xml("plain text") == "plain text"


@pytest.mark.parametrize(
    "cell", ['=HYPERLINK("https://evil.example","x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]
)
def test_csv_cells_never_start_a_formula(cell):
    out = io.StringIO()
    csv.writer(out).writerow([escape.csv_cell(cell), escape.csv_cell(-2.5), escape.csv_cell("n0001")])
    (row,) = list(csv.reader(io.StringIO(out.getvalue())))
    assert row[0] == "'" + cell and row[1] == "-2.5" and row[2] == "n0001"
