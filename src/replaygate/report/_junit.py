"""JUnit XML: one testcase per scenario; a newly failing scenario is a failure, a data problem an error."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from replaygate.gate import GateReport

__all__ = ["render_junit"]


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")  # the control characters but tab, LF and CR


def _clean(text: str) -> str:
    """Drop characters XML 1.0 cannot carry (model output may hold any)."""
    return _NOT_XML.sub("", text)


def render_junit(report: GateReport) -> str:
    """Render the report as JUnit XML (CI systems show newly failing scenarios as failed tests)."""
    c = report.comparison
    suite = ET.Element("testsuite", name=f"replaygate gate {report.report_id}")
    failures = errors = skipped = 0
    for s in c.scenarios:
        classname = "replaygate." + (s.tags.get("dimension") or "suite")
        case = ET.SubElement(suite, "testcase", name=s.id, classname=_clean(classname), time="0")
        counts = (
            f"baseline {s.base.passed}/{s.base.scored} (+{s.base.errors} errors), "
            f"candidate {s.head.passed}/{s.head.scored} (+{s.head.errors} errors)"
        )
        if s.problems:
            errors += 1
            el = ET.SubElement(case, "error", message=_clean("; ".join(s.problems)), type="data")
            el.text = _clean(counts)
        elif not s.counts:
            skipped += 1
            ET.SubElement(case, "skipped", message=_clean(f"does not count ({s.change}): {counts}"))
        elif s.change == "newly_failing":
            failures += 1
            kind = "must-pass scenario newly fails" if s.must_pass else "newly failing"
            el = ET.SubElement(case, "failure", message=_clean(f"{kind}: {counts}"), type="newly_failing")
            el.text = _clean("\n".join([*s.head.failure_details, *s.head.error_messages]))
        out = ET.SubElement(case, "system-out")
        out.text = _clean(f"{s.change.replace('_', ' ')}: {counts}; Fisher p={s.fisher_p}")
    suite.set("tests", str(len(c.scenarios)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("outcome", report.outcome),
        ("headline", report.headline),
        ("policy_hash", report.policy_hash),
    ):
        ET.SubElement(props, "property", name=name, value=_clean(value))
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
