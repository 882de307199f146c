"""report.md in plain words (issue 38), read as a buyer reads it: the committed H200 dossiers, clean
(h200-a1) and beside a co-tenant (h200-contended: everything at ~45% of known-good), re-made by this
build from their own recorded runs (tests/h200_remade.py: the committed ones are format 5), and a
real dossier of this machine's CPU (tests/accept_support.cpu_dossier).

In each: no `key: value` line under a criterion (evidence is sentences or small tables with units),
no internal step name where words belong (`idle-load`, `health-diff`, `M1T5` only as a reference
beside the words: in backticks or parentheses), each limitation once, no machine-local path. The
contended report shows its rates under their known-good in its verdict section, and nowhere reads
as healthy: the verdict fails on them, the stress and roofline criteria say the share beside their
rate; the clean one shows the same rates at their known-good."""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from harness import registry
from harness.bundle import layout
from harness.present.portable import local_path
from harness.run.assemble import unsigned_files
from harness.run.orchestrate import RunOptions, collect
from harness.runners.local import LocalRunner
from tests.accept_support import small_cpu_plan
from tests.bundle_support import quiet_display
from tests.h200_remade import record_of

FINAL = Path(__file__).parents[1] / "fixtures" / "h200" / "final"
# A bullet that opens with a bare lowercase key and a colon: `- plateau_gbps: ...`, `- device: cpu`,
# `- load_ran (all): pass: ...` (a sentence opens with a capital, or a GPU's or figure's name).
KEY_VALUE = re.compile(r"^\s*- [a-z][a-z0-9_]*( \([^)]*\))?: ")
INTERNAL = re.compile(r"\b(idle-load|health-diff|health-load|M1T\d)\b")
FILE = re.compile(r"\S+\.json\b")  # a member named by its file (raw/health-load.json) is a file, not a step's name
TITLES = sorted({step.title for step in registry.lab_plan()}, key=len, reverse=True)
NAMED = re.compile(r"^(?:(?:" + "|".join(map(re.escape, TITLES)) + r")(?:, )?)+: ")  # a limitation's steps
SHARED = 48  # characters a limitation may share with another before it says the same thing twice
SKIPPED = ("roofline", "precision", "allreduce", "transfer")
pytestmark = pytest.mark.timeout(900)  # the CPU dossier: a minute on an idle 2-core VM, more under load


def _report(files: dict[str, bytes]) -> str:
    return files[layout.REPORT].decode()


def cpu_report(folder: Path) -> str:
    plan = small_cpu_plan()
    record = collect(
        RunOptions(output_dir=folder, skip=SKIPPED),
        LocalRunner(),
        "tests: this machine's CPU",
        plan,
        display=quiet_display(len(plan)),
    )
    return _report(unsigned_files(record))


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return {
        "clean": _report(unsigned_files(record_of(FINAL / "h200-a1.tar.gz"))),
        "contended": _report(unsigned_files(record_of(FINAL / "h200-contended.tar.gz"))),
        "cpu": cpu_report(tmp_path_factory.mktemp("cpu")),
    }


def section(report: str, heading: str) -> str:
    """The text of the `## HEADING...` section, up to the next `## ` heading."""
    start = report.index(f"\n## {heading}")
    end = report.find("\n## ", start + 1)
    return report[start : end if end > 0 else len(report)]


def _outside_references(line: str) -> str:
    """LINE without what names an internal thing as a reference: code spans, parentheses, file names."""
    line = FILE.sub("", re.sub(r"`[^`]*`", "", line))
    while re.search(r"\([^()]*\)", line):
        line = re.sub(r"\([^()]*\)", "", line)
    return line


@pytest.mark.parametrize("which", ["clean", "contended", "cpu"])
def test_no_criterion_line_is_a_key_value_dump(reports, which):
    criteria = section(reports[which], "Criteria")
    dumps = [line for line in criteria.splitlines() if KEY_VALUE.match(line)]
    assert dumps == []
    assert "### " in criteria and "Asked (`" in criteria  # each criterion: what it judges, what is asked


@pytest.mark.parametrize("which", ["clean", "contended", "cpu"])
def test_internal_step_names_are_only_references_beside_words(reports, which):
    report = reports[which]
    headings = [line for line in report.splitlines() if line.startswith("#")]
    assert not [h for h in headings if INTERNAL.search(h)], headings
    bare = [line for line in report.splitlines() if INTERNAL.search(_outside_references(line))]
    assert bare == []
    assert "### Clocks, power and processes under load: " in report and "(`idle-load`)" in report


@pytest.mark.parametrize("which", ["clean", "contended", "cpu"])
def test_each_limitation_is_said_once(reports, which):
    items = section(reports[which], "Limitations").split("\n- ")[1:]  # each item, its wrapped lines joined
    joined = [NAMED.sub("", " ".join(item.split())) for item in items]  # what is said, without the steps named
    assert len(set(joined)) == len(joined) and all(joined)
    for i, line in enumerate(joined):
        for other in joined[:i]:
            match = SequenceMatcher(None, other, line, autojunk=False).find_longest_match(0, len(other), 0, len(line))
            assert match.size < SHARED, (other[match.a : match.a + match.size], line)


def test_the_cpu_report_says_the_nvml_cause_once(reports):
    limits = " ".join(section(reports["cpu"], "Limitations").split())
    assert limits.count("NVML Shared Library Not Found") == 1 and "(the cause said above)" in limits


@pytest.mark.parametrize("which", ["clean", "contended", "cpu"])
def test_nothing_machine_local(reports, which):
    report = reports[which]
    assert not local_path(report)
    for local in ("/root/", "/home/", "/work/", "/tmp/", "/opt/torch", "site-packages", ".gpu/"):
        assert local not in report, local
    assert "# Rig Dossier: vm (first GPU's UUID ending " in report or which == "cpu"


def test_the_contended_report_shows_its_rates_under_known_good_in_the_verdict(reports):
    verdict = section(reports["contended"], "Verdict")
    assert "## Verdict: FAIL" in verdict
    assert "Rates against a known-good unit (`known-good`): 7 of 10 rates are under the share" in " ".join(
        verdict.split()
    )
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
        for line in verdict.splitlines()
        if line.startswith("| ") and not line.startswith(("| rate", "| ---"))
    }
    for rate, share in (
        ("memory bandwidth, copy plateau", "44.6%"),
        ("bf16 GEMM burst", "45.7%"),
        ("bf16 GEMM sustained (stress)", "45.8%"),
    ):
        assert rows[rate][2] == share and rows[rate][-1] == "FAIL", (rate, rows[rate])
    assert rows["host-to-device copy, pinned"][-1] == "PASS"  # the link is not what the co-tenant shares


def test_the_contended_report_reads_as_healthy_nowhere(reports):
    report = reports["contended"]
    criteria = section(report, "Criteria")
    stress = criteria.split("### Stress", 1)[1].split("\n### ", 1)[0]
    roofline = criteria.split("### GEMM roofline", 1)[1].split("\n### ", 1)[0]
    assert "Against the known-good: bf16 GEMM sustained (stress) 45.8% of 676.9 TFLOPS, FAIL" in " ".join(
        stress.split()
    )
    assert "bf16 GEMM burst 45.7% of 765.1 TFLOPS, FAIL" in " ".join(roofline.split())
    verdict = section(report, "Verdict")
    assert "Rates against a known-good unit" in group(verdict, "Failed")
    assert "Rates against a known-good unit" not in group(verdict, "Passed")


def group(verdict: str, heading: str) -> str:
    """The lines of one group of the verdict section (`**Failed:**` ... up to the next group)."""
    return verdict.split(f"**{heading}:**", 1)[1].split("\n**", 1)[0] if f"**{heading}:**" in verdict else ""


def test_the_clean_report_shows_the_same_rates_at_their_known_good(reports):
    """h200-a1 ran alone on its GPU: every rate at its known-good. (Its roofline criterion fails on square-512,
    which probe contract 4 could not explain: tests/present/test_verdict_block.py; the rates are not why.)"""
    verdict = section(reports["clean"], "Verdict")
    rows = [line for line in verdict.splitlines() if line.startswith("| ") and not line.startswith(("| rate", "| ---"))]
    assert len(rows) == 10 and all(line.rstrip(" |").endswith("PASS") for line in rows), rows
    assert "Rates against a known-good unit" in group(verdict, "Passed")
    assert "known-good" not in group(verdict, "Failed")
