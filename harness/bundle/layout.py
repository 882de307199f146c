"""The names inside a bundle."""

from __future__ import annotations

ATTESTATION = "attestation.intoto.json"
COMMANDS = "commands.json"
ENVIRONMENT = "environment.json"
CONTENTION = "host-contention.json"  # format 6 on: what else the host did while each step ran
REPORT = "report.md"
RAW_DIR = "raw/"
DERIVED_DIR = "derived/"
LOGS_DIR = "logs/"
PLOTS_DIR = "plots/"
SCHEMAS_DIR = "schemas/"
TABLES_DIR = "tables/"
SUFFIX = ".tar.gz"
# commands.json format_version: which report rules made report.md. 6: report.md in plain words (issue
# 38): the verdict in sentences with every headline rate beside its SKU's known-good (a report
# criterion, `known-good`: acceptance's rate criteria against the catalogue's profile), criteria
# evidence as sentences with units, steps named by what they measured, each limitation once, nothing
# machine-local (paths as the reader has them, the host by hostname and first GPU); the driver's own
# recovery action in each health.json device and the recommended action of each failed criterion and
# of the run (issue 39); host-contention.json, the host read while each probe step ran (other
# processes' CPU, steal, load, pressure stalls, free memory), its summary in report.md, named beside a
# failing criterion, and a bandwidth repeat spread over 5% on a busy host INCOMPLETE (disturbed), not
# FAIL; the bandwidth probe measures again with longer repeats when its first ones disagree (issue 35);
# 5: criteria say pass, warn, fail,
# incomplete or skip (harness.analysis.verdict, issues 24 and 26) and name the module paths of the
# per-probe folders (the health-diff function is harness.analysis.health.diff:diff); the stress
# probe's reference digest, the precision step's output digests, a retested step's earlier attempts
# in commands.json and logs/, named in report.md (issue 24); the roofline's dtypes in one step
# (dtype_checks inside raw/roofline.json, no roofline-DTYPE steps), its shapes timed in windows with a
# burst best over fixed shapes, and the run-to-run repeatability the catalogue states for the SKU
# recorded in commands.json and rendered in the report (issue 30); 4: the schemas the documents
# use are members (schemas/), each probe's table is a member (tables/STEP.md) that report.md links,
# commands shown short and the environment once (issue 18); 3: criteria say pass, fail or
# not-measured (harness.analysis.verdict); 2: the report of issue 14 (criteria could say not-run);
# 1: rig-dossier 0.1.0. verify re-renders only this build's format; older ones stay signed.
FORMAT_VERSION = 6


def raw_name(step: str) -> str:
    return f"{RAW_DIR}{step}.json"


def derived_name(step: str) -> str:
    return f"{DERIVED_DIR}{step}.json"


def stderr_name(step: str) -> str:
    return f"{LOGS_DIR}{step}.stderr.txt"


def stdout_name(step: str) -> str:
    """Where a failed step's raw stdout is kept (a completed step's stdout is raw/STEP.json)."""
    return f"{LOGS_DIR}{step}.stdout.txt"


def attempt_stderr_name(step: str, attempt: int) -> str:
    """An earlier attempt's stderr (dossier run --retest); the last attempt's is stderr_name's."""
    return f"{LOGS_DIR}{step}.attempt{attempt}.stderr.txt"


def attempt_stdout_name(step: str, attempt: int) -> str:
    return f"{LOGS_DIR}{step}.attempt{attempt}.stdout.txt"


def plot_name(step: str, filename: str) -> str:
    return f"{PLOTS_DIR}{step}/{filename}"


def schema_member(schema: str) -> str:
    """Where schemas/SCHEMA.schema.json lies inside a bundle (format 4 on): the same relative name."""
    return f"{SCHEMAS_DIR}{schema}.schema.json"


def table_name(step: str) -> str:
    return f"{TABLES_DIR}{step}.md"
