"""Validation's runs on the original code for one target (``tasks.validation_checks.recorded_calls``,
``tasks.target_checks.prepare_target``): the localization's recording reused, only the tests it
lacks recorded again; real Discovery and real sandboxed runs."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from equisa_core.common.models import TestResult
from flows.discovery import discovery
from tasks.discovery_suite import DiscoveryResult
from tasks.localization_steps import RecordedTests
from tasks.parameters import DiscoveryParameters
from tasks.target_checks import prepare_target
from tasks.validation_checks import ValidationContext, recorded_calls
from tests.flows.test_differential_guard import shipping_repo

TARGET = "shipping.shipping"
MARK = 99.0


def _context(found: DiscoveryResult, reused: RecordedTests | None) -> ValidationContext:
    return ValidationContext(found=found, nodes={n.fqn: n for n in found.trace.nodes},
                             localization_recorded=reused)


@flow(name="target-checks-recording")
def _recordings(found: DiscoveryResult) -> dict[str, tuple[TestResult, ...]]:
    fresh = recorded_calls(TARGET, _context(found, None))
    assert fresh is not None and len(fresh) >= 3
    # the localization's results, marked (a duration no run gives) to tell them from new ones
    marked = tuple(t.model_copy(update={"duration": MARK}) for t in fresh)
    whole = RecordedTests(functions=frozenset({TARGET, "shipping.other"}), tests=marked[::-1])
    part = RecordedTests(functions=frozenset({TARGET}), tests=marked[:1])
    elsewhere = RecordedTests(functions=frozenset({"shipping.other"}), tests=marked)
    got = {"fresh": fresh}
    for name, reused in (("whole", whole), ("part", part), ("elsewhere", elsewhere)):
        ctx = _context(found, reused)
        got[name] = recorded_calls(TARGET, ctx) or ()
        prepare_target(TARGET, ctx)
        assert ctx.carved[TARGET] and ctx.differential[TARGET] is not None, "the checks were prepared"
    return got


def test_the_localization_s_recording_is_reused_and_only_the_tests_it_lacks_run_again(
        tmp_path: Path, prefect_api_url, monkeypatch):
    repo = shipping_repo(tmp_path, monkeypatch)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        found = discovery(DiscoveryParameters(path=str(repo), llm=False, testgen=False))
        got = _recordings(found)
    fresh = got["fresh"]
    ids = [t.test_id for t in fresh]
    assert [t.duration for t in got["whole"]] == [MARK] * len(fresh), "reused whole: no run"
    assert [t.test_id for t in got["whole"]] == ids, "in the suite's order again"
    part = [t.duration for t in got["part"]]
    assert part[0] == MARK and MARK not in part[1:], "reused in part: one kept, the rest recorded"
    assert [t.test_id for t in got["part"]] == ids
    assert [t.calls for t in got["part"]] == [t.calls for t in fresh], "with the same calls"
    assert MARK not in [t.duration for t in got["elsewhere"]], "another function's recording is not used"
    assert [t.calls for t in got["elsewhere"]] == [t.calls for t in fresh]
