"""The README's first two commands are the ones CI and users run: keep them true."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```(?:bash|sh)\n(.*?)```", text, re.S)
    assert first_block, "the README opens with a fenced shell block"
    return [line for line in first_block.group(1).splitlines() if line and not line.startswith("#")]


def test_the_readme_opens_with_exactly_two_commands():
    commands = readme_commands()
    assert len(commands) == 2
    assert "equisa repair " in commands[0] and "examples/" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert readme_commands()[1] in ci.splitlines()


def test_the_example_the_readme_runs_exists():
    main_command = readme_commands()[0]
    example = re.search(r"(examples/[\w\-]+)", main_command).group(1)
    assert (ROOT / example).is_dir()
