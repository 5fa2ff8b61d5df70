"""replaygate.report: gate reports as JSON (versioned), Markdown (a PR comment), HTML and JUnit XML.

Usage::

    from replaygate.report import write_reports, load_report
    paths = write_reports(report, "reports/", formats=("md", "html", "json", "junit"))
    report = load_report("reports/report.json")

HTML is self-contained (inline CSS and SVG plots, no script, no external asset) and escapes every model
output and scenario text; Markdown escapes table cells and fits a pull-request comment.
"""

from replaygate.report._html import group_tolerances, render_html
from replaygate.report._io import (
    FILE_NAMES,
    FORMATS,
    atomic_write,
    load_report,
    render_json,
    report_path,
    write_reports,
)
from replaygate.report._junit import render_junit
from replaygate.report._markdown import render_comparison_markdown, render_markdown
from replaygate.report._svg import scenario_interval_chart, suite_delta_chart

__all__ = [
    "FILE_NAMES",
    "FORMATS",
    "atomic_write",
    "group_tolerances",
    "load_report",
    "render_comparison_markdown",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "report_path",
    "scenario_interval_chart",
    "suite_delta_chart",
    "write_reports",
]
