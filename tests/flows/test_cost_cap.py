"""``--max-cost`` and the prices of a model the price table does not know, through the real command
against the scripted OpenAI-compatible server (``tests/scripted_llm_server.py``).

A model without a known price is refused before any work (exit 12, saying what to do); given its
prices, the cap stops it; ``--max-cost none`` runs it without a cap
(``tests/flows/test_localize.py::test_llm_mode_converges_on_the_bug``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from equisa_core.errors import EXIT_OK, LLMRequestError
from equisa_core.localization.steps import LocalizationReport
from tests.flows.test_localize import INVOICING, localize, scripted_debugger


def _model_env(cli_env: dict[str, str], scripted_llm, model: str = "scripted-debugger") -> dict[str, str]:
    """The environment of a run whose model (unknown to the price table) the scripted server plays."""
    scripted_llm.respond_with(scripted_debugger)
    return {**cli_env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-test",
            "EQUISA_MODEL": model}


def test_an_unpriced_model_is_refused_before_any_work(tmp_path: Path, cli_env: dict[str, str],
                                                      scripted_llm) -> None:
    env = _model_env(cli_env, scripted_llm)
    out = tmp_path / "loc.json"
    code, err = localize(env, str(INVOICING), "--no-discovery", "--json", str(out))  # an endpoint: the model
    assert code == LLMRequestError.exit_code == 12, err
    assert "'scripted-debugger' has no known price" in err
    assert "--price-input and --price-output" in err and "--max-cost none" in err
    assert not scripted_llm.requests, "the model was asked nothing"
    assert not Path(env["EQUISA_WORKSPACES"]).exists(), "no snapshot was made: no sandbox work began"
    stopped = json.loads(out.read_text())
    assert (stopped["status"], stopped["exit_code"]) == ("error", 12)
    assert stopped["error_type"] == "LLMRequestError"


def test_an_unpriced_backup_model_is_refused_too(tmp_path: Path, cli_env: dict[str, str],
                                                 scripted_llm) -> None:
    env = {**_model_env(cli_env, scripted_llm, model="gpt-4o"), "EQUISA_BACKUP_MODEL": "local-backup"}
    code, err = localize(env, str(INVOICING), "--llm", "--no-discovery")
    assert code == 12, err
    assert "'local-backup' has no known price" in err and "gpt-4o" not in err.split("no known price")[0]


def test_a_deterministic_run_needs_no_prices(tmp_path: Path, cli_env: dict[str, str], scripted_llm) -> None:
    env = _model_env(cli_env, scripted_llm)
    out = tmp_path / "loc.json"
    code, err = localize(env, str(INVOICING), "--no-llm", "--max-inspections", "0", "--json", str(out))
    assert code == EXIT_OK, err  # no inspection asked for: the prior's ranking, an outcome
    assert LocalizationReport.model_validate_json(out.read_text()).mode == "deterministic"
    assert not scripted_llm.requests


def test_a_priced_custom_model_is_stopped_by_the_cap(tmp_path: Path, cli_env: dict[str, str],
                                                     scripted_llm) -> None:
    # At $100,000 per million tokens, the first answer already costs more than the cap of one cent.
    env = _model_env(cli_env, scripted_llm)
    out = tmp_path / "loc.json"
    code, err = localize(env, str(INVOICING), "--llm", "--no-discovery", "--max-cost", "0.01",
                         "--price-input", "100000", "--price-output", "100000", "--json", str(out))
    assert code == EXIT_OK, err
    report = LocalizationReport.model_validate_json(out.read_text())
    assert report.mode == "llm" and not report.converged
    assert "cost budget ($0.01) spent" in report.stopped_because
    assert report.cost["usd"] > 0.01
    assert len(report.inspections) == 1, "no inspection began once the cap was passed"


def test_the_prices_come_from_the_settings_too(tmp_path: Path, cli_env: dict[str, str],
                                               scripted_llm) -> None:
    repo = tmp_path / "invoicing"
    shutil.copytree(INVOICING, repo)
    pyproject = repo / "pyproject.toml"
    table = 'max_cost_usd = 0.01\nprice_input = 100000\n'
    pyproject.write_text(pyproject.read_text() + f"\n[tool.equisa]\n{table}")
    env = {**_model_env(cli_env, scripted_llm), "EQUISA_PRICE_OUTPUT": "100000"}
    out = tmp_path / "loc.json"
    code, err = localize(env, str(repo), "--llm", "--no-discovery", "--json", str(out))
    assert code == EXIT_OK, err
    report = LocalizationReport.model_validate_json(out.read_text())
    assert "cost budget ($0.01) spent" in report.stopped_because
