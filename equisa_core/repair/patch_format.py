"""The ``<patches>`` format of seed 004, for Python: parse, locate, apply, compile-check.

A model proposes a fix as::

    <patches>
    <patch>
    <original_code>
    11:def add(a, b):
    12:    return a - b
    </original_code>
    <code_lines_to_replace>
    calc.py:11-12
    </code_lines_to_replace>
    <patched_code>
    def add(a, b):
        return a + b
    </patched_code>
    </patch>
    </patches>

``<code_lines_to_replace>`` names the file (relative to the repository root) and, optionally, the
lines. ``original_code`` is the text being replaced, copied from the file, with or without the
``N:`` line-number prefixes the retrieval shows (they are removed when every non-blank line has
one). The text is the authority, not the numbers:

* ``original_code`` must occur in the file exactly once, comparing whole lines after removing only
  trailing whitespace (indentation must match). Zero occurrences is "not found" (the detail says
  which line first differs, or that only the indentation does); several is "ambiguous", unless the
  line numbers the model gave (prefixes, else the range) start exactly one of them.
* Several patches are located in the original file first; overlapping ones are refused; then each
  is spliced in, keeping the file's line endings (and a missing final newline).
* Only ``.py`` files outside the tests may change (unless ``allow_test_edits``): a "fix" that edits
  the tests or the test configuration would make failing tests pass without fixing anything.
* Each changed file must compile (``compile``, which also catches symbol-table errors).

``build_patch_candidate`` returns a ``PatchCandidate`` (generator ``patcher``) holding the whole
new texts, or a ``PatchEvaluation`` with status ``DOES_NOT_APPLY`` or ``DOES_NOT_COMPILE`` and a
detail written for the model's next attempt.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.repair.retrieval import resolve_repo_path
from equisa_core.validation.interface import PatchCandidate, PatchEvaluation, PatchStatus

__all__ = [
    "FilePatch",
    "PatchRejectedError",
    "has_patches",
    "parse_patches",
    "is_test_path",
    "apply_patches",
    "build_patch_candidate",
]

_PATCHES_RE = re.compile(r"<patches>(?P<body>.*?)(?:</patches>|\Z)", re.DOTALL | re.IGNORECASE)
_PATCH_OPEN_RE = re.compile(r"<patch>", re.IGNORECASE)
_PATCH_RE = re.compile(r"<patch>(?P<body>.*?)</patch>", re.DOTALL | re.IGNORECASE)
_THINK_RE = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_NUMBERED_RE = re.compile(r"(?P<number>\d+):(?P<code>.*)\Z", re.DOTALL)
_RANGE_RE = re.compile(r"(?P<path>.+?)(?::(?P<start>\d+)(?:\s*-\s*(?P<end>\d+))?)?\Z")
_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})[^\n]*$")
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_TAGS = ("original_code", "code_lines_to_replace", "patched_code")
_SHOWN_CHARS = 120


class PatchRejectedError(ValueError):
    """A patch that cannot be applied or compiled; ``detail`` is written for the model."""

    def __init__(self, status: PatchStatus, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class FilePatch(BaseModel):
    """One ``<patch>``: replace ``original_code`` in ``path`` by ``patched_code``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int = Field(ge=1, description="1-based position in the answer.")
    path: str = Field(description="The path as written in <code_lines_to_replace>.")
    start_line: int | None = Field(None, description="The first line the model says it replaces.")
    end_line: int | None = None
    original_code: str = Field(description="Lines to replace, line-number prefixes removed.")
    patched_code: str = Field(description="Replacement lines ('' deletes).")


# --- parsing -------------------------------------------------------------------------------------


def has_patches(answer: str) -> bool:
    """Whether the answer proposes patches (holds a ``<patches>`` tag outside ``<think>``)."""
    return bool(_PATCHES_RE.search(_THINK_RE.sub("", answer)))


def _tag(body: str, tag: str, number: int) -> str:
    found: list[str] = re.findall(rf"<{tag}>(.*?)</{tag}>", body, re.DOTALL | re.IGNORECASE)
    if not found:
        opened = re.search(rf"<{tag}>", body, re.IGNORECASE)
        problem = f"<{tag}> is not closed" if opened else f"has no <{tag}>"
        raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, f"patch {number} {problem}")
    if len(found) > 1:
        raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, f"patch {number} has {len(found)} <{tag}> "
                                 "tags: write one <patch> per change")
    return found[0]


def _code_lines(content: str) -> list[str]:
    """A tag's lines: fences and blank lines at either end dropped, trailing whitespace kept."""
    lines = content.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) >= 2 and _FENCE_RE.match(lines[0]) and _FENCE_RE.match(lines[-1]):
        lines = lines[1:-1]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
    return lines


def _strip_numbers(lines: list[str]) -> tuple[list[str], int | None]:
    """Lines without ``N:`` prefixes when every non-blank line has one, and the first number."""
    matches = [_NUMBERED_RE.match(line) for line in lines]
    if not lines or not all(m is not None for line, m in zip(lines, matches, strict=True) if line.strip()):
        return lines, None
    stripped = [m.group("code") if m is not None else "" for m in matches]
    first = next(int(m.group("number")) for m in matches if m is not None)
    return stripped, first


def parse_patches(answer: str) -> list[FilePatch]:
    """The patches of an answer's ``<patches>`` block, in order.

    Raises ``PatchRejectedError`` (``DOES_NOT_APPLY``) when there is no ``<patches>`` block, it
    holds no ``<patch>``, a ``<patch>`` is not closed (a cut-off answer), or a patch lacks one of
    ``<original_code>``, ``<code_lines_to_replace>``, ``<patched_code>`` or has it twice.
    """
    block = _PATCHES_RE.search(_THINK_RE.sub("", answer))
    if block is None:
        raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, "the answer has no <patches> block")
    body = block.group("body")
    patches = list(_PATCH_RE.finditer(body))
    opened = len(_PATCH_OPEN_RE.findall(body))
    if opened > len(patches):
        raise PatchRejectedError(
            PatchStatus.DOES_NOT_APPLY,
            f"<patch> {len(patches) + 1} is not closed with </patch> (was the answer cut off?)",
        )
    if not patches:
        raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, "<patches> holds no <patch>")
    parsed = []
    for number, match in enumerate(patches, start=1):
        patch_body = match.group("body")
        original, numbered_from = _strip_numbers(_code_lines(_tag(patch_body, "original_code", number)))
        patched, _ = _strip_numbers(_code_lines(_tag(patch_body, "patched_code", number)))
        where = _tag(patch_body, "code_lines_to_replace", number).strip().strip("`").strip()
        spec = _RANGE_RE.match(where)
        if spec is None:
            raise PatchRejectedError(
                PatchStatus.DOES_NOT_APPLY,
                f"patch {number}: <code_lines_to_replace> is empty: write path/to/file.py:START-END",
            )
        start = int(spec.group("start")) if spec.group("start") else None
        end = int(spec.group("end")) if spec.group("end") else start
        if not original:
            raise PatchRejectedError(
                PatchStatus.DOES_NOT_APPLY,
                f"patch {number}: <original_code> is empty: copy the exact lines to replace from the file",
            )
        parsed.append(FilePatch(
            number=number,
            path=spec.group("path").strip(),
            start_line=numbered_from if numbered_from is not None else start,
            end_line=end if numbered_from is None else numbered_from + len(original) - 1,
            original_code="".join(line + "\n" for line in original),
            patched_code="".join(line + "\n" for line in patched),
        ))
    return parsed


# --- locating ------------------------------------------------------------------------------------


def is_test_path(path: str) -> bool:
    """Whether a relative '/'-path is part of a test suite: under ``tests``/``test``, ``test_*.py``,
    ``*_test.py`` or ``conftest.py``."""
    pure = PurePosixPath(path)
    name = pure.name
    return (
        any(part in ("tests", "test") for part in pure.parts[:-1])
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def _shorten(text: str) -> str:
    text = text.rstrip()
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _content(line: str) -> str:
    """A file line without its line ending and trailing whitespace (the comparison key)."""
    return line.rstrip()


def _not_found_detail(patch: FilePatch, path: str, keys: list[str], wanted: list[str]) -> str:
    """Why ``wanted`` is not in the file: the longest partial match, or an indentation mismatch."""
    n = len(wanted)
    stripped_file = [k.strip() for k in keys]
    stripped_wanted = [w.strip() for w in wanted]
    for i in range(len(keys) - n + 1):
        if stripped_file[i:i + n] == stripped_wanted:
            return (f"patch {patch.number}: <original_code> is not in {path} as written, but lines "
                    f"{i + 1}-{i + n} match when indentation is ignored: copy the lines exactly, "
                    "indentation included")
    best, best_at = 0, -1
    for i in range(len(keys)):
        length = 0
        while length < n and i + length < len(keys) and keys[i + length] == wanted[length]:
            length += 1
        if length > best:
            best, best_at = length, i
    if best == 0:
        return (f"patch {patch.number}: <original_code> is not in {path}: its first line "
                f"{_shorten(wanted[0])!r} occurs nowhere in the file; retrieve the code and copy it exactly")
    line = best_at + best + 1
    actual = keys[best_at + best] if best_at + best < len(keys) else "(end of file)"
    return (f"patch {patch.number}: <original_code> is not in {path}: its first {best} line(s) match "
            f"from line {best_at + 1}, but line {line} of the file is {_shorten(actual)!r} where you "
            f"wrote {_shorten(wanted[best])!r}; retrieve the current code and copy it exactly")


def _locate(patch: FilePatch, path: str, keys: list[str]) -> int:
    """The 0-based index of the one place ``patch.original_code`` occurs in the file's line keys."""
    wanted = [_content(line) for line in patch.original_code.splitlines()]
    n = len(wanted)
    places = [i for i in range(len(keys) - n + 1) if keys[i:i + n] == wanted]
    if len(places) == 1:
        return places[0]
    if not places:
        raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, _not_found_detail(patch, path, keys, wanted))
    if patch.start_line is not None and patch.start_line - 1 in places:
        return patch.start_line - 1
    where = ", ".join(f"{i + 1}-{i + n}" if n > 1 else str(i + 1) for i in places[:10])
    raise PatchRejectedError(
        PatchStatus.DOES_NOT_APPLY,
        f"patch {patch.number}: <original_code> is ambiguous: it occurs {len(places)} times in {path} "
        f"(lines {where}); include more surrounding lines, or the line numbers of the one to change",
    )


def _eol(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    return "\n" if line.endswith("\n") else ""


def _splice(lines: list[str], at: int, count: int, patched: str) -> list[str]:
    """``lines`` with ``lines[at:at+count]`` replaced by the patched lines, line endings kept."""
    new_lines = patched.splitlines()
    eol = _eol(lines[at]) or "\n"
    last_eol = _eol(lines[at + count - 1])
    replacement = [line + eol for line in new_lines]
    if replacement:
        replacement[-1] = new_lines[-1] + last_eol
    elif not last_eol and at > 0:  # deleting the last lines of a file without a final newline
        lines = [*lines[: at - 1], lines[at - 1].rstrip("\r\n"), *lines[at:]]
    return [*lines[:at], *replacement, *lines[at + count:]]


def _compile_error(path: str, text: str) -> str | None:
    """None when ``text`` compiles; else where and why, with the offending line."""
    try:
        with warnings.catch_warnings(action="ignore"):
            compile(text.removeprefix("\ufeff"), path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else path
        detail = f"{where}: {exc.msg}"
        if exc.lineno:
            lines = text.splitlines()
            if 0 < exc.lineno <= len(lines):
                detail += f"\n{exc.lineno}:{lines[exc.lineno - 1]}"
        return detail
    except ValueError as exc:  # e.g. null bytes
        return f"{path}: {exc}"
    return None


def apply_patches(
    root: Path, patches: Sequence[FilePatch], *, allow_test_edits: bool = False
) -> dict[str, str]:
    """The whole new text of every file the patches change (relative '/'-path -> text).

    Raises ``PatchRejectedError``: ``DOES_NOT_APPLY`` for a path outside the repository, missing,
    not ``.py``, a test file (unless ``allow_test_edits``), not UTF-8; original code not found or
    ambiguous; overlapping patches; patches that change nothing but trailing whitespace.
    ``DOES_NOT_COMPILE`` when a changed file does not compile.
    """
    by_file: dict[str, list[FilePatch]] = {}
    absolute_of: dict[str, Path] = {}
    for patch in patches:
        try:
            relative, absolute = resolve_repo_path(root, patch.path)
        except ValueError as exc:
            raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, f"patch {patch.number}: {exc}") from None
        if not relative.endswith(".py"):
            raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, f"patch {patch.number}: {relative} is "
                                     "not a Python source file: patches may change only .py files")
        if not allow_test_edits and is_test_path(relative):
            raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, f"patch {patch.number}: {relative} is "
                                     "part of the tests: fix the code under test, not the tests")
        if not absolute.is_file():
            raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, f"patch {patch.number}: no file "
                                     f"{relative!r} in the repository (patches edit existing files)")
        by_file.setdefault(relative, []).append(patch)
        absolute_of[relative] = absolute

    new_texts: dict[str, str] = {}
    for relative, file_patches in by_file.items():
        try:
            original = absolute_of[relative].read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, f"{relative} is not UTF-8 text") from None
        bom = "\ufeff" if original.startswith("\ufeff") else ""
        lines = _LINE_RE.findall(original[len(bom):])
        keys = [_content(line) for line in lines]
        located = sorted(
            ((_locate(p, relative, keys), len(p.original_code.splitlines()), p) for p in file_patches),
            key=lambda item: item[0],
        )
        for (at, count, patch), (next_at, _, next_patch) in zip(located, located[1:], strict=False):
            if next_at < at + count:
                raise PatchRejectedError(
                    PatchStatus.DOES_NOT_APPLY,
                    f"patches {patch.number} and {next_patch.number} overlap in {relative} (lines "
                    f"{at + 1}-{at + count} and {next_at + 1}-...): merge them into one patch",
                )
        for at, count, patch in reversed(located):
            lines = _splice(lines, at, count, patch.patched_code)
        text = bom + "".join(lines)
        if keys != [_content(line) for line in lines]:
            new_texts[relative] = text
    if not new_texts:
        raise PatchRejectedError(PatchStatus.DOES_NOT_APPLY, "the patches change nothing: "
                                 "<patched_code> equals <original_code> (trailing whitespace aside)")
    for relative, text in new_texts.items():
        error = _compile_error(relative, text)
        if error is not None:
            raise PatchRejectedError(PatchStatus.DOES_NOT_COMPILE, f"the patched {relative} does not "
                                     f"compile: {error}")
    return new_texts


def _description(patches: Sequence[FilePatch]) -> str:
    places = []
    for patch in patches:
        where = patch.path
        if patch.start_line is not None:
            where += f":{patch.start_line}-{patch.end_line or patch.start_line}"
        places.append(where)
    return "edits " + ", ".join(places[:4]) + (f" and {len(places) - 4} more" if len(places) > 4 else "")


def build_patch_candidate(
    answer: str,
    root: Path,
    *,
    candidate_id: str,
    target: str | None = None,
    cost_usd: float = 0.0,
    allow_test_edits: bool = False,
) -> PatchCandidate | PatchEvaluation:
    """The candidate an answer's ``<patches>`` make of the repository at ``root``, or why not.

    Returns a ``PatchCandidate`` (generator ``"patcher"``, id ``candidate_id``) whose ``files``
    hold the whole new texts, or a ``PatchEvaluation`` for ``candidate_id`` with status
    ``DOES_NOT_APPLY`` / ``DOES_NOT_COMPILE`` and the reason in ``detail``.
    """
    try:
        patches = parse_patches(answer)
        files = apply_patches(root, patches, allow_test_edits=allow_test_edits)
    except PatchRejectedError as exc:
        return PatchEvaluation(candidate=candidate_id, status=exc.status, detail=exc.detail)
    return PatchCandidate(
        id=candidate_id,
        generator="patcher",
        target=target,
        description=_description(patches),
        files=files,
        cost_usd=cost_usd,
    )
