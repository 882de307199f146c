"""The acceptance as a JUnit XML report: one testcase per criterion.

A failed criterion is a <failure>, a criterion not measured is <skipped> with why; the measured
value, threshold and evidence go in the testcase's properties and system-out, so CI dashboards
show them. Built with xml.etree.ElementTree (escaping handled there); deterministic bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.analysis.verdict import Verdict
from harness.judge.acceptance.outcome import Acceptance
from harness.judge.engine import Result


def _text(result: Result) -> str:
    lines = [result.title,
             f"measured: {result.measured.text if result.measured else 'not measured'}",
             f"threshold: {result.threshold.text if result.threshold else 'none stated'}",
             f"evidence: {result.evidence}", f"why: {result.why}"]
    return "\n".join(lines)


def _testcase(suite: ET.Element, result: Result, classname: str) -> None:
    case = ET.SubElement(suite, "testcase", {"name": result.name, "classname": classname, "time": "0"})
    properties = ET.SubElement(case, "properties")
    for key, value in (("status", result.status), ("required", str(result.required).lower()),
                       ("measured", result.measured.text if result.measured else ""),
                       ("measured_unit", result.measured.unit if result.measured else ""),
                       ("threshold", result.threshold.text if result.threshold else ""),
                       ("evidence", result.evidence)):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    if result.status == Verdict.FAIL:
        ET.SubElement(case, "failure", {"message": result.why, "type": "acceptance"}).text = _text(result)
    elif result.status == Verdict.NOT_MEASURED:
        ET.SubElement(case, "skipped", {"message": result.why})
    ET.SubElement(case, "system-out").text = _text(result)


def junit_xml(acceptance: Acceptance) -> bytes:
    """<testsuites><testsuite name="accept SKU"> with tests/failures/skipped counts."""
    results = acceptance.results
    counts = {"tests": str(len(results)), "failures": str(sum(r.status == Verdict.FAIL for r in results)),
              "errors": "0", "skipped": str(sum(r.status == Verdict.NOT_MEASURED for r in results)), "time": "0"}
    root = ET.Element("testsuites", {"name": "dossier accept", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": f"accept {acceptance.profile.sku_id}", **counts})
    properties = ET.SubElement(suite, "properties")
    for key, value in (("bundle", acceptance.bundle.name), ("bundle_sha256", acceptance.bundle.sha256),
                       ("profile", acceptance.profile.sku_id), ("result", acceptance.result)):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    classname = f"accept.{acceptance.profile.sku_id}"
    for result in results:
        _testcase(suite, result, classname)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
