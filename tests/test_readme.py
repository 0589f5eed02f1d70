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


# --- the README is a front door; the documentation is docs/ ------------------------------------------

#: The README's length and line width: the rest of the documentation lives in docs/.
MAX_README_LINES = 200
MAX_README_LINE_CHARS = 200
#: ``[text](target)``: the text may be wrapped over lines; the target is one word.
LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")


def documentation_pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def without_code(text: str) -> str:
    """``text`` without its fenced blocks and inline code, where brackets are no links."""
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives ``page``'s headings (lower case, punctuation dropped, spaces as dashes;
    a repeated heading gets ``-1``, ``-2``...)."""
    anchors: set[str] = set()
    text = re.sub(r"^\s*```.*?^\s*```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def links(page: Path) -> list[str]:
    return LINK.findall(without_code(page.read_text(encoding="utf-8")))


def test_the_readme_is_a_front_door_of_at_most_200_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, "move the detail into docs/"
    too_long = [number for number, line in enumerate(lines, 1) if len(line) > MAX_README_LINE_CHARS]
    assert too_long == [], f"README.md lines over {MAX_README_LINE_CHARS} characters: {too_long}"


def test_the_readme_links_only_into_the_repository():
    outside = [target for target in links(ROOT / "README.md") if re.match(r"[a-z][a-z0-9+.-]*:", target)]
    assert outside == []


def test_every_relative_link_of_the_documentation_resolves():
    assert (ROOT / "docs" / "README.md").is_file(), "docs/README.md is the documentation's index"
    broken = []
    for page in documentation_pages():
        for target in links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http(s), mailto: allowed in docs/ only
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: {target}"
            if not resolved.is_relative_to(ROOT):
                broken.append(f"{where} leaves the repository")
            elif not resolved.exists():
                broken.append(f"{where} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved):
                broken.append(f"{where} names no heading of {resolved.relative_to(ROOT)}")
    assert broken == []


def test_every_command_of_the_cli_has_a_line_in_the_readme_and_a_page():
    from cli.main import build_parser

    parser = build_parser()
    commands = next(action for action in parser._actions if action.dest == "command").choices
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in commands:
        assert f"(docs/commands/{name}.md)" in readme, f"the README's table has no line for equisa {name}"
        assert (ROOT / "docs" / "commands" / f"{name}.md").is_file()
