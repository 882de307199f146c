"""fleet.md: the fleet document rendered for people (Jinja2 template in the package).

Only fleet.json goes in (no clock, no host lookups): the same document renders the same bytes.
"""

from __future__ import annotations

import shlex
from typing import Any

import jinja2

from harness.present import templating

TEMPLATE = "fleet.md.j2"


def value_text(value: Any) -> str:
    """A table cell for a number, a missing figure, or an unavailable field (with its reason)."""
    if value is None or isinstance(value, jinja2.Undefined):
        return "-"
    if isinstance(value, dict) and "unavailable" in value:
        return f"unavailable: {value['unavailable']}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def ecc_text(value: Any) -> str:
    if isinstance(value, dict) and "unavailable" not in value:
        return ", ".join(f"{k.replace('_', ' ')} {value_text(v)}" for k, v in sorted(value.items()))
    return value_text(value)


def _environment() -> jinja2.Environment:
    return templating.environment(jinja2.ChainableUndefined)


def render(document: dict[str, Any]) -> str:
    table = document["table"]
    submission = document["job"]["submission"]
    return _environment().get_template(TEMPLATE).render(
        job=document["job"], nodes=document["nodes"], failed=document["failed_nodes"],
        outliers=document["outliers"], rule=document["outlier_rule"], metrics=document["metrics"],
        rates=[(m, table[m]) for m in document["metrics"]], ecc=table["ecc"],
        allreduce=document["allreduce"], value=value_text, ecc_text=ecc_text,
        submit_command=shlex.join(submission.get("argv") or ["dossier", "fleet", "submit", "..."]))
