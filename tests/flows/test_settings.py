"""Where an option's value comes from: the command line, then ``EQUISA_*``, then ``[tool.equisa]`` in
the target's ``pyproject.toml``, then the default (``cli/settings.py``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import build_parser
from cli.options import given_options
from cli.settings import apply_settings, known_settings
from equisa_core.common.options import EndpointOptions, LocalizationOptions, SandboxOptions, default_of
from equisa_core.errors import ConfigurationError
from tests.conftest import FIXTURES

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
CONFIGURATION_DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _repository(folder: Path, table: str) -> Path:
    """A target repository on disk whose pyproject.toml holds ``table`` under ``[tool.equisa]``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "target"\n\n[tool.equisa]\n{table}\n')
    return folder


def _options(argv: list[str]):
    """``argv`` parsed as ``main`` does: the command line, then the environment and the target's table."""
    args = build_parser().parse_args(argv)
    apply_settings(args, given_options(build_parser(), argv))
    return args


@pytest.fixture
def no_equisa_variables(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No ``EQUISA_<option>`` variable of the test's own environment reaches the settings."""
    for name in known_settings():
        monkeypatch.delenv(f"EQUISA_{name.upper()}", raising=False)
    return monkeypatch


def test_the_command_line_wins_over_the_environment_over_the_table_over_the_default(
        tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path / "repo", "max_inspections = 4\nscreen_top = 7\nmax_seconds = 60\n"
                                          "test_timeout_s = 9.5\n")
    no_equisa_variables.setenv("EQUISA_SCREEN_TOP", "3")
    no_equisa_variables.setenv("EQUISA_MAX_SECONDS", "90")
    args = _options(["localize", str(repo), "--max-seconds", "120"])
    assert args.max_inspections == 4  # the table only
    assert args.screen_top == 3  # the environment over the table
    assert args.max_seconds == 120  # the command line over both
    assert args.test_timeout == 9.5  # an option spelt otherwise (--test-timeout) is set all the same
    assert args.inspection_batch == default_of(LocalizationOptions, "inspection_batch")  # set by none


def test_the_per_test_limit_is_auto_or_seconds_wherever_it_is_set(
        tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch) -> None:
    assert _options(["trace", str(tmp_path)]).test_timeout == "auto"  # the default
    auto = _repository(tmp_path / "auto", 'test_timeout_s = "auto"\n')
    seconds = _repository(tmp_path / "seconds", "test_timeout_s = 4\n")
    assert _options(["trace", str(auto)]).test_timeout == "auto"
    assert _options(["trace", str(seconds)]).test_timeout == 4
    assert _options(["trace", str(seconds), "--test-timeout", "auto"]).test_timeout == "auto"
    no_equisa_variables.setenv("EQUISA_TEST_TIMEOUT_S", "auto")
    assert _options(["trace", str(seconds)]).test_timeout == "auto"
    no_equisa_variables.setenv("EQUISA_TEST_TIMEOUT_S", "7")
    assert _options(["trace", str(auto)]).test_timeout == 7
    assert _options(["trace", str(auto), "--test-timeout", "2.5"]).test_timeout == 2.5
    for bad in ("soon", "0", "-1"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["trace", str(auto), "--test-timeout", bad])


def test_an_option_written_with_its_default_value_still_wins(tmp_path: Path,
                                                             no_equisa_variables: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path / "repo", 'sandbox = "none"\n')
    default = default_of(SandboxOptions, "sandbox")
    assert _options(["trace", str(repo), "--sandbox", default]).sandbox == default
    assert _options(["trace", str(repo)]).sandbox == "none"


def test_batch_takes_its_options_from_the_environment_and_no_table(
        tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch) -> None:
    # batch has no one target (each repository has its own table), so the current folder's
    # pyproject.toml is not read; the environment still fills what the command line leaves out
    _repository(tmp_path, "concurrency = 7\n")
    no_equisa_variables.chdir(tmp_path)
    no_equisa_variables.setenv("EQUISA_NO_CACHE", "true")
    args = _options(["batch", "repos.yaml"])
    assert args.no_cache is True
    assert args.concurrency == 2
    no_equisa_variables.setenv("EQUISA_CONCURRENCY", "5")
    assert _options(["batch", "repos.yaml"]).concurrency == 5
    assert _options(["batch", "repos.yaml", "--concurrency", "1"]).concurrency == 1
    no_equisa_variables.setenv("EQUISA_CONCURRENCY", "0")
    with pytest.raises(ConfigurationError, match="EQUISA_CONCURRENCY"):
        _options(["batch", "repos.yaml"])


def test_without_settings_every_option_keeps_its_default(tmp_path: Path,
                                                         no_equisa_variables: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "target"\n')
    argv = ["repair", str(tmp_path)]
    assert vars(_options(argv)) == vars(build_parser().parse_args(argv))


def test_a_key_for_another_command_is_no_error(tmp_path: Path,
                                               no_equisa_variables: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path / "repo", "coverage_target = 90\nmax_validations = 3\n")
    localize = _options(["localize", str(repo)])
    assert localize.max_inspections == default_of(LocalizationOptions, "max_inspections")
    assert _options(["testgen", str(repo), "--target", "m.py"]).coverage_target == 90


@pytest.mark.parametrize(("table", "variable", "named"), [
    ("max_iteration = 4", None, "max_iteration"),
    ("max_inspections = -1", None, "max_inspections"),
    ('sandbox = "vm"', None, "sandbox"),
    ("", ("EQUISA_SCREEN_BUDGET_S", "soon"), "EQUISA_SCREEN_BUDGET_S"),
])
def test_an_unknown_key_or_a_bad_value_is_bad_input(tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch,
                                                    table: str, variable: tuple[str, str] | None,
                                                    named: str) -> None:
    repo = _repository(tmp_path / "repo", table)
    if variable:
        no_equisa_variables.setenv(*variable)
    with pytest.raises(ConfigurationError) as raised:
        _options(["localize", str(repo)])
    assert named in raised.value.message
    assert raised.value.exit_code == 3


def test_the_documented_example_table_is_valid(
    tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch
) -> None:
    documented = CONFIGURATION_DOCS.read_text(encoding="utf-8")
    example = re.search(r"```toml\n# PATH/pyproject.toml\n(.*?)```", documented, re.S)
    assert example, "docs/configuration.md's Options section shows a [tool.equisa] table"
    (tmp_path / "pyproject.toml").write_text(example.group(1))
    args = _options(["repair", str(tmp_path)])
    assert (args.test_timeout, args.shard_timeout, args.max_generated_tests) == (60, 900, 10)


# --- the real command ------------------------------------------------------------------------------


def _trace_hangs(tmp_path: Path, env: dict[str, str], table: str, *options: str) -> tuple[int, str, Path]:
    """``equisa trace`` over a copy of the fixture whose test hangs, with ``table`` as its settings."""
    repo = tmp_path / "hangs"
    shutil.copytree(FIXTURES / "hangs", repo)
    _repository(repo, table)
    out = tmp_path / "report.json"
    done = subprocess.run([EQUISA, "trace", str(repo), "--json", str(out), *options], capture_output=True,
                          text=True, env=env, timeout=600)
    return done.returncode, done.stderr, out


def _hanging_outcome(report: Path) -> tuple[str, str | None]:
    data = json.loads(report.read_text())
    hanging = next(t for t in data["tests"] if t["test_id"].endswith("test_hangs"))
    return hanging["outcome"], hanging["exception_type"]


def test_the_targets_table_sets_the_per_test_limit(tmp_path: Path, cli_env: dict[str, str]) -> None:
    code, printed, out = _trace_hangs(tmp_path, cli_env, "test_timeout_s = 2")
    assert code == 0, printed
    assert _hanging_outcome(out) == ("failed", "equisa_probe.TestTimeout")


def test_the_environment_wins_over_the_targets_table(tmp_path: Path, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "EQUISA_TEST_TIMEOUT_S": "2"}
    code, printed, out = _trace_hangs(tmp_path, env, "test_timeout_s = 600\nshard_timeout_s = 900")
    assert code == 0, printed
    assert _hanging_outcome(out) == ("failed", "equisa_probe.TestTimeout")


def test_the_command_exits_3_naming_an_unknown_key(tmp_path: Path, cli_env: dict[str, str]) -> None:
    code, printed, out = _trace_hangs(tmp_path, cli_env, "test_timeout = 2")
    assert code == ConfigurationError.exit_code == 3
    assert "[tool.equisa] has no setting test_timeout" in printed
    stopped = json.loads(out.read_text())  # no trace ran: the JSON is the failure report
    assert (stopped["status"], stopped["exit_code"]) == ("error", 3)
    assert stopped["error_type"] == "ConfigurationError"


# --- renamed settings and the model's cost ---------------------------------------------------------


def _options_noting(argv: list[str]) -> tuple[object, list[str]]:
    """``_options``, and the warnings about old keys the settings gave."""
    args = build_parser().parse_args(argv)
    notes = apply_settings(args, given_options(build_parser(), argv))
    return args, notes


@pytest.mark.parametrize(("command", "dest", "replacement"), [
    (["localize"], "max_inspections", "max_inspections"),
    (["repair"], "max_inspections", "max_inspections"),
    (["testgen", "--target", "m.py"], "max_attempts", "max_attempts"),
])
def test_an_old_key_in_the_table_still_works_and_warns(
        tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch, command: list[str], dest: str,
        replacement: str) -> None:
    repo = _repository(tmp_path / "repo", "max_iterations = 2\nwall_clock_s = 99\n")
    args, notes = _options_noting([command[0], str(repo), *command[1:]])
    assert (getattr(args, dest), args.shard_timeout) == (2, 99)
    pyproject = repo / "pyproject.toml"
    assert (f"max_iterations in {pyproject}'s [tool.equisa] is deprecated and will be removed in the next "
            f"release: use {replacement}") in notes
    assert any(n.startswith("wall_clock_s in ") and n.endswith("use shard_timeout_s") for n in notes)
    assert len(notes) == 2


def test_an_old_variable_still_works_and_warns_and_the_new_name_wins(
        tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path / "repo", "max_inspections = 9\n")
    no_equisa_variables.setenv("EQUISA_MAX_ITERATIONS", "3")
    no_equisa_variables.setenv("EQUISA_MAX_MUTANTS", "11")
    args, notes = _options_noting(["localize", str(repo)])
    assert (args.max_inspections, args.mutants_per_inspection) == (3, 11)  # the environment over the table
    assert sorted(notes) == [
        "EQUISA_MAX_ITERATIONS is deprecated and will be removed in the next release: "
        "use EQUISA_MAX_INSPECTIONS",
        "EQUISA_MAX_MUTANTS is deprecated and will be removed in the next release: "
        "use EQUISA_MUTANTS_PER_INSPECTION"]
    testgen, _ = _options_noting(["testgen", str(repo), "--target", "m.py"])
    assert (testgen.max_attempts, testgen.mutants_per_measurement) == (3, 11)
    no_equisa_variables.setenv("EQUISA_MAX_INSPECTIONS", "5")
    assert _options_noting(["localize", str(repo)])[0].max_inspections == 5
    assert _options_noting(["localize", str(repo), "--max-inspections", "1"])[0].max_inspections == 1


def test_a_written_old_flag_wins_over_the_settings(tmp_path: Path,
                                                   no_equisa_variables: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path / "repo", "shard_timeout_s = 99\n")
    assert _options(["trace", str(repo), "--timeout", "5"]).shard_timeout == 5


def test_the_cost_cap_and_the_prices_come_from_the_table_and_the_environment(
        tmp_path: Path, no_equisa_variables: pytest.MonkeyPatch) -> None:
    assert _options(["repair", str(tmp_path)]).max_cost == default_of(EndpointOptions, "max_cost_usd") == 2.0
    repo = _repository(tmp_path / "repo", 'max_cost_usd = "none"\nprice_input = 0.25\n')
    args = _options(["repair", str(repo)])
    assert (args.max_cost, args.price_input, args.price_output) == ("none", 0.25, None)
    no_equisa_variables.setenv("EQUISA_MAX_COST_USD", "0.75")
    no_equisa_variables.setenv("EQUISA_PRICE_OUTPUT", "1")
    args = _options(["testgen", str(repo), "--target", "m.py"])
    assert (args.max_cost, args.price_input, args.price_output) == (0.75, 0.25, 1.0)
    assert _options(["localize", str(repo), "--max-cost", "none"]).max_cost == "none"
    no_equisa_variables.setenv("EQUISA_MAX_COST_USD", "lots")
    with pytest.raises(ConfigurationError, match="EQUISA_MAX_COST_USD"):
        _options(["localize", str(repo)])


def test_batch_and_trigger_take_the_cap_from_the_environment(tmp_path: Path,
                                                            no_equisa_variables: pytest.MonkeyPatch) -> None:
    assert _options(["batch", "repos.yaml"]).max_cost is None  # each entry's own
    assert _options(["trigger"]).max_cost == 2.0
    no_equisa_variables.setenv("EQUISA_MAX_COST_USD", "none")
    assert _options(["batch", "repos.yaml"]).max_cost == "none"
    assert _options(["trigger", "--max-cost", "1"]).max_cost == 1.0


def test_the_command_warns_about_an_old_key_once(tmp_path: Path, cli_env: dict[str, str]) -> None:
    repo = _repository(tmp_path / "repo", "wall_clock_s = 300\n")
    done = subprocess.run([EQUISA, "localize", str(repo / "missing")], capture_output=True, text=True,
                          env={**cli_env, "EQUISA_MAX_ITERATIONS": "2"}, timeout=300)
    assert done.returncode == 3
    assert done.stderr.count("EQUISA_MAX_ITERATIONS is deprecated") == 1
    assert "use EQUISA_MAX_INSPECTIONS" in done.stderr
