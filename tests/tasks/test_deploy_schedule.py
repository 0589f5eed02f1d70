"""The nightly schedule of ``deployments/prefect.yaml``: literal defaults a plain ``prefect deploy`` can use,
the same as ``equisa deploy``'s settings, which override them in a copy of the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from equisa_core.common.options import DeployOptions
from equisa_core.errors import DeployError
from cli.deployment_setup import NIGHTLY_DEPLOYMENT, deployment_names, scheduled_spec, spec_schedules

SPEC = Path(__file__).resolve().parents[2] / "deployments" / "prefect.yaml"


def _nightly(data: dict) -> dict:
    return next(d for d in data["deployments"] if d["name"] == NIGHTLY_DEPLOYMENT)


def test_the_file_schedule_is_literal_and_equal_to_the_settings_defaults():
    defaults = DeployOptions()
    assert spec_schedules(SPEC) == [(defaults.schedule_cron, defaults.schedule_timezone)]
    assert "{{" not in yaml.safe_dump(_nightly(yaml.safe_load(SPEC.read_text()))["schedules"])


def test_the_settings_override_the_schedule_in_a_copy_and_leave_the_rest(tmp_path):
    before = SPEC.read_text()
    options = DeployOptions(schedule_cron="30 3 * * 1-5", schedule_timezone="America/New_York")
    copy = tmp_path / "prefect.yaml"
    copy.write_text(scheduled_spec(SPEC, options))

    assert SPEC.read_text() == before  # the file itself is untouched
    assert spec_schedules(copy) == [("30 3 * * 1-5", "America/New_York")]
    original, rewritten = yaml.safe_load(before), yaml.safe_load(copy.read_text())
    schedule = _nightly(rewritten)["schedules"][0]
    assert schedule["active"] is True
    assert schedule == {**_nightly(original)["schedules"][0], "cron": "30 3 * * 1-5",
                        "timezone": "America/New_York"}
    for data in (original, rewritten):  # only the schedule differs
        _nightly(data).pop("schedules")
    assert rewritten == original
    assert deployment_names(copy) == deployment_names(SPEC)


def test_the_defaults_give_back_the_file_schedule(tmp_path):
    copy = tmp_path / "prefect.yaml"
    copy.write_text(scheduled_spec(SPEC, DeployOptions()))
    assert yaml.safe_load(copy.read_text()) == yaml.safe_load(SPEC.read_text())


def test_a_file_without_the_nightly_schedule_is_refused(tmp_path):
    spec = tmp_path / "prefect.yaml"
    spec.write_text("name: x\ndeployments:\n  - name: repair-one\n    entrypoint: flows/repository.py:f\n")
    with pytest.raises(DeployError, match="no cron schedule"):
        scheduled_spec(spec, DeployOptions())
