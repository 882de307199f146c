"""One error hierarchy for the host side, caught once in the CLI.

Exit codes (documented in README.md):
  0  success
  1  a check failed (a contract, a verification, an acceptance criterion)
  2  bad usage or bad input
  3  a probe failed (crashed, timed out, printed non-JSON or schema-invalid JSON)
  4  the environment cannot do what was asked (no engine, no image, a missing checkpoint)
  5  incomplete: something required was not measured or could not be judged (fails closed;
     harness.analysis.verdict: PASS and WARN 0, FAIL 1, INCOMPLETE 5)
 70  an internal error: a bug, reported as one line (EX_SOFTWARE; `dossier -v` shows the traceback)
130  interrupted (Ctrl-C or SIGTERM during a run)
141  standard output was closed by its reader (e.g. `dossier diff A B | head -1`; 128 + SIGPIPE)
"""

from __future__ import annotations

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class DossierError(Exception):
    """Base class: a message for the user and, where one exists, a hint."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def diagnostics(self) -> str:
        text = f"error: {self}"
        if self.hint:
            text += f"\nhint: {self.hint}"
        return text


class UsageError(DossierError):
    exit_code = 2


class CheckFailed(DossierError):
    exit_code = 1


class ProbeFailed(DossierError):
    exit_code = 3


class EnvironmentProblem(DossierError):
    exit_code = 4
