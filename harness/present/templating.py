"""The one Jinja2 environment for the package's templates (harness/present/templates/)."""

from __future__ import annotations

import functools

import jinja2


def markdown_cell(text: object) -> str:
    """Text safe inside a Markdown table cell: a pipe would end the cell, a newline the row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


@functools.cache
def environment(undefined: type[jinja2.Undefined] = jinja2.StrictUndefined) -> jinja2.Environment:
    """Templates ending in .html.j2 are HTML-escaped; Markdown ones are not.

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
    )
    env.filters["cell"] = markdown_cell
    return env
