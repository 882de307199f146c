"""The names inside a bundle."""

from __future__ import annotations

ATTESTATION = "attestation.intoto.json"
COMMANDS = "commands.json"
ENVIRONMENT = "environment.json"
REPORT = "report.md"
RAW_DIR = "raw/"
DERIVED_DIR = "derived/"
LOGS_DIR = "logs/"
PLOTS_DIR = "plots/"
SUFFIX = ".tar.gz"
# commands.json format_version: which report rules made report.md. 3: criteria say pass, fail or
# not-measured (harness.analysis.verdict); 2: the report of issue 14 (criteria could say not-run);
# 1: rig-dossier 0.1.0. verify re-renders only this build's format; older ones stay signed.
FORMAT_VERSION = 3


def raw_name(step: str) -> str:
    return f"{RAW_DIR}{step}.json"


def derived_name(step: str) -> str:
    return f"{DERIVED_DIR}{step}.json"


def stderr_name(step: str) -> str:
    return f"{LOGS_DIR}{step}.stderr.txt"


def stdout_name(step: str) -> str:
    """Where a failed step's raw stdout is kept (a completed step's stdout is raw/STEP.json)."""
    return f"{LOGS_DIR}{step}.stdout.txt"


def plot_name(step: str, filename: str) -> str:
    return f"{PLOTS_DIR}{step}/{filename}"
