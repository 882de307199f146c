"""`dossier check --npd`: the answer in node-problem-detector's custom-plugin protocol.

NPD's custom plugin monitor (kubernetes/node-problem-detector, pkg/custompluginmonitor/plugin/
plugin.go) runs the plugin, reads at most 4 KiB of its standard output, trims the spaces around
it and cuts it at `max_output_length` bytes (80 unless its configuration says otherwise): that is
the condition's message. The exit status is the condition's status: 0 OK, 1 NonOK, anything else
Unknown; past the rule's `timeout` NPD kills the plugin and says Unknown itself.

So here: exit 0 for a healthy node (PASS or WARN), 1 for a sick one (FAIL), 2 when it cannot be
judged (INCOMPLETE, or an error before any judgement); the message is one line that fits the limit
in bytes (cut on a character boundary, never inside a UTF-8 sequence), most important first: the
verdict, the recommended action, the first problem. The NHC-form lines go to standard error, which
NPD keeps in its own log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.analysis.actions import Action

OK, NON_OK, UNKNOWN = 0, 1, 2
DEFAULT_MAX_OUTPUT = 80  # NPD's defaultMaxOutputLength (pkg/custompluginmonitor/types/config.go)
NPD_READ_LIMIT = 4096  # NPD reads no more of stdout than this (maxCustomPluginBufferBytes)
STATUS = {"pass": OK, "warn": OK, "fail": NON_OK}


def status(verdict: str) -> int:
    """The exit status NPD reads for a node verdict."""
    return STATUS.get(verdict, UNKNOWN)


def fitted(text: str, limit: int) -> str:
    """TEXT on one line, at most LIMIT bytes of UTF-8, cut on a character boundary."""
    flat = " ".join(text.split())
    data = flat.encode("utf-8")
    if len(data) <= limit:
        return flat
    return data[:limit].decode("utf-8", "ignore").rstrip()


def message(document: Mapping[str, Any], action: Action, limit: int) -> str:
    """The condition's message: verdict and action first, then the first problem (or the tally)."""
    checks = document["checks"]
    problem = next((c for c in checks if c["verdict"] == "fail"), None) or next(
        (c for c in checks if c["verdict"] == "incomplete"), None
    )
    verdict = str(document["verdict"]).upper()  # FAIL, INCOMPLETE
    if problem is None:
        return fitted(document["summary"], limit)
    return fitted(f"{verdict} {action}: {problem['name']}: {problem['message']}", limit)


def error_message(text: str, limit: int) -> str:
    """The message for an error before any judgement (exit UNKNOWN)."""
    return fitted(f"UNKNOWN: dossier check could not judge: {text}", limit)
