"""The one Jinja2 environment for the package's templates (harness/present/templates/).

Every expression a Markdown template writes (`{{ ... }}` in a .md.j2) passes through one function at
render time, harness.escape.markdown: a bundle's strings are data, never headings, links, HTML or a
table's end (docs/bundle.md, "Whose files these are"). An HTML template's expressions are
HTML-escaped instead (autoescape). A value already made Markdown by the package (the `cell` filter's)
passes as it is.
"""

from __future__ import annotations

import functools
from typing import Any

import jinja2

from harness import escape


class Escaped(str):
    """Text already escaped for Markdown (the `cell` filter's): written as it is."""


def markdown_cell(text: object) -> str:
    """Text safe inside a Markdown table cell: a pipe would end the cell, a newline the row."""
    return Escaped(escape.markdown_cell(text))


def code_join(items: Any, separator: str) -> str:
    """ITEMS as the lines of an indented code block, joined by SEPARATOR (its line breaks kept): inside
    one nothing is Markdown, so only a control character or a line break of the data is escaped."""
    return Escaped(separator.join(escape.terminal(item) for item in items))


@jinja2.pass_eval_context
def _finalize(eval_ctx: jinja2.nodes.EvalContext, value: Any) -> Any:
    """What an expression writes: HTML templates escape it themselves (autoescape); in Markdown, a number
    as it is, text escaped (harness.escape.markdown)."""
    if eval_ctx.autoescape or isinstance(value, (Escaped, jinja2.Undefined)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return escape.markdown(value)


@functools.cache
def environment(undefined: type[jinja2.Undefined] = jinja2.StrictUndefined) -> jinja2.Environment:
    """Templates ending in .html.j2 are HTML-escaped; Markdown ones go through harness.escape.markdown.

    One environment per kind of undefined, kept for the process: each template is compiled once,
    not at every render (`dossier verify` re-renders report.md; a fleet collect does it per node).
    Callers must not change the environment they get (add filters or globals to a copy:
    `environment().overlay()`)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.present", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
        undefined=undefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize,
    )
    env.filters["cell"] = markdown_cell
    env.filters["code_join"] = code_join
    return env
