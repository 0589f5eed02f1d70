"""``equisa doctor``: the real console script in a subprocess, on a small repository, with each part a
run needs missing in turn (an interpreter, the artifact store, the history, a configured model endpoint
or Prefect server, the Docker engine with ``--sandbox docker``): exit 0 when every needed part is
present, 18 (``DoctorError``) when one is missing, and the checks as JSON on standard output."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from equisa_core.errors import EXIT_OK, DoctorError
from tests.conftest import small_repo
from tests.scripted_llm_server import Fault, Reply

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
NEEDED_EVERYWHERE = ("interpreter", "artifacts", "history")


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small repository with one module and its passing test (no environment declared)."""
    root = small_repo(tmp_path / "repo")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n"
                                                 "    assert add(1, 2) == 3\n")
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A private environment: storage under ``tmp_path``, no model, no Prefect API configured (Prefect's
    temporary server per command), and a Docker socket that does not exist."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "AWS_", "PREFECT_API_")) and k != "EQUISA_MODEL"}
    base.update({
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "EQUISA_PREFECT_SERVER": "ephemeral",
        "EQUISA_DB": str(tmp_path / "data" / "history.duckdb"),
        "EQUISA_ARTIFACTS": str(tmp_path / "data" / "artifacts"),
        "EQUISA_SPOOL": str(tmp_path / "data" / "spool"),
        "DOCKER_HOST": f"unix://{tmp_path / 'no-docker.sock'}",
        "COLUMNS": "200",
    })
    return base


def doctor(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
    """Run ``equisa doctor ARGS --json -``: its exit code, the checks by name (and the whole report under
    ``"report"``), and what it printed to standard error."""
    done = subprocess.run([EQUISA, "doctor", *args, "--json", "-"], capture_output=True, text=True, env=env,
                          timeout=300)
    report = json.loads(done.stdout)  # standard output holds the JSON alone
    checks = {check["name"]: check for check in report["checks"]}
    return done.returncode, {**checks, "report": report}, done.stderr


def assert_missing_alone(code: int, checks: dict[str, Any], err: str, name: str) -> None:
    """``name`` is the one missing part: exit 18, a fix hint on its line, the others not missing."""
    assert code == DoctorError.exit_code == 18, err
    assert checks["report"]["missing"] == [name] and checks["report"]["ok"] is False
    assert checks[name]["needed"] is True and checks[name]["fix"]
    assert f"missing  {name}" in err and f"1 needed part(s) missing: {name}" in err


def test_every_needed_part_is_present_on_a_small_repository(repo, env, cli_env):
    """(a) A real Prefect server configured and answering, a history with the current schema, a local
    artifact folder, no model (deterministic mode), no Docker engine (a warning: not needed)."""
    from tasks.storage.history import write_run

    db = Path(env["EQUISA_DB"])
    write_run(db, None)  # an empty history of the current schema
    env = {**env, "PREFECT_API_URL": cli_env["PREFECT_API_URL"]}
    code, checks, err = doctor(env, str(repo))
    assert code == EXIT_OK, err
    report = checks["report"]
    assert report["ok"] is True and report["missing"] == [] and report["repository"] == str(repo.resolve())
    assert [c["name"] for c in report["checks"]] == ["interpreter", "environment", "isolation", "docker",
                                                     "prefect", "artifacts", "history", "model"]
    for check in report["checks"]:
        if check["needed"]:
            assert check["status"] in ("ok", "warning"), check  # a weak local sandbox is only a warning
    for name in (*NEEDED_EVERYWHERE, "prefect"):
        assert checks[name]["status"] == "ok", checks[name]
    assert "pytest" in checks["interpreter"]["found"]
    assert f"PREFECT_API_URL {cli_env['PREFECT_API_URL']} answers" in checks["prefect"]["found"]
    assert "schema version" in checks["history"]["found"] and "0 run(s)" in checks["history"]["found"]
    assert checks["model"] == {"name": "model", "status": "ok", "needed": False, "fix": None,
                               "found": checks["model"]["found"]}
    assert "deterministic mode only" in checks["model"]["found"]
    assert checks["docker"]["status"] == "warning" and checks["docker"]["needed"] is False
    assert "needed only for --sandbox docker" in checks["docker"]["found"]
    assert "Every needed part is present" in err


def test_no_prefect_server_and_no_storage_yet_are_fine(repo, env):
    """Nothing made yet: the history and artifact folder are made by the first run, and each command
    starts its own Prefect server."""
    code, checks, err = doctor(env, str(repo))
    assert code == EXIT_OK, err
    assert checks["prefect"]["status"] == "ok" and checks["prefect"]["needed"] is False
    assert "made at the first run" in checks["history"]["found"]
    assert "made at the first run" in checks["artifacts"]["found"]
    assert not Path(env["EQUISA_DB"]).exists(), "doctor makes no history"
    assert not Path(env["EQUISA_ARTIFACTS"]).exists(), "doctor makes no artifact folder"


def test_a_missing_interpreter_is_missing(repo, env):
    """(b) ``--python`` names no interpreter."""
    code, checks, err = doctor(env, str(repo), "--python", "/nonexistent")
    assert_missing_alone(code, checks, err, "interpreter")
    assert "/nonexistent does not exist" in checks["interpreter"]["found"]
    assert "--python" in checks["interpreter"]["fix"]


def test_an_interpreter_without_pytest_is_missing(repo, env, tmp_path):
    """An interpreter that runs but cannot import pytest (an empty virtualenv)."""
    venv = tmp_path / "bare"
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, env={**env,
                   "UV_PYTHON_DOWNLOADS": "never"})
    code, checks, err = doctor(env, str(repo), "--python", str(venv / "bin" / "python"))
    assert_missing_alone(code, checks, err, "interpreter")
    assert "pytest is not importable" in checks["interpreter"]["found"]


def _cached_environment(repo: Path, root: Path, python_script: str) -> Path:
    """A finished environment of ``repo`` as ``tasks.run.environments`` leaves one under ``root`` (its marker
    file, its interpreter: here ``python_script``), for EQUISA's own Python version."""
    from tasks.run.environments import MARKER, RECIPE, read_declared

    version = ".".join(map(str, sys.version_info[:3]))
    folder = root / read_declared(repo).digest(version, RECIPE)
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(python_script)
    python.chmod(0o755)
    (folder / MARKER).write_text(json.dumps({"made_from": ["pyproject.toml"], "steps": []}))
    return folder


@pytest.mark.parametrize("works", [True, False], ids=["working", "broken"])
def test_a_cached_environment_is_found_and_its_interpreter_checked(repo, env, tmp_path, works):
    """The repository declares an environment, no interpreter is given: the one a run would reuse is
    found by its digest and checked; one whose interpreter does not run is missing."""
    (repo / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "0"\n')
    root = tmp_path / "environments"
    script = f'#!/bin/sh\nexec {sys.executable} "$@"\n' if works else "#!/bin/sh\nexit 3\n"
    folder = _cached_environment(repo, root, script)
    env = {k: v for k, v in env.items() if k != "VIRTUAL_ENV"}
    code, checks, err = doctor(env, str(repo), "--environments", str(root))
    assert f"cached in {folder}" in checks["environment"]["found"]
    assert checks["environment"]["status"] == "ok"
    if works:
        assert code == EXIT_OK, err
        assert checks["interpreter"]["status"] == "ok" and "cached" in checks["interpreter"]["found"]
        assert checks["interpreter"]["found"].startswith(str(folder / "bin" / "python"))
    else:
        assert_missing_alone(code, checks, err, "interpreter")
        assert str(folder) in checks["interpreter"]["fix"]


def test_an_environment_to_build_is_described_not_built(repo, env, tmp_path):
    """With no cached environment, doctor says what a run would build, with which Python and uv."""
    (repo / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "0"\n')
    root = tmp_path / "environments"
    env = {k: v for k, v in env.items() if k != "VIRTUAL_ENV"}
    code, checks, err = doctor(env, str(repo), "--environments", str(root))
    assert code == EXIT_OK, err
    assert "not built yet" in checks["interpreter"]["found"]
    assert "from pyproject.toml" in checks["environment"]["found"]
    assert "the first run builds it" in checks["environment"]["found"]
    assert not root.exists(), "doctor builds nothing"


def test_an_s3_store_that_cannot_be_reached_is_missing(repo, env):
    """(c) The artifact store is an S3 bucket at an endpoint nobody listens on."""
    env = {**env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{closed_port()}", "AWS_ACCESS_KEY_ID": "k",
           "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1"}
    code, checks, err = doctor(env, str(repo), "--artifacts", "s3://equisa-doctor")
    assert_missing_alone(code, checks, err, "artifacts")
    assert "s3://equisa-doctor" in checks["artifacts"]["found"]
    assert "--artifacts FOLDER" in checks["artifacts"]["fix"]


@pytest.mark.parametrize("bucket_exists", [True, False], ids=["bucket", "no-bucket"])
def test_an_s3_store_is_checked_on_a_real_server(repo, env, moto_s3, bucket_exists):
    """A moto S3 server on 127.0.0.1: the bucket answers (ok), or does not exist (missing)."""
    name = "equisa-doctor-ok" if bucket_exists else "equisa-doctor-absent"
    if bucket_exists:
        moto_s3.make_bucket(name)
    code, checks, err = doctor({**env, **moto_s3.env()}, str(repo), "--artifacts", f"s3://{name}/runs")
    if bucket_exists:
        assert code == EXIT_OK, err
        assert checks["artifacts"]["status"] == "ok" and "the bucket answers" in checks["artifacts"]["found"]
    else:
        assert_missing_alone(code, checks, err, "artifacts")
        assert "does not exist" in checks["artifacts"]["found"]


def test_an_artifact_folder_that_cannot_be_written_is_missing(repo, env, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, checks, err = doctor(env, str(repo), "--artifacts", str(blocker / "artifacts"))
    assert_missing_alone(code, checks, err, "artifacts")


def test_a_corrupt_history_is_missing(repo, env, tmp_path):
    """(d) ``--db`` names a text file."""
    db = tmp_path / "history.duckdb"
    db.write_text("this is not a DuckDB file\n" * 100)
    code, checks, err = doctor(env, str(repo), "--db", str(db))
    assert_missing_alone(code, checks, err, "history")
    assert "not a usable DuckDB file" in checks["history"]["found"]
    assert db.read_text() == "this is not a DuckDB file\n" * 100, "doctor leaves the file alone"


def test_a_configured_model_that_answers_is_ok(repo, env, scripted_llm):
    """(e) A scripted OpenAI-compatible server on 127.0.0.1 answers the one-token call."""
    scripted_llm.enqueue(Reply("OK", prompt_tokens=3, completion_tokens=1))
    env = {**env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-test",
           "EQUISA_MODEL": "scripted-debugger"}
    code, checks, err = doctor(env, str(repo))
    assert code == EXIT_OK, err
    assert checks["model"]["status"] == "ok" and checks["model"]["needed"] is True
    assert "'scripted-debugger'" in checks["model"]["found"] and "answers" in checks["model"]["found"]
    [request] = scripted_llm.requests
    assert (request.model, request.body["max_tokens"]) == ("scripted-debugger", 1)


def test_a_configured_model_that_fails_is_missing(repo, env, scripted_llm):
    """(e) The endpoint rejects the request (a bad key, say): the user configured it, so it is needed."""
    scripted_llm.enqueue(Fault(status=401, message="bad key"))
    env = {**env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-wrong"}
    code, checks, err = doctor(env, str(repo))
    assert_missing_alone(code, checks, err, "model")
    assert "HTTP 401" in checks["model"]["found"]


def test_a_configured_model_at_a_closed_port_is_missing(repo, env):
    """(e) ``OPENAI_BASE_URL`` points at a port nobody listens on."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, checks, err = doctor({**env, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test"}, str(repo))
    assert_missing_alone(code, checks, err, "model")
    assert f"cannot reach {url}" in checks["model"]["found"]


def test_a_configured_prefect_api_that_does_not_answer_is_missing(repo, env):
    """(f) ``PREFECT_API_URL`` at a closed port: commands use a configured API unchanged, so their
    flows would fail; the user configured it, so it is needed (as a configured model is)."""
    url = f"http://127.0.0.1:{closed_port()}/api"
    code, checks, err = doctor({**env, "PREFECT_API_URL": url}, str(repo))
    assert_missing_alone(code, checks, err, "prefect")
    assert f"PREFECT_API_URL {url} does not answer" in checks["prefect"]["found"]
    assert "unset it" in checks["prefect"]["fix"]


@pytest.mark.parametrize("how", ["option", "setting"])
def test_the_docker_sandbox_without_an_engine_is_missing(repo, env, how):
    """(g) ``--sandbox docker`` (or ``EQUISA_SANDBOX=docker``) and no engine at ``DOCKER_HOST``: the
    engine is needed then; the local interpreter is not checked (the image's runs the suite)."""
    args = ["--sandbox", "docker"] if how == "option" else []
    if how == "setting":
        env = {**env, "EQUISA_SANDBOX": "docker"}
    code, checks, err = doctor(env, str(repo), *args)
    assert_missing_alone(code, checks, err, "docker")
    assert "docker engine unreachable" in checks["docker"]["found"]
    assert "--sandbox local" in checks["docker"]["fix"]
    assert "in the Docker image" in checks["interpreter"]["found"]
    assert checks["isolation"]["needed"] is False


def test_a_missing_repository_is_bad_input(env, tmp_path):
    done = subprocess.run([EQUISA, "doctor", str(tmp_path / "nowhere")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "does not exist" in done.stderr


def test_json_to_a_file_and_the_human_lines(repo, env, tmp_path):
    """``--json OUT`` writes the same checks to a file; the terminal shows one line per check."""
    out = tmp_path / "doctor.json"
    done = subprocess.run([EQUISA, "doctor", str(repo), "--json", str(out)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == EXIT_OK, done.stderr
    assert done.stdout == ""
    report = json.loads(out.read_text())
    lines = done.stderr.splitlines()
    for check in report["checks"]:
        [shown] = [line for line in lines if line.split()[1:2] == [check["name"]]]
        assert shown.split()[0] == check["status"]
