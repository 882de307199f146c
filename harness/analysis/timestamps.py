"""The times commands.json records (ISO 8601, UTC, `Z`) and a step's duration from them: the writer
(harness.run.records) and verify (harness.verify.content) compute it the one way. Standard library only."""

from __future__ import annotations

import datetime as dt


def parse_timestamp(text: str) -> dt.datetime:
    """TEXT's time; TypeError for what is not a string (a step that did not run records null), ValueError
    for a string that is not one."""
    if not isinstance(text, str):
        raise TypeError(f"not a timestamp: {text!r}")
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def duration_s(started_at: str, finished_at: str) -> float:
    return round((parse_timestamp(finished_at) - parse_timestamp(started_at)).total_seconds(), 6)
