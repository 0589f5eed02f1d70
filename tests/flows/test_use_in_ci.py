"""The "Use in CI" walkthrough (docs/use-in-ci.md), followed as a new user would, against local fixtures.

The workflow is read from docs/use-in-ci.md (the block after the ``use-in-ci-workflow`` marker) and its job
run step by step as the GitHub runner runs it: ``run`` steps with ``bash --noprofile --norc -eo
pipefail`` in the checkout, ``if: failure()`` honoured, ``$GITHUB_OUTPUT``, ``$GITHUB_PATH`` and
``$GITHUB_STEP_SUMMARY`` files between steps, and ``uses: OWNER/equisa@REF`` as this repository's
composite action (``action.yml``: its own install step included, into a private uv tool folder).
``actions/checkout`` is the git repository made here (the invoicing example, whose ``origin`` is a
bare repository on disk) and ``actions/setup-python`` a seeded virtual environment with pip. The
forge's REST API (``GITHUB_API_URL``) is scripted on 127.0.0.1. No Prefect server is configured, as
in a user's job.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.flows.test_repair import EQUISA
from tests.flows.test_repair_publish import invoicing_with_origin
from tests.forge_server import Answer, ScriptedForge
from tests.tasks.test_git_push import git

ROOT = Path(__file__).resolve().parents[2]
USE_IN_CI = ROOT / "docs" / "use-in-ci.md"
ACTION = ROOT / "action.yml"
MARKER = "<!-- use-in-ci-workflow:"
PULLS = "/api/v3/repos/acme/invoicing/pulls"
PR_URL = "https://github.com/acme/invoicing/pull/12"

pytestmark = pytest.mark.integration


def documented_workflow() -> dict[str, Any]:
    """The workflow of the walkthrough in docs/use-in-ci.md (the YAML block after its marker)."""
    text = USE_IN_CI.read_text()
    after = text[text.index(MARKER):]
    block = re.search(r"```yaml\n(.*?)\n\s*```", after, re.S)
    assert block, "the walkthrough's workflow block is missing from docs/use-in-ci.md"
    return yaml.safe_load(textwrap.dedent(block.group(1)))


def _expand(value: Any, context: dict[str, str]) -> str:
    """A value as the runner passes it: ``${{ expression }}`` filled in from ``context`` (an unknown
    one is empty), booleans spelt ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: context.get(m.group(1), ""), str(value))


class Runner:
    """One job on a pretend GitHub runner: the files the runner keeps between steps, the job's status."""

    def __init__(self, checkout: Path, temp: Path, env: dict[str, str]) -> None:
        temp.mkdir(parents=True)
        self.checkout, self.temp, self.env = checkout, temp, {**env, "RUNNER_TEMP": str(temp)}
        self.path_file = temp / "github_path"
        self.summary = temp / "step_summary.md"
        self.path_file.touch()
        self.summary.touch()
        self.failed = False
        self.logs: list[str] = []

    def _variables(self, step_env: dict[str, str], output: Path) -> dict[str, str]:
        added = [line for line in self.path_file.read_text().splitlines() if line.strip()]
        path = os.pathsep.join([*reversed(added), self.env["PATH"]])
        return {**self.env, "PATH": path, "GITHUB_OUTPUT": str(output), "GITHUB_PATH": str(self.path_file),
                "GITHUB_STEP_SUMMARY": str(self.summary), **step_env}

    def run(self, script: str, step_env: dict[str, str], timeout: float = 900) -> tuple[int, dict[str, str]]:
        """Run one ``run`` step; its exit code and its outputs."""
        output = self.temp / f"output-{len(self.logs)}"
        output.touch()
        file = self.temp / f"step-{len(self.logs)}.sh"
        file.write_text(script)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(file)],
                              cwd=self.checkout, env=self._variables(step_env, output), capture_output=True,
                              text=True, timeout=timeout)
        self.logs.append(done.stdout + done.stderr)
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return done.returncode, outputs

    def action(self, inputs: dict[str, Any], token: str) -> dict[str, str]:
        """Run this repository's composite action with the step's ``with``; the action's outputs."""
        spec = yaml.safe_load(ACTION.read_text())
        context = {f"inputs.{name}": _expand(d.get("default", ""), {"github.token": token})
                   for name, d in spec["inputs"].items()}
        context.update({f"inputs.{name}": _expand(value, {}) for name, value in inputs.items()})
        context["github.action_path"] = str(ROOT)
        context["github.token"] = token
        for step in spec["runs"]["steps"]:
            assert step.get("shell") == "bash"
            env = {k: _expand(v, context) for k, v in (step.get("env") or {}).items()}
            code, outputs = self.run(step["run"], env)
            context.update({f"steps.{step.get('id')}.outputs.{k}": v for k, v in outputs.items()})
            if code != 0:
                self.failed = True
                break
        return {name: _expand(d["value"], context) for name, d in spec["outputs"].items()}

    def job(self, workflow: dict[str, Any], token: str) -> dict[str, str] | None:
        """Run the workflow's one job; the EQUISA step's outputs (None when it did not run)."""
        (job,) = workflow["jobs"].values()
        outputs = None
        for step in job["steps"]:
            condition = str(step.get("if", "success()"))
            if ("failure()" in condition) != self.failed:
                continue
            uses = step.get("uses", "")
            if uses.startswith("actions/checkout@"):
                continue  # the checkout is the repository made by the test
            if uses.startswith("actions/setup-python@"):
                self._setup_python(str(step["with"]["python-version"]))
            elif uses:
                assert uses == "OWNER/equisa@REF", f"a step this runner does not know: {uses}"
                outputs = self.action(step.get("with") or {}, token)
            else:
                code, _ = self.run(step["run"], {})
                self.failed = self.failed or code != 0
        return outputs

    def _setup_python(self, version: str) -> None:
        """``actions/setup-python``: an interpreter of that version with pip, first on PATH."""
        venv = self.temp / "hostedtoolcache" / f"python-{version}"
        done = subprocess.run(["uv", "venv", "--seed", "--python", version, str(venv)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        with self.path_file.open("a") as paths:
            paths.write(f"{venv / 'bin'}\n")


@pytest.fixture
def user_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A runner's environment: no Prefect server configured, EQUISA's and uv's tool folders private.
    The shared local Prefect server the commands start (in the private data home) is stopped at
    the end."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "EQUISA_", "GITHUB_", "VIRTUAL_ENV", "UV_PROJECT"))}
    home = tmp_path / "home"
    env.update({
        "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_REPOSITORY": "acme/invoicing",
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "4242", "GITHUB_REF_NAME": "main",
        "UV_TOOL_DIR": str(tmp_path / "uv-tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "uv-tools-bin"),
        "PREFECT_HOME": str(home / ".prefect"), "EQUISA_WORKSPACES": str(tmp_path / "workspaces"),
        "EQUISA_DB": str(tmp_path / "history.duckdb"), "EQUISA_ARTIFACTS": str(tmp_path / "artifacts"),
        "EQUISA_SPOOL": str(tmp_path / "spool"), "COLUMNS": "200", "XDG_DATA_HOME": str(home / "data"),
        # The runner's PATH: the tools it has (git, uv), not the test session's virtual environment.
        "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                if Path(p).resolve() != Path(sys.executable).parent.resolve()),
    })
    try:
        yield env
    finally:
        subprocess.run([EQUISA, "server", "stop"], env=env, capture_output=True, timeout=120)


def test_the_documented_walkthrough_from_adding_the_action_to_the_pull_request_comment(
        tmp_path: Path, user_env: dict[str, str], forge_api: ScriptedForge) -> None:
    # 1. The step is added: the documented workflow, with EQUISA's action after the tests.
    workflow = documented_workflow()
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}
    project, bare = invoicing_with_origin(tmp_path)
    head = git(project, "rev-parse", "HEAD")
    short = git(project, "rev-parse", "--short", "HEAD")
    forge_api.on("POST", PULLS, Answer(201, {"number": 12, "html_url": PR_URL}))
    env = {**user_env, "GITHUB_WORKSPACE": str(project), "GITHUB_SHA": head,
           "GITHUB_API_URL": forge_api.url}

    # 2. A push whose tests fail: the pytest step fails, so the EQUISA step runs.
    runner = Runner(project, tmp_path / "first-job", env)
    outputs = runner.job(workflow, token="ghs_job_token")
    log = "\n".join(runner.logs)
    assert runner.failed, "the tests fail, so the job fails whatever EQUISA finds"
    assert outputs is not None, "the EQUISA step did not run after the failing tests:\n" + log[-4000:]

    # 3. The job: the verdict in the log, annotations on the suspect and the patched lines, the summary.
    assert outputs["status"] == "fixed", log[-6000:]
    assert re.search(r"^::error file=invoicing/discounts\.py,line=\d+", log, re.M), log[-4000:]
    assert re.search(r"^::notice file=invoicing/discounts\.py,line=\d+", log, re.M), log[-4000:]
    summary = runner.summary.read_text()
    assert "invoicing.discounts.ThresholdDiscount.applies" in summary
    assert "+        return subtotal.amount >= self.minimum.amount" in summary

    # 4. The pull request: one commit on top of the repaired one, on equisa/fix-<short sha>, into main,
    #    with the summary's Markdown as its body; the user's branch untouched.
    branch = f"equisa/fix-{short}"
    assert outputs["pull-request"] == PR_URL
    (commit,) = git(bare, "rev-list", f"{head}..{branch}").split()
    assert "+        return subtotal.amount >= self.minimum.amount" in git(bare, "diff", head, branch)
    assert git(bare, "for-each-ref", "--format=%(refname)").split() == [f"refs/heads/{branch}"]
    assert git(project, "rev-parse", "HEAD") == head and git(project, "status", "--porcelain",
                                                             "--untracked-files=no") == ""
    (opened,) = forge_api.requests("POST", PULLS)
    assert opened.headers["Authorization"] == "Bearer ghs_job_token"
    assert (opened.body["head"], opened.body["base"]) == (branch, "main")
    assert "invoicing.discounts.ThresholdDiscount.applies" in opened.body["body"]
    report = json.loads(Path(outputs["report"]).read_text())
    assert report["published"]["commit"] == commit

    # 5. The same failure again while the pull request is open: a comment on it, not a second one.
    forge_api.on("POST", PULLS, Answer(422, {"message": "Validation Failed",
                                             "errors": [{"message": "A pull request already exists"}]}))
    forge_api.on("GET", PULLS, Answer(200, [{"number": 12, "html_url": PR_URL, "head": {"ref": branch}}]))
    comments = "/api/v3/repos/acme/invoicing/issues/12/comments"
    forge_api.on("POST", comments, Answer(201, {"html_url": PR_URL + "#issuecomment-1"}))
    again = Runner(project, tmp_path / "second-job", env)
    outputs = again.job(workflow, token="ghs_job_token")
    log = "\n".join(again.logs)
    assert outputs is not None and outputs["status"] == "fixed", log[-6000:]
    assert outputs["pull-request"] == PR_URL
    (comment,) = forge_api.requests("POST", comments)
    assert "invoicing.discounts.ThresholdDiscount.applies" in comment.body["body"]
    assert len(forge_api.requests("POST", PULLS)) == 2
