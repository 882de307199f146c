"""Strings from another party's files, escaped for where they are shown: one function per destination.

A bundle, a profile, a statement, a node's log or a nodelist is written by someone else: every string
taken from one is data, never markup or a control sequence, wherever it is shown (docs/bundle.md,
"Whose files these are"). Each function returns the text unchanged when it holds nothing its
destination would act on, so what this build writes of its own data reads as before.

- `terminal`: control characters (C0 and DEL, C1, and the format characters: bidi overrides and
  isolates, zero-width marks), line and paragraph separators and lone surrogates are shown as
  Python's `\\x1b`, `\\u202e` escapes; a newline too, unless NEWLINES keeps the caller's own lines.
- `markdown`: inline text (CommonMark with GitHub's extensions): the controls as `terminal` shows
  them (so no line of the data starts a heading, a list or a table row), and a backslash before what
  would start a heading or a code fence at the text's start (`#`, ```, ~~~), raw HTML or an autolink
  (`<` before a letter, `/`, `!`, `?`, or a `<...>` with no space), a link or image (`](`, `][`,
  `]:`) and a bare URL or e-mail address GitHub would link (`://`, `www.`, `@` before a domain);
  `markdown_cell` also a table cell's end (`|`). A backslash before ASCII punctuation is what
  CommonMark defines for a literal character: the raw file stays readable, the page shows the text.
- `xml`: XML 1.0 character data and attribute values: `&`, `<`, `>`, both quotes and the line
  breaks and tab as references (an attribute keeps them), and every character XML 1.0 forbids (C0 but tab, newline and carriage return; lone surrogates;
  U+FFFE, U+FFFF) written as `terminal` shows it, so the document is well-formed.
- `csv_cell`: a spreadsheet never runs a cell as a formula (OWASP, "CSV Injection"): a string
  starting with `=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with a single quote;
  numbers stay numbers. Quoting is the csv module's.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# Characters shown as escapes on a terminal: controls (Cc: C0, DEL, C1), format characters (Cf: bidi
# overrides and isolates, zero-width marks, the BOM), lone surrogates (Cs: printing one raises), and the
# line and paragraph separators (Zl, Zp), which end a line on some terminals.
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
KEPT_ON_TERMINAL = "\n"  # with newlines=True: the caller's own line breaks

# Markdown, per CommonMark 0.31 and GitHub Flavored Markdown 0.29: what data could start.
# A heading or a code fence at the text's start (a list item's text may be either: `- # Verdict: PASS`).
_BLOCK_START = re.compile(r"^( {0,3})(#|`{3}|~{3})")
_INLINE = re.compile(
    r"<(?=[A-Za-z/!?])"  # raw HTML: a tag, a closing tag, a comment, a declaration, a processing instruction
    r"|<(?=[^\s<>]*>)"  # an autolink <scheme:...> or <user@host>
    r"|\](?=[(\[:])"  # a link or image [text](url), a reference [text][ref], a definition [ref]: url
    r"|(?<=:)//"  # a bare URL GitHub links (http://, https://, ftp://)
    r"|(?<=\bwww)\."  # www.example.com, linked by GitHub
    r"|@(?=[A-Za-z0-9_-]+\.[A-Za-z0-9])"  # an e-mail address, linked by GitHub
)
# XML 1.0 (fifth edition, production 2): Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | ...
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# the markup characters, and the whitespace an attribute value would otherwise turn into spaces
_XML_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&apos;",
    "\n": "&#10;",
    "\r": "&#13;",
    "\t": "&#9;",
}
# OWASP CSV Injection: what a spreadsheet takes as the start of a formula.
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(char: str) -> str:
    """CHAR as Python writes it in a string's repr: \\n, \\x1b, \\u202e."""
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in ESCAPED_CATEGORIES


def terminal(text: Any, newlines: bool = False) -> str:
    """TEXT (made a string) with every control and invisible format character shown as an escape;
    NEWLINES keeps line breaks (the caller's own lines around the data)."""
    text = str(text)
    if text.isprintable():  # the common case: nothing to do (isprintable is False for every escaped class)
        return text
    return "".join(_shown(c) if _unsafe(c) and not (newlines and c in KEPT_ON_TERMINAL) else c for c in text)


def markdown(text: Any) -> str:
    """TEXT as inline Markdown (a line's text or a table cell) that renders as exactly that text."""
    text = _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), terminal(text))
    return _INLINE.sub(lambda m: "\\" + m.group(0), text)


def markdown_cell(text: Any) -> str:
    """TEXT in a Markdown table cell: `markdown`, and a pipe escaped (it would end the cell; elsewhere in a
    line it is text: a table needs a delimiter row under its header, which data never writes)."""
    return markdown(text).replace("|", "\\|")


def xml(text: Any) -> str:
    """TEXT as XML 1.0 character data or an attribute value (quoted either way): well-formed."""
    text = _XML_FORBIDDEN.sub(lambda m: _shown(m.group(0)), str(text))
    return "".join(_XML_ENTITIES.get(c, c) for c in text)


def xml_text(text: Any) -> str:
    """TEXT with only the characters XML 1.0 forbids shown as escapes, for a serializer that writes the
    references itself (xml.etree.ElementTree, which writes a control character as it is)."""
    return _XML_FORBIDDEN.sub(lambda m: _shown(m.group(0)), str(text))


def csv_cell(value: Any) -> Any:
    """VALUE for a CSV cell: a string a spreadsheet would take as a formula is prefixed with `'`."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_START):
        return "'" + value
    return value
