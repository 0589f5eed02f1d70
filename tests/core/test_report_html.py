"""The HTML report's templates: they ship inside the package and escape what the report's JSON holds."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from equisa_core.report import render_report

REPAIR = Path(__file__).parents[1] / "data" / "repair_invoicing.json"


def test_the_templates_are_package_files():
    templates = files("equisa_core.report") / "templates"
    assert {"report.html.j2", "sections.html.j2", "report.css"} <= {t.name for t in templates.iterdir()}


def test_text_from_the_report_is_escaped_not_interpreted():
    report = json.loads(REPAIR.read_text())
    report["localization"]["ranking"][0]["fqn"] = "pkg.<script>alert(1)</script>"
    report["problems"] = ["<b>a & b</b>"]
    html = render_report("repair", report, run_id='"><img src=x>', repository="<r>")
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "pkg.&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<li>&lt;b&gt;a &amp; b&lt;/b&gt;</li>" in html
    assert "<title>EQUISA repair — &lt;r&gt;</title>" in html


def test_the_diff_keeps_its_lines_and_marks_each_kind():
    report = json.loads(REPAIR.read_text())
    report["diff"] = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n same"
    html = render_report("repair", report)
    assert ('<pre class="diff">--- a/m.py\n+++ b/m.py\n<span class="hunk">@@ -1 +1 @@</span>\n'
            '<span class="del">-x = 1</span>\n<span class="add">+x = 2</span>\n same</pre>') in html


def test_a_run_that_stopped_before_its_report_gets_a_page_saying_why():
    from equisa_core.errors import CollectionError
    from equisa_core.report.failure import failure_report

    failure = failure_report("repair", CollectionError("the suite does not import: <ImportError>"))
    html = render_report("repair", json.loads(failure.model_dump_json()), run_id="r1", repository="/repos/x")
    assert '<span class="badge error">error</span>' in html
    assert "<td>6 (the suite does not import at all" in html and "<td>CollectionError</td>" in html
    assert "the suite does not import: &lt;ImportError&gt;" in html
    assert "Ranking" not in html and "Patch" not in html  # no empty sections of a report that never was
    interrupted = failure_report("localize", KeyboardInterrupt())
    assert (interrupted.status, interrupted.exit_code, interrupted.error) == ("interrupted", 130,
                                                                            "interrupted (Ctrl-C)")
    page = render_report("localize", json.loads(interrupted.model_dump_json()))
    assert '<span class="badge interrupted">interrupted</span>' in page
