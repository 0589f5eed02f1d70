"""The first-command benchmark's pure parts: the README's command, the clone's pyproject, the run
order, the environment, and the summary and table made from samples (no timing)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import first_command as fc  # noqa: E402


def test_the_first_command_is_the_first_line_of_the_readmes_first_bash_block():
    readme = "# X\n\ntext\n\n```bash\npip install uv && uv run x repair a --json r.json\nuv run pytest\n```\n"
    first = fc.first_command(readme)
    assert first == "pip install uv && uv run x repair a --json r.json"
    assert fc.warm_command(first) == "uv run x repair a --json r.json"


def test_the_repositorys_readme_has_a_first_command_that_runs_equisa_with_uv():
    first = fc.first_command((BENCH.parent / "README.md").read_text(encoding="utf-8"))
    assert fc.warm_command(first).startswith("uv run equisa ")


def test_compile_bytecode_is_set_replaced_or_added():
    text = '[project]\nname = "x"\n\n[tool.uv]\n# why\ncompile-bytecode = true\n\n[tool.ruff]\n'
    assert "compile-bytecode = false\n" in fc.configured(text, False)
    assert fc.configured(text, False).count("compile-bytecode") == 1
    assert "[tool.uv]\ncompile-bytecode = true\n" in fc.configured("[tool.uv]\nfoo = 1\n", True)
    assert fc.configured('[project]\nname = "x"\n', False).endswith("[tool.uv]\ncompile-bytecode = false\n")


def test_configurations_are_interleaved_and_reversed_every_other_repeat():
    assert fc.schedule(["a", "b"], 3) == [(0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b")]


def test_the_clone_gets_its_own_folders_the_warm_uv_cache_and_not_the_benchs_venv(tmp_path):
    base = {
        "PATH": "/bench/.venv/bin:/usr/bin",
        "VIRTUAL_ENV": "/bench/.venv",
        "PREFECT_API_URL": "x",
        "EQUISA_WARM": "0",
        "UV_PROJECT_ENVIRONMENT": "y",
        "HOME": "/root",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env = fc.clean_environment(base, tmp_path, "/root/.cache/uv", "/bench/.venv/bin")
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/root"
    assert "VIRTUAL_ENV" not in env and "PREFECT_API_URL" not in env and "EQUISA_WARM" not in env
    assert "UV_PROJECT_ENVIRONMENT" not in env and env["UV_CACHE_DIR"] == "/root/.cache/uv"
    assert env["XDG_DATA_HOME"] == str(tmp_path / "data") and env["PREFECT_HOME"].startswith(str(tmp_path))
    assert "PYTHONDONTWRITEBYTECODE" not in env, "a user's shell"
    kept = fc.clean_environment(base, tmp_path, "/root/.cache/uv", None, dont_write_bytecode=True)
    assert kept["PYTHONDONTWRITEBYTECODE"] == "1" and kept["PATH"] == base["PATH"]


def _sample(config: str, first: float, again: float, exit_first: int = 0) -> dict:
    return {
        "config": config,
        "loadavg_before": [1.0, 1.0, 1.0],
        "commands": [
            {"name": "first", "seconds": first, "exit": exit_first},
            {"name": "repair again", "seconds": again, "exit": 0},
        ],
    }


def test_the_summary_has_medians_and_all_samples_in_run_order():
    summary = fc.summarize(
        [
            _sample("compiled", 30.0, 5.0),
            _sample("lazy", 20.0, 4.0),
            _sample("lazy", 18.0, 4.5),
            _sample("compiled", 34.0, 6.0, exit_first=3),
            _sample("compiled", 31.0, 5.5),
            _sample("lazy", 22.0, 4.2),
        ]
    )
    assert summary["compiled"]["first"] == {
        "median_s": 31.0,
        "min_s": 30.0,
        "max_s": 34.0,
        "samples_s": [30.0, 34.0, 31.0],
        "abnormal_exits": [3],
    }
    assert summary["lazy"]["repair again"]["median_s"] == 4.2
    assert summary["lazy"]["first"]["abnormal_exits"] == []


def test_the_table_has_a_row_per_command_a_column_per_configuration_and_the_ratio():
    summary = fc.summarize([_sample("compiled", 30.0, 5.0), _sample("lazy", 15.0, 5.0, exit_first=2)])
    table = fc.markdown_table(summary, ["compiled", "lazy"])
    lines = table.splitlines()
    assert lines[0] == "| command (whole process, s) | compiled | lazy | lazy / compiled |"
    assert lines[2] == "| first | **30.0** (30.0) | **15.0** (15.0) ⚠ exit 2 | 0.50 |"
    assert lines[3] == "| repair again | **5.0** (5.0) | **5.0** (5.0) | 1.00 |"


def test_the_markdown_report_says_when_the_machine_was_loaded():
    samples = [_sample("compiled", 30.0, 5.0), _sample("lazy", 20.0, 4.0)]
    samples[1]["loadavg_before"] = [6.0, 5.0, 4.0]
    report = {
        "date": "2026-12-05T08:00:00+00:00",
        "git": {"short": "abc1234", "dirty": False},
        "command_line": "uv run python bench/first_command.py",
        "repeats": 1,
        "machine": {
            "nproc": 2,
            "platform": "Linux",
            "uv": "0.13.9",
            "loadavg_at_start": [6.0, 5.0, 4.0],
            "loadavg_at_end": [3.0, 4.0, 4.0],
        },
        "first_command": "uv run equisa repair x",
        "configs": ["compiled", "lazy"],
        "summary": fc.summarize(samples),
        "samples": samples,
        "venv_files": {"compiled": {"py": 10, "pyc": 10}, "lazy": {"py": 10, "pyc": 2}},
    }
    text = fc.markdown_report(report)
    assert "the machine was loaded by other jobs" in text
    assert "compiled: 10 / 10; lazy: 10 / 2" in text
    assert "| first | **30.0** (30.0) | **20.0** (20.0) | 0.67 |" in text
