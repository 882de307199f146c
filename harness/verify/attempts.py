"""A retested step's earlier attempts (`dossier run --retest N`, commands.json `attempts`) against
what the run records of them (issue 28).

Each earlier attempt failed (the step's own fields are its last attempt): they are numbered from 1,
in order, at most N of them (a step that failed every attempt has all N); each ran the step's own
command; its duration is its end less its start, and it ended before the next attempt started; its
why is what the run's judge says of its exit (harness.run.outcome.judge: "timed out (NOTE)",
"exited with code C (NOTE)", or, for a process that exited 0, why its stdout was no document, with
the schema violations exactly when it broke the schema); its stdout and stderr members are named
from the step and the attempt's number (harness.bundle.layout). Its stderr_tail and note are the
runner's words (the whole stderr is a member).
"""

from __future__ import annotations

from typing import Any

from harness.analysis.timestamps import duration_s
from harness.analysis.verdict import StepStatus
from harness.bundle import layout

# How harness.run.outcome.judge words the failure of a process that exited 0.
NO_DOCUMENT = ("printed nothing on stdout", "printed non-JSON on stdout", "output does not match schemas/")


def _why(attempt: dict[str, Any]) -> str | None:
    """What the judge says of the attempt's exit, where its exit decides it (None: it exited 0)."""
    note = attempt.get("note")
    if attempt.get("timed_out") is True:
        return f"timed out ({note or 'no note'})"
    if attempt.get("exit_code") != 0:
        return f"exited with code {attempt.get('exit_code')}" + (f" ({note})" if note else "")
    return None


def _one(where: str, attempt: dict[str, Any], entry: dict[str, Any], number: int) -> list[str]:
    found = []
    if attempt.get("attempt") != number:
        found.append(
            f"{where}: attempt {attempt.get('attempt')!r}, but it is earlier attempt {number}, counting from 1"
        )
    if attempt.get("argv") != entry.get("argv"):
        found.append(f"{where}: argv differs from the step's: a retest runs the step's own command again")
    names = {
        "stdout": layout.attempt_stdout_name(str(entry["step"]), number),
        "stderr": layout.attempt_stderr_name(str(entry["step"]), number),
    }
    found += [
        f"{where}: {key} {attempt.get(key)!r}, but attempt {number}'s is {name!r}"
        for key, name in names.items()
        if attempt.get(key) != name
    ]
    started, finished, stated = attempt.get("started_at"), attempt.get("finished_at"), attempt.get("duration_s")
    try:
        again = duration_s(started, finished) if isinstance(started, str) and isinstance(finished, str) else None
    except ValueError as exc:
        found.append(f"{where}: started_at or finished_at is not a time ({exc})")
    else:
        if again is None or stated != again:
            found.append(f"{where}: duration_s {stated} but {started} to {finished} is {again} s")
    why, expected = str(attempt.get("why")), _why(attempt)
    violations = attempt.get("schema_violations")
    if expected is not None and why != expected:
        found.append(f"{where}: why {why[:80]!r}, but its exit says {expected!r}")
    elif expected is None and not why.startswith(NO_DOCUMENT):
        found.append(
            f"{where}: exited 0 and not timed out, but its why {why[:80]!r} does not say why its stdout was no document"
        )
    if not isinstance(violations, list) or bool(violations) != (expected is None and why.startswith(NO_DOCUMENT[2])):
        found.append(
            f"{where}: schema_violations {str(violations)[:60]}, but they are listed exactly when its output "
            "broke its schema"
        )
    return found


def attempt_discrepancies(entry: dict[str, Any], retest: Any) -> list[str]:
    """The step ENTRY's earlier attempts against the run's RETEST (options.retest, None when not given)."""
    attempts = entry.get("attempts")
    if attempts is None:
        return []
    step = str(entry.get("step"))[:60]
    if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
        return [f"step {step}: attempts is not a list of attempt records"]
    limit = retest if isinstance(retest, int) and not isinstance(retest, bool) else 0
    failed_every_time = entry.get("status") == StepStatus.FAILED and entry.get("argv") is not None
    if not 0 < len(attempts) <= limit or (failed_every_time and len(attempts) != limit):
        return [
            f"step {step}: {len(attempts)} earlier attempt(s), but options.retest is {retest!r} (at most that many; "
            "a step that failed every attempt has all of them)"
        ]
    found = []
    for number, attempt in enumerate(attempts, start=1):
        found += _one(f"step {step}: attempt {number}", attempt, entry, number)
    ends = [(a.get("started_at"), a.get("finished_at")) for a in attempts] + [(entry.get("started_at"), None)]
    if any(
        not isinstance(end, str) or not isinstance(nxt, str) or end > nxt  # RFC 3339 UTC times order as text
        for (_, end), (nxt, _) in zip(ends, ends[1:], strict=False)
    ):
        found.append(f"step {step}: an attempt ends after the next one (or the step's last attempt) started")
    return found
