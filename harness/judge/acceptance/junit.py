"""The acceptance as a JUnit XML report: one testcase per criterion, valid against the common
junit-10.xsd (the Jenkins xunit plugin's schema; tests/junit/ holds a copy, tests check it).

A failed criterion is a <failure> (message: why; text: what was measured against what), a
required criterion not measured (INCOMPLETE) an <error>, a criterion skipped (not required or not
applicable) <skipped> with why; the verdict words themselves (pass, warn, fail, incomplete, skip)
are the `result` and each CRITERION.status property. That XSD allows no <properties> inside a
<testcase> and no `skipped` count on <testsuites>, so each criterion's status, measured value,
threshold and evidence are its <system-out> (what CI dashboards show under the test) and, for
tools, properties of the <testsuite> named CRITERION.KEY. Built with xml.etree.ElementTree
(which writes the markup characters as references), every character XML 1.0 forbids (a bundle's
text may hold any: a process or host name) shown as an escape (harness.escape.xml_text), so the
document is always well-formed; deterministic bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.analysis.verdict import Verdict
from harness.escape import xml_text
from harness.judge.acceptance.outcome import Acceptance
from harness.judge.engine import Result


def _text(result: Result) -> str:
    lines = [
        result.title,
        f"status: {result.status}{' (required by the profile)' if result.required else ''}",
        f"measured: {result.measured.text if result.measured else 'not measured'}",
        f"threshold: {result.threshold.text if result.threshold else 'none stated'}",
        f"evidence: {result.evidence}",
        f"why: {result.why}",
    ]
    if result.status == Verdict.FAIL:
        action = result.recommendation
        lines.append(f"action: {action.action} ({action.rule}): {action.why}")
    return "\n".join(lines)


def _criterion_properties(result: Result) -> list[tuple[str, str]]:
    """A criterion's figures as testsuite properties, each name prefixed with the criterion's."""
    pairs = (
        ("status", str(result.status)),
        ("required", str(result.required).lower()),
        ("measured", result.measured.text if result.measured else ""),
        ("measured_unit", result.measured.unit if result.measured else ""),
        ("threshold", result.threshold.text if result.threshold else ""),
        ("evidence", result.evidence),
    )
    return [(f"{result.name}.{key}", value) for key, value in pairs]


def _testcase(suite: ET.Element, result: Result, classname: str) -> None:
    case = ET.SubElement(suite, "testcase", {"name": result.name, "classname": classname, "time": "0"})
    if result.status == Verdict.FAIL:
        ET.SubElement(case, "failure", {"message": result.why, "type": "acceptance"}).text = _text(result)
    elif result.status == Verdict.INCOMPLETE:  # required, not measured: the run could not judge it
        ET.SubElement(case, "error", {"message": result.why, "type": "incomplete"}).text = _text(result)
    elif result.status == Verdict.SKIP:
        ET.SubElement(case, "skipped", {"message": result.why})
    ET.SubElement(case, "system-out").text = _text(result)


def junit_xml(acceptance: Acceptance) -> bytes:
    """<testsuites><testsuite name="accept SKU"> with tests/failures/errors counts (and skipped on
    the testsuite, the one element junit-10.xsd gives that count)."""
    results = acceptance.results
    counts = {
        "tests": str(len(results)),
        "failures": str(sum(r.status == Verdict.FAIL for r in results)),
        "errors": str(sum(r.status == Verdict.INCOMPLETE for r in results)),
    }
    skipped = str(sum(r.status == Verdict.SKIP for r in results))
    root = ET.Element("testsuites", {"name": "dossier accept", **counts, "time": "0"})
    suite = ET.SubElement(
        root, "testsuite", {"name": f"accept {acceptance.profile.sku_id}", **counts, "skipped": skipped, "time": "0"}
    )
    properties = ET.SubElement(suite, "properties")
    pairs = [
        ("bundle", acceptance.bundle.name),
        ("bundle_sha256", acceptance.bundle.sha256),
        ("profile", acceptance.profile.sku_id),
        ("result", acceptance.result),
    ]
    for result in results:
        pairs += _criterion_properties(result)
    for key, value in pairs:
        ET.SubElement(properties, "property", {"name": key, "value": value})
    classname = f"accept.{acceptance.profile.sku_id}"
    for result in results:
        _testcase(suite, result, classname)
    well_formed(root)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def well_formed(root: ET.Element) -> None:
    """Every text and attribute value under ROOT with the characters XML 1.0 forbids shown as escapes."""
    for element in root.iter():
        if element.text:
            element.text = xml_text(element.text)
        for name, value in element.attrib.items():
            element.attrib[name] = xml_text(value)
