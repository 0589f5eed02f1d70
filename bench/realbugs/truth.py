"""Ground truth: the functions of the buggy files that the fix patch touches.

Each hunk of ``bug_patch.txt`` (test files and non-Python files excluded) is read line by line
against the *buggy* file: a removed line belongs to the innermost function whose span (first
decorator line to last line) contains it; a block of added lines is placed at its insertion point,
between old lines ``p`` and ``p + 1``: the innermost function containing both, else the one
containing ``p`` when the added code is indented deeper than that function's ``def`` (appended at
its end), else the one containing ``p + 1`` when ``p + 1`` is not its first line. Blank and
comment-only lines are ignored. What falls outside every function is recorded as a module-level
change; a fix with no function touched cannot be ranked at function level.

Names follow EQUISA's probe: ``Class.method``, nested ``outer.<locals>.inner``; the FQN is the
dotted module path (``pkg/mod.py`` -> ``pkg.mod``, ``pkg/__init__.py`` -> ``pkg``) plus the
qualified name.
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .bugsinpy import is_test_path


@dataclass(frozen=True)
class Function:
    file: str
    qualname: str
    def_line: int
    first_line: int  # decorators included
    end_line: int
    col: int

    @property
    def fqn(self) -> str:
        return f"{module_of(self.file)}.{self.qualname}"

    def contains(self, line: int) -> bool:
        return self.first_line <= line <= self.end_line

    def as_dict(self) -> dict:
        return {**asdict(self), "fqn": self.fqn}


def module_of(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def functions_of(source: str, file: str) -> list[Function]:
    found: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append(Function(file, qualname, child.lineno, first,
                                      child.end_lineno or child.lineno, child.col_offset))
                visit(child, f"{qualname}.<locals>.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def innermost(functions: list[Function], line: int) -> Function | None:
    inside = [f for f in functions if f.contains(line)]
    return max(inside, key=lambda f: (f.first_line, -f.end_line)) if inside else None


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_patch(patch: str) -> dict[str, list[tuple[list[int], list[tuple[int, list[str]]]]]]:
    """Per old file: hunks as (removed old lines, [(insertion point p, added lines)])."""
    files: dict[str, list] = {}
    current = None
    old_line = 0
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- "):
            old = line[4:].split("\t")[0].strip()
            new = lines[i + 1][4:].split("\t")[0].strip() if i + 1 < len(lines) else old
            name = old[2:] if old.startswith("a/") else (new[2:] if new.startswith("b/") else new)
            if old == "/dev/null":
                name = new[2:] if new.startswith("b/") else new
            current = files.setdefault(name, [])
            i += 2
            continue
        found = _HUNK.match(line)
        if found and current is not None:
            old_line = int(found.group(1))
            removed: list[int] = []
            added: list[tuple[int, list[str]]] = []
            i += 1
            pending: list[str] = []
            while i < len(lines) and not lines[i].startswith(("@@", "diff ", "--- ")):
                text = lines[i]
                if text.startswith("+"):
                    pending.append(text[1:])
                else:
                    if pending:
                        added.append((old_line - 1, pending))
                        pending = []
                    if text.startswith("-"):
                        removed.append(old_line)
                        old_line += 1
                    elif text.startswith(" ") or text == "":
                        old_line += 1
                i += 1
            if pending:
                added.append((old_line - 1, pending))
            current.append((removed, added))
            continue
        i += 1
    return files


def _meaningful(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def truth_functions(patch: str, buggy_root: Path) -> dict:
    """The fix's functions in the buggy tree, the module-level changes, and skipped files."""
    functions: dict[tuple[str, str], Function] = {}
    module_level: list[str] = []
    skipped: list[str] = []
    for file, hunks in parse_patch(patch).items():
        if not file.endswith(".py") or is_test_path(file):
            skipped.append(file)
            continue
        path = buggy_root / file
        if not path.exists():
            module_level.append(f"{file}: new file")
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        source_lines = source.splitlines()
        try:
            defs = functions_of(source, file)
        except SyntaxError as error:
            skipped.append(f"{file}: does not parse on this Python ({error.msg})")
            continue

        def hit(f: Function | None, where: str) -> None:
            if f is None:
                module_level.append(where)
            else:
                functions[(f.file, f.qualname)] = f

        for removed, added in hunks:
            for line in removed:
                text = source_lines[line - 1] if 0 < line <= len(source_lines) else ""
                if _meaningful(text):
                    hit(innermost(defs, line), f"{file}:{line}")
            for point, block in added:
                body = [b for b in block if _meaningful(b)]
                if not body:
                    continue
                indent = len(body[0]) - len(body[0].lstrip())
                before, after = innermost(defs, point), innermost(defs, point + 1)
                if before is not None and before.contains(point + 1):
                    hit(before, "")
                elif before is not None and any(f.col < indent for f in defs if f.contains(point)):
                    # appended at the end of a function that contains p (the innermost one that
                    # the added code's indentation puts it in)
                    containing = sorted((f for f in defs if f.contains(point) and f.col < indent),
                                        key=lambda f: (f.first_line, -f.end_line))
                    hit(containing[-1], "")
                elif after is not None and after.first_line < point + 1:
                    hit(after, "")
                else:
                    module_level.append(f"{file}:+{point}")
    return {"functions": [f.as_dict() for f in sorted(functions.values(), key=lambda f: (f.file, f.first_line))],
            "module_level": module_level, "skipped_files": skipped}
