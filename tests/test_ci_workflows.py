"""The example workflow (``deployments/ci/github-actions.yml``) and the composite action (``action.yml``),
parsed and their shell steps run with bash as GitHub Actions would (``GITHUB_*`` variables, the step's
``env`` with its expressions filled in), on a fixture repository whose real pytest run writes the JUnit
report: tests in classes, in nested classes and in a package get their true node ids, which pytest then
collects; the trigger steps post their event (``--push --open-pr``) to an events API on 127.0.0.1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.flows import test_trigger_command as trigger_tests

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "deployments" / "ci" / "github-actions.yml"
ACTION = ROOT / "action.yml"
events_api = trigger_tests.events_api  # the Prefect events API on 127.0.0.1 (a fixture)

EXPECTED = {
    "tests/test_cart.py::TestCart::test_total",
    "tests/test_cart.py::TestCart::TestEmpty::test_empty_total",
    "tests/test_cart.py::test_module_level",
    "tests/unit/test_price.py::TestPrice::test_round[2]",
}


@pytest.fixture(scope="module", params=["xunit2", "xunit1"])
def fixture_repo(request, tmp_path_factory) -> Path:
    """A repository with failing tests in classes, a nested class, a package and at module level, and
    the JUnit report of its real pytest run (xunit2: pytest's default, no file attribute; xunit1: with)."""
    repo = tmp_path_factory.mktemp(f"shop-{request.param}")
    (repo / "tests" / "unit").mkdir(parents=True)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "unit" / "__init__.py").write_text("")
    (repo / "tests" / "test_cart.py").write_text(
        "class TestCart:\n    def test_total(self):\n        assert 1 == 2\n\n"
        "    def test_passes(self):\n        assert True\n\n"
        "    class TestEmpty:\n        def test_empty_total(self):\n            assert [] == [0]\n\n\n"
        "def test_module_level():\n    raise ValueError('boom')\n")
    (repo / "tests" / "unit" / "test_price.py").write_text(
        "import pytest\n\n\nclass TestPrice:\n    @pytest.mark.parametrize('n', [1, 2])\n"
        "    def test_round(self, n):\n        assert n == 1\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--junitxml=junit.xml", "-o", f"junit_family={request.param}"], cwd=repo,
                          capture_output=True, text=True)
    assert done.returncode == 1 and (repo / "junit.xml").is_file(), done.stdout[-2000:]
    return repo


def _step(steps: list[dict[str, Any]], step_id: str | None = None, name_start: str = "") -> dict[str, Any]:
    return next(s for s in steps if (step_id and s.get("id") == step_id)
                or (name_start and str(s.get("name", "")).startswith(name_start)))


def _expand(value: str, context: dict[str, str]) -> str:
    """The step's ``${{ expression }}`` filled in from ``context`` (unknown ones are empty, as in Actions)."""
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: context.get(m.group(1), ""), str(value))


def _run_step(step: dict[str, Any], cwd: Path, tmp_path: Path, context: dict[str, str],
              env: dict[str, str] | None = None) -> dict[str, str]:
    """Run a step's ``run`` as GitHub Actions does (``bash --noprofile --norc -eo pipefail``); its outputs."""
    output = tmp_path / f"output-{len(list(tmp_path.glob('output-*')))}"
    output.touch()
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("PREFECT_", "GITHUB_", "GITLAB_", "CI_"))}
    variables = {**base, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                 "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/shop", "GITHUB_SHA": "f00dcafe",
                 "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "77",
                 "GITHUB_OUTPUT": str(output),
                 "GITHUB_WORKSPACE": str(cwd), "RUNNER_TEMP": str(tmp_path),
                 **{k: _expand(v, context) for k, v in (step.get("env") or {}).items()}, **(env or {})}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd,
                          env=variables, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)


def _collected(repo: Path, ids: list[str]) -> set[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *ids], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_the_example_workflow_finds_the_node_ids_and_triggers_with_push_and_pull_request(
        fixture_repo, tmp_path, events_api):
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["tests"]["steps"]
    text = WORKFLOW.read_text()
    assert "YOUR-ORG" not in text and 'replace(".", "/")' not in text
    install = _step(steps, name_start="Install EQUISA")["run"]
    assert 'uv tool install --quiet "equisa @ git+${EQUISA_GIT_URL}@${EQUISA_GIT_REF:-main}"' in install

    outputs = _run_step(_step(steps, "failed"), fixture_repo, tmp_path, {})
    ids = outputs["tests"].split()
    assert set(ids) == EXPECTED and len(ids) == len(EXPECTED)
    assert _collected(fixture_repo, ids) == EXPECTED, "pytest runs exactly the failing tests by these ids"

    api, handler = events_api
    handler.expected = "Bearer pnu_key"
    trigger = _step(steps, name_start="Ask EQUISA")
    _run_step(trigger, fixture_repo, tmp_path, {"steps.failed.outputs.tests": outputs["tests"]},
              env={"PREFECT_API_URL": api, "PREFECT_API_KEY": "pnu_key"})
    ((_, (event,)),) = handler.received
    payload = event["payload"]
    assert set(payload["failing_tests"]) == EXPECTED
    assert (payload["repository"], payload["ref"]) == ("https://github.com/acme/shop.git", "f00dcafe")
    assert payload["publish"]["push"] and payload["publish"]["open_pr"]


def test_the_action_installs_from_its_own_path_and_runs_its_steps(fixture_repo, tmp_path, events_api):
    action = yaml.safe_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    assert {"command", "path", "tests", "python", "push", "open-pr", "args"} <= set(action["inputs"])
    steps = action["runs"]["steps"]
    install = steps[0]
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert 'uv tool install --quiet --force "$ACTION_PATH"' in install["run"]
    assert all(step.get("shell") == "bash" for step in steps if "run" in step)

    inputs = {f"inputs.{name}": str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    context = {**inputs, "inputs.junit": str(fixture_repo / "junit.xml"), "inputs.path": str(fixture_repo),
               "github.action_path": str(ROOT)}
    outputs = _run_step(_step(steps, "failed"), fixture_repo, tmp_path, context)
    assert set(outputs["tests"].split()) == EXPECTED

    api, handler = events_api
    handler.expected = "Bearer pnu_key"
    context.update({"inputs.command": "trigger", "inputs.push": "true", "inputs.open-pr": "true",
                    "inputs.args": "--no-llm", "steps.failed.outputs.tests": outputs["tests"]})
    ran = _run_step(_step(steps, "run"), fixture_repo, tmp_path, context,
                    env={"PREFECT_API_URL": api, "PREFECT_API_KEY": "pnu_key"})
    ((_, (event,)),) = handler.received
    assert set(event["payload"]["failing_tests"]) == EXPECTED and event["payload"]["llm"] is False
    assert event["payload"]["publish"]["push"] and event["payload"]["publish"]["open_pr"]
    assert ran["report"] == str(tmp_path / "equisa-report.json") and ran["pull-request"] == ""
