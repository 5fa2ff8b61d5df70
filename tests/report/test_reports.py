import json
import re
import xml.etree.ElementTree as ET

import pytest

from replaygate.gate import GateError, Policy, gate_runs
from replaygate.report import load_report, render_html, render_junit, render_markdown, write_reports

XSS = "<script>alert(1)</script>"


@pytest.fixture
def report(f):
    base = f.run(f.BASE, run_id="base", must_pass=[0])
    head = f.run(f.HEAD, run_id="head", must_pass=[0], answer=f"Sure! {XSS} refund granted", errors={11: 1})
    return gate_runs(Policy(allow_errors=True, error_budget=0.1), base, head)


def test_html_is_self_contained_and_escapes_model_output(report) -> None:
    html = render_html(report)
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html.lower()
    assert "src=" not in html and "href=" not in html and "@import" not in html
    assert html.count("<svg") == 4  # suite delta, categories, guardrails, scenarios
    assert "block" in html and "s01" in html


def test_html_plots_scenarios_with_intervals_and_the_delta_against_the_tolerance(report) -> None:
    html = render_html(report)
    c = report.comparison
    scored = sum(1 for s in c.scenarios for side in (s.base, s.head) if side.scored)
    assert html.count('class="pt base"') + html.count('class="pt head"') == scored
    assert html.count('class="pt delta"') == 1 + len(c.categories)  # overall and each category
    # the tolerance line of the overall row sits at minus the policy's 5 points
    assert html.count('class="tolerance"') == 1 + len(c.categories)
    assert "tolerance: a drop of at most 5 pp" in html
    assert "Δ " + f"{c.overall.delta * 100:+.1f} pp" in html  # rates change in percentage points


def test_junit_parses_with_one_testcase_per_scenario(report) -> None:
    root = ET.fromstring(render_junit(report).encode("utf-8"))
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [f"s{i:02d}" for i in range(1, 13)]
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["s01", "s02", "s03"]
    assert suite.get("failures") == "3" and suite.get("tests") == "12"
    assert "must-pass" in (cases[0].find("failure").get("message") or "")


def test_markdown_has_the_decision_and_the_newly_failing_list(report) -> None:
    md = render_markdown(report)
    assert "**block**" in md
    section = md.split("### Newly failing", 1)[1].split("###", 1)[0]
    for sid in ("s01", "s02", "s03"):
        assert f"`{sid}`" in section
    assert "(must-pass)" in section
    assert "rule-1" in md and "rule-2" in md
    assert XSS not in md
    assert len(md) < 60_000


def test_json_loads_back_and_is_versioned(report, tmp_path) -> None:
    paths = write_reports(report, tmp_path / "out", ["md", "html", "junit"])
    assert set(paths) == {"json", "md", "html", "junit"}
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["format_version"] == 1 and data["comparison"]["format_version"] == 1
    again = load_report(tmp_path / "out")
    assert again == report
    assert again.rule1_fired and again.newly_failing == ["s01", "s02", "s03"]
    assert not list((tmp_path / "out").glob(".*"))  # no temporary files left behind


def test_bad_reports_are_refused(tmp_path, report) -> None:
    with pytest.raises(GateError, match="no such report"):
        load_report(tmp_path / "none.json")
    bad = tmp_path / "old.json"
    bad.write_text(json.dumps({"format_version": 99}), encoding="utf-8")
    with pytest.raises(GateError, match="format_version 99"):
        load_report(bad)
    with pytest.raises(GateError, match="unknown report format"):
        write_reports(report, tmp_path / "x", ["pdf"])


def test_markdown_of_a_large_regression_still_fits_a_comment(f) -> None:
    base = f.run([5] * 150, run_id="b", tags=lambda i: {"area": f"a{i % 50}"})
    head = f.run([0] * 130 + [5] * 20, run_id="h", tags=lambda i: {"area": f"a{i % 50}"}, answer="x" * 2000)
    report = gate_runs(Policy(n_resamples=500), base, head)
    assert len(report.newly_failing) == 130
    md = render_markdown(report)
    assert len(md) <= 60_000
    assert "**block**" in md and "and 30 more" in md


def test_html_explains_inconclusive_and_keeps_long_labels_clear_of_the_plots(f) -> None:
    long_tag = "request_type=" + "x" * 40
    base = f.run([5] * 12, run_id="base", tags=lambda i: {"request_type": "x" * 40} if i == 0 else {})
    head = f.run([5] * 12, run_id="head", tags=lambda i: {"request_type": "x" * 40} if i == 0 else {})
    html = render_html(gate_runs(Policy(), base, head))
    assert "even 5/5 only shows a rate above 0.57" in html  # Wilson lower bound of 5/5 at 95%
    left = re.search(r'<text x="(\d+)" y="14" font-size="11">0%</text>', html)
    shown = re.search(r'font-size="12">(request_type=x+[^<]*)</text>', html)
    assert left is not None and shown is not None and shown.group(1).startswith(long_tag[:40])
    assert int(left.group(1)) > len(shown.group(1)) * 12 * 0.55  # the plot starts after the label


def test_every_report_lists_worse_not_confirmed_and_flaky(f, tmp_path) -> None:
    base = f.run([5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 3, 0], run_id="b")
    base_2 = f.run([5, 5, 5, 5, 5, 5, 5, 5, 1, 4, 3, 0], run_id="b2")
    head = f.run([5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 2, 0], run_id="h")
    report = gate_runs(Policy(tolerance={"overall": 0.1}), base, head, base_2)
    assert report.outcome == "pass" and report.worse_unconfirmed == ["s11"] and report.flaky == ["s09"]
    md = render_markdown(report)
    worse = md.index("### Worse, not confirmed at k=5")
    assert "`s11`: inconclusive 3/5 → fail 2/5" in md[worse:]
    flaky = md.index("### Flaky (the two baseline runs disagree)")
    assert "1 of 12 scenarios are flaky, carrying 100% of the disagreement" in md[flaky:]
    assert "quarantine ID --owner NAME --until YYYY-MM-DD" in md[flaky:]
    assert "`s09`: the two baseline runs disagree: inconclusive vs fail (5/5 vs 1/5)" in md
    assert "threshold 0.8 needs at least 16 repeats to be confirmed at 95%" in md  # can't tell per scenario
    html = render_html(report)
    assert "Worse, not confirmed at k=5</b> (no signature needed): s11" in html
    assert "disagree): s09 (1; 100% of their disagreement; quarantine each" in html
    again = load_report(write_reports(report, tmp_path, ["json"])["json"])
    assert (again.worse_unconfirmed, again.flaky, again.flaky_noise_share) == (["s11"], ["s09"], 1.0)
    # without a second baseline the flaky list says it is unknown, and an empty list says none
    same = f.run([5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 3, 0], run_id="b-again")
    quiet = render_markdown(gate_runs(Policy(), base, same))
    assert "- unknown: no second baseline run" in quiet and "- none" in quiet
