"""Branch coverage of one file inside the sandbox: a pytest plugin (stdlib and coverage.py only).

``tasks/testgen/analysis.py`` writes this file into the run's repository copy as ``equisa_testgen_cov.py``
and loads it with ``PYTEST_PLUGINS=equisa_testgen_cov`` (pytest imports it while it starts, before
any conftest, so module-level lines of the target count). It measures, with coverage.py, branch
coverage of the file named by ``EQUISA_MEASURED_FILE`` (relative to the working directory, the
repository copy), with one dynamic context per test (its node id), and at the end appends one
record to the probe's output file (``--equisa-out``), the only file the host reads back::

    {"kind": "testgen-coverage", "report": {file: <coverage.py JSON report parts, contexts included>}}

or ``{"kind": "testgen-coverage", "error": "..."}`` when coverage.py cannot be imported. When the
suite's interpreter lacks coverage.py, ``EQUISA_COVERAGE_PATH`` (EQUISA's own site-packages,
read-only in the sandbox) is appended to ``sys.path``, last, so the suite's own packages win.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

import pytest


def _import_coverage() -> tuple[Any, str | None]:
    """coverage.py (the suite's, else EQUISA's), or None and why it cannot be imported."""
    try:
        import coverage

        return coverage, None
    except ImportError:  # the suite's interpreter has none: borrow EQUISA's
        extra = os.environ.get("EQUISA_COVERAGE_PATH")
        if extra:
            sys.path.append(extra)
    try:
        import coverage

        return coverage, None
    except ImportError as error:
        return None, f"coverage.py cannot be imported by {sys.executable}: {error}"


coverage, _IMPORT_ERROR = _import_coverage()

#: The per-file parts of coverage.py's JSON report that the host reads.
_KEPT = ("summary", "executed_lines", "missing_lines", "executed_branches", "missing_branches", "contexts")
_TARGET = os.path.abspath(os.environ.get("EQUISA_MEASURED_FILE", ""))
_COV = None
if coverage is not None and os.environ.get("EQUISA_MEASURED_FILE"):
    _COV = coverage.Coverage(branch=True, include=[_TARGET], data_file=None, config_file=False)
    _COV.set_option("json:show_contexts", True)
    _COV.start()


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    if _COV is not None:
        _COV.switch_context(nodeid)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: Any) -> None:
    try:
        out = config.getoption("--equisa-out")
    except ValueError:
        out = None
    if not out:
        return
    record: dict[str, Any] = {"kind": "testgen-coverage"}
    if _COV is None:
        record["error"] = _IMPORT_ERROR or "no coverage target was given"
    else:
        _COV.stop()
        handle, path = tempfile.mkstemp(suffix=".json")
        os.close(handle)
        try:
            _COV.json_report(outfile=path, ignore_errors=True, show_contexts=True)
            with open(path, encoding="utf-8") as report:
                files = json.load(report).get("files", {})
            record["report"] = {name: {key: data.get(key) for key in _KEPT} for name, data in files.items()}
        except Exception as error:  # no data (the target never imported) or a report failure
            record["report"] = None
            record["error"] = f"{type(error).__name__}: {error}"
        finally:
            if os.path.exists(path):
                os.unlink(path)
    with open(out, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(record) + "\n")
