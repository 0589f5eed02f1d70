"""Code retrieval for the multi-retrieval patcher (seed 004): queries, grep, AST expansion, file ranges.

A model asks for code with tags in its answer (``parse_queries``):

* ``<grep>term</grep>``: a function, class or method name, a dotted name
  (``pkg.mod.Class.method``) or a one-line code snippet, searched as a literal string;
* ``<file>path/to/file.py</file>`` or ``<file>path/to/file.py:20-30</file>``: a file or a line range.

``retrieve`` runs the queries with three strategies and hands back prioritised, de-duplicated
snippets (``RetrievalResult``):

1. grep: every ``.py`` line holding the term, with a few lines of context. The search itself is
   injected (``SearchFn``): ``python_grep`` here, or ripgrep (``tasks.repair.patcher.ripgrep_search``),
   which gives the same hits in the same order (see ``python_grep``).
2. AST-augmented grep: each hit widened to its innermost enclosing ``def`` or ``class`` (decorators
   included), and for a name, its definitions (``def name`` / ``class name``), found by grep and
   confirmed by ``ast``; for a dotted name only the definitions whose module and enclosing classes
   match the qualifier (``Class.method`` finds ``method`` inside ``class Class``).
3. file ranges: the lines asked for (a whole file up to ``max_file_lines``).

The queries run in parallel (one thread each, ``concurrent.futures``); the results are merged in
query order, so the outcome does not depend on scheduling.

Priority (seed 004): HIGH for a whole-word match of the term and for definitions that match the
query; MEDIUM for a match inside a longer word (``total`` in ``subtotal``) and for definitions of
the last name of a dotted query whose qualifier does not match; LOW for file ranges. Overlapping
or adjacent snippets of one file are merged (the merged snippet keeps the highest priority and all
origins) and blank lines at their edges dropped; snippets already shown earlier in the
conversation are named instead of repeated, and the rest are kept, best first, while they fit in
``max_chars``; those that do not fit are named so the model can ask for them.

What is searched: ``.py`` files under the root, hidden ones included, symbolic links, files with a
NUL byte and files over 1 MiB excluded, and nothing under ``SKIP_DIR_NAMES`` (version control,
virtual environments, caches) or ``GENERATED_TESTS_DIR``. ``.gitignore`` is not consulted.
File queries may read any text file under the root outside those directories.
"""

from __future__ import annotations

import ast
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import IntEnum
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.testcode import GENERATED_TESTS_DIR

__all__ = [
    "SKIP_DIR_NAMES",
    "GENERATED_TESTS_DIR",
    "MAX_FILE_BYTES",
    "Priority",
    "RetrievalQuery",
    "GrepHit",
    "SearchFn",
    "Snippet",
    "QueryFailure",
    "RetrievalLimits",
    "RetrievalResult",
    "parse_queries",
    "strip_patches_block",
    "is_skipped",
    "resolve_repo_path",
    "iter_python_files",
    "python_grep",
    "is_whole_word",
    "number_lines",
    "retrieve",
]

#: Directory names never searched nor read, at any depth: version control, virtual environments, caches.
SKIP_DIR_NAMES: frozenset[str] = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", ".eggs", "site-packages",
    "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
})
#: Larger files are not searched (ripgrep's ``--max-filesize 1M`` skips files over 1,048,576 bytes).
MAX_FILE_BYTES = 1024 * 1024

_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME_RE = re.compile(rf"{_IDENTIFIER}(?:\.{_IDENTIFIER})*\Z")
_WORD_CHAR_RE = re.compile(r"\w")
_TAG_RE = re.compile(r"<(?P<tag>grep|file)>(?P<body>.*?)</(?P=tag)>", re.DOTALL | re.IGNORECASE)
_PATCHES_RE = re.compile(r"<patches>.*?(?:</patches>|\Z)", re.DOTALL | re.IGNORECASE)
_THINK_RE = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FILE_SPEC_RE = re.compile(r"(?P<path>.+?)(?::(?P<start>\d+)(?:\s*-\s*(?P<end>\d+))?)?\Z")


class Priority(IntEnum):
    """How relevant a snippet is likely to be; higher sorts first."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3


class RetrievalQuery(BaseModel):
    """One query from a model's answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["grep", "file"]
    text: str = Field(description="The tag's content, stripped: the grep term or the file spec.")
    path: str | None = Field(None, description="File queries: the path part of the spec.")
    start: int | None = Field(None, description="File queries: the first line asked for, when a range.")
    end: int | None = Field(None, description="File queries: the last line asked for, when a range.")

    @property
    def label(self) -> str:
        """The query as the model wrote it, e.g. ``<grep>add</grep>``."""
        return f"<{self.kind}>{self.text}</{self.kind}>"


class GrepHit(BaseModel):
    """One line holding a search term."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(description="Relative '/'-path of the file.")
    line: int = Field(ge=1, description="1-based line number.")
    text: str = Field(description="The line, without its line ending.")


#: ``search(root, term, limit)``: at most ``limit`` hits of the literal ``term`` in the searched
#: ``.py`` files, in ``python_grep``'s order.
SearchFn = Callable[[Path, str, int], list[GrepHit]]


class Snippet(BaseModel):
    """A range of lines of one file, with why it was retrieved."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    text: str = Field(description="The lines, each ending with '\\n', without line numbers.")
    priority: Priority
    origins: tuple[str, ...] = Field(description="What retrieved it, e.g. \"grep 'add'\", 'def calc.add'.")

    @property
    def header(self) -> str:
        """``path:start-end``."""
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def numbered(self) -> str:
        """The text with ``N:`` line-number prefixes, as the patch format's ``original_code`` shows it."""
        return number_lines(self.text, self.start_line)


class QueryFailure(BaseModel):
    """A query that retrieved nothing, and why (seed 004: "failed queries")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str = Field(description="The query's label.")
    reason: str


class RetrievalLimits(BaseModel):
    """How much one retrieval round may return."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_queries: int = Field(8, ge=1, description="Queries run per answer; later ones are refused.")
    max_file_queries: int = Field(1, ge=0, description="File queries run per answer (seed 004: one).")
    max_hits: int = Field(20, ge=1, description="Grep hits kept per term.")
    context_lines: int = Field(2, ge=0, description="Lines shown before and after a grep hit.")
    max_snippet_lines: int = Field(
        120, ge=1, description="Longest enclosing def/class shown whole; longer ones are not expanded."
    )
    max_file_lines: int = Field(400, ge=1, description="Lines shown of a file asked for without a range.")
    max_chars: int = Field(16_000, ge=100, description="Characters of snippets per round, headers included.")
    max_workers: int = Field(4, ge=1, description="Threads running queries.")


class RetrievalResult(BaseModel):
    """What one round of queries retrieved."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    queries: tuple[RetrievalQuery, ...]
    snippets: tuple[Snippet, ...] = Field(description="Best first: priority, then definitions first.")
    failures: tuple[QueryFailure, ...] = ()
    notes: tuple[str, ...] = Field((), description="Truncations the model should know about.")
    repeated: tuple[str, ...] = Field((), description="Headers of snippets already shown earlier.")
    omitted: tuple[str, ...] = Field((), description="Headers of snippets that did not fit in max_chars.")


# --- queries -------------------------------------------------------------------------------------


def strip_patches_block(text: str) -> str:
    """``text`` without ``<think>`` blocks and without its ``<patches>`` block (code, not queries)."""
    return _PATCHES_RE.sub("", _THINK_RE.sub("", text))


def _strip_backticks(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "`":
        text = text.strip("`").strip()
    return text


def parse_queries(answer: str) -> list[RetrievalQuery]:
    """The ``<grep>`` and ``<file>`` queries of a model's answer, in order, duplicates dropped.

    Tags inside ``<think>`` and ``<patches>`` blocks are ignored. Content is stripped (and one pair
    of surrounding backticks). A file spec ``path:START-END`` or ``path:LINE`` is split into path
    and range; anything else is taken as a path (and fails later if it names no file).
    """
    queries: list[RetrievalQuery] = []
    seen: set[tuple[str, str]] = set()
    for match in _TAG_RE.finditer(strip_patches_block(answer)):
        kind = match.group("tag").lower()
        text = _strip_backticks(match.group("body"))
        if (kind, text) in seen:
            continue
        seen.add((kind, text))
        if kind == "grep":
            queries.append(RetrievalQuery(kind="grep", text=text))
            continue
        spec = _FILE_SPEC_RE.match(text)
        if spec is None:  # empty
            queries.append(RetrievalQuery(kind="file", text=text, path=text))
            continue
        start = int(spec.group("start")) if spec.group("start") else None
        end = int(spec.group("end")) if spec.group("end") else start
        queries.append(RetrievalQuery(kind="file", text=text, path=spec.group("path").strip(),
                                      start=start, end=end))
    return queries


# --- paths ---------------------------------------------------------------------------------------


def is_skipped(relative: str) -> bool:
    """Whether a relative '/'-path lies in a directory that is never searched nor read."""
    parts = PurePosixPath(relative).parts
    if any(part in SKIP_DIR_NAMES for part in parts[:-1]):
        return True
    return relative == GENERATED_TESTS_DIR or relative.startswith(GENERATED_TESTS_DIR + "/")


def resolve_repo_path(root: Path, relative: str) -> tuple[str, Path]:
    """The normalised relative '/'-path and the absolute path of ``relative`` under ``root``.

    Raises ValueError with a reason a model can act on: an empty or absolute path, one that leaves
    the root (``..``, or a symbolic link pointing out), or one inside a skipped directory.
    """
    text = relative.strip().replace("\\", "/")
    if text.startswith("./"):
        text = text[2:]
    if not text:
        raise ValueError("the path is empty")
    if text.startswith("/") or re.match(r"[A-Za-z]:/", text):
        raise ValueError(f"{relative!r} is absolute: give a path relative to the repository root")
    pure = PurePosixPath(text)
    if ".." in pure.parts:
        raise ValueError(f"{relative!r} leaves the repository")
    normalised = pure.as_posix()
    root_resolved = root.resolve()
    absolute = root_resolved.joinpath(*pure.parts)
    try:
        absolute.resolve().relative_to(root_resolved)
    except ValueError:
        raise ValueError(f"{relative!r} leaves the repository (a symbolic link points outside)") from None
    if is_skipped(normalised) or pure.parts[0] in SKIP_DIR_NAMES:
        raise ValueError(f"{relative!r} is inside a directory that is not part of the sources")
    return normalised, absolute


# --- grep ----------------------------------------------------------------------------------------


def iter_python_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative '/'-path, path) of every searched ``.py`` file, in ripgrep's ``--sort path`` order.

    Depth first; the entries of each directory (files and subdirectories together) sorted by name.
    Symbolic links are not followed and not listed; ``SKIP_DIR_NAMES`` and ``GENERATED_TESTS_DIR``
    are pruned.
    """

    def walk(directory: Path, prefix: str) -> Iterator[tuple[str, Path]]:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            relative = prefix + entry.name
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name in SKIP_DIR_NAMES or relative == GENERATED_TESTS_DIR:
                    continue
                yield from walk(Path(entry.path), relative + "/")
            elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                yield relative, Path(entry.path)

    yield from walk(root, "")


def _read_searchable(path: Path) -> str | None:
    """The file's text for searching (UTF-8, undecodable bytes replaced); None when not searched."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:  # binary: ripgrep skips it too
        return None
    return data.decode("utf-8", errors="replace")


def python_grep(root: Path, term: str, limit: int) -> list[GrepHit]:
    """The first ``limit`` lines of searched ``.py`` files that hold the literal ``term``.

    The pure-Python search, with exactly the hits ripgrep gives for ``rg --fixed-strings
    --case-sensitive --hidden --no-ignore --encoding none --sort path --max-filesize 1M`` with the
    skip globs: files in ``iter_python_files`` order, lines split at '\\n' (a '\\r' before it is
    dropped), case-sensitive substring match, files with a NUL byte skipped.
    """
    hits: list[GrepHit] = []
    if not term or limit <= 0:
        return hits
    for relative, path in iter_python_files(root):
        text = _read_searchable(path)
        if text is None or term not in text:
            continue
        for number, line in enumerate(text.split("\n"), start=1):
            if term in line:
                hits.append(GrepHit(path=relative, line=number, text=line.removesuffix("\r")))
                if len(hits) >= limit:
                    return hits
    return hits


def is_whole_word(line: str, term: str) -> bool:
    """Whether ``term`` occurs in ``line`` not glued to a longer identifier on either side.

    A side is checked only where the term itself starts (ends) with a word character, as
    ``grep -w`` does for identifiers: ``add`` matches in ``add(1)``, not in ``address``.
    """
    check_left = bool(_WORD_CHAR_RE.match(term[:1]))
    check_right = bool(_WORD_CHAR_RE.match(term[-1:]))
    start = line.find(term)
    while start != -1:
        end = start + len(term)
        left_ok = not check_left or start == 0 or not _WORD_CHAR_RE.match(line[start - 1])
        right_ok = not check_right or end == len(line) or not _WORD_CHAR_RE.match(line[end])
        if left_ok and right_ok:
            return True
        start = line.find(term, start + 1)
    return False


def number_lines(text: str, start: int) -> str:
    """``text`` with each line prefixed ``N:`` (``11:def add(a, b):``), numbering from ``start``."""
    lines = text.splitlines()
    return "".join(f"{start + i}:{line}\n" for i, line in enumerate(lines))


# --- files and their definitions -----------------------------------------------------------------


class _Definition(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    qualname: str  # enclosing classes and functions joined by '.'
    kind: str  # 'def' or 'class'
    def_line: int
    start: int  # first decorator
    end: int


class _SourceFile:
    """One file's lines and definitions, read and parsed once."""

    def __init__(self, relative: str, path: Path) -> None:
        self.relative = relative
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        text = data.decode("utf-8-sig", errors="replace")
        self.lines = [line.removesuffix("\r") for line in text.split("\n")]
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.definitions = self._definitions(text) if relative.endswith(".py") else []

    @staticmethod
    def _definitions(text: str) -> list[_Definition]:
        try:
            with warnings.catch_warnings(action="ignore"):
                tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return []
        found: list[_Definition] = []

        def visit(node: ast.AST, chain: tuple[str, ...]) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    found.append(_Definition(
                        name=child.name,
                        qualname=".".join((*chain, child.name)),
                        kind="class" if isinstance(child, ast.ClassDef) else "def",
                        def_line=child.lineno,
                        start=start,
                        end=child.end_lineno or child.lineno,
                    ))
                    visit(child, (*chain, child.name))
                else:
                    visit(child, chain)

        visit(tree, ())
        return found

    @property
    def module(self) -> str:
        parts = self.relative.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)

    def enclosing(self, line: int) -> _Definition | None:
        """The innermost definition whose lines (decorators included) hold ``line``."""
        holding = [d for d in self.definitions if d.start <= line <= d.end]
        return min(holding, key=lambda d: d.end - d.start) if holding else None

    def text(self, start: int, end: int) -> str:
        return "".join(line + "\n" for line in self.lines[start - 1:end])


class _Files:
    """A thread-safe cache of ``_SourceFile`` for one retrieval round."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._lock = threading.Lock()
        self._files: dict[str, _SourceFile] = {}

    def get(self, relative: str) -> _SourceFile:
        with self._lock:  # held while loading, so each file is read and parsed exactly once
            cached = self._files.get(relative)
            if cached is None:
                cached = _SourceFile(relative, self._root.joinpath(*relative.split("/")))
                self._files[relative] = cached
            return cached


# --- one query -----------------------------------------------------------------------------------

# Ranks among snippets of equal priority: definitions first, then enclosing code, windows, files.
_RANK_DEFINITION, _RANK_ENCLOSING, _RANK_WINDOW, _RANK_FILE = range(4)


class _Piece(BaseModel):
    """A line range some strategy wants shown, before merging."""

    model_config = ConfigDict(frozen=True)

    path: str
    start: int
    end: int
    priority: Priority
    rank: int
    origins: tuple[str, ...]


class _QueryOutcome(BaseModel):
    pieces: list[_Piece] = []
    failure: str | None = None
    notes: list[str] = []


def _qualifier_matches(query: str, source: _SourceFile, definition: _Definition) -> bool:
    """Whether the dotted ``query`` names ``definition``: its qualname or module path ends with it."""
    names = (definition.qualname, f"{source.module}.{definition.qualname}" if source.module else "")
    return any(n == query or n.endswith("." + query) for n in names if n)


def _definition_pieces(
    root: Path, query: str, search: SearchFn, files: _Files, limits: RetrievalLimits
) -> list[_Piece]:
    """Definitions of the query's (last) name, confirmed by ast; for a dotted query, qualified ones first."""
    name = query.rsplit(".", 1)[-1]
    dotted = "." in query
    found: dict[tuple[str, int], _Definition] = {}
    sources: dict[str, _SourceFile] = {}
    for keyword in ("def", "class"):
        for hit in search(root, f"{keyword} {name}", limits.max_hits):
            if not is_whole_word(hit.text, name):
                continue
            source = files.get(hit.path)
            for definition in source.definitions:
                if definition.def_line == hit.line and definition.name == name:
                    found[(hit.path, definition.def_line)] = definition
                    sources[hit.path] = source
    pieces: list[_Piece] = []
    for (path, _), definition in sorted(found.items()):
        source = sources[path]
        matches = not dotted or _qualifier_matches(query, source, definition)
        label = f"{definition.kind} {source.module}.{definition.qualname}"
        if definition.end - definition.start + 1 > limits.max_snippet_lines:
            end = definition.start + limits.max_snippet_lines - 1
            label += f" (first {limits.max_snippet_lines} of {definition.end - definition.start + 1} lines)"
        else:
            end = definition.end
        pieces.append(_Piece(path=path, start=definition.start, end=end,
                             priority=Priority.HIGH if matches else Priority.MEDIUM,
                             rank=_RANK_DEFINITION, origins=(label,)))
    if dotted and any(p.priority == Priority.HIGH for p in pieces):
        pieces = [p for p in pieces if p.priority == Priority.HIGH]
    return pieces


def _run_grep(
    root: Path, query: RetrievalQuery, search: SearchFn, files: _Files, limits: RetrievalLimits
) -> _QueryOutcome:
    term = query.text
    if not term:
        return _QueryOutcome(failure="the query is empty")
    if "\n" in term:
        return _QueryOutcome(failure="a grep query is one line: a name or a one-line code snippet")
    outcome = _QueryOutcome()
    hits = search(root, term, limits.max_hits + 1)
    if len(hits) > limits.max_hits:
        hits = hits[: limits.max_hits]
        outcome.notes.append(
            f"{query.label} matched more than {limits.max_hits} lines; only the first "
            f"{limits.max_hits} are shown: use a more specific query"
        )
    for hit in hits:
        priority = Priority.HIGH if is_whole_word(hit.text, term) else Priority.MEDIUM
        source = files.get(hit.path)
        last = max(len(source.lines), hit.line)
        outcome.pieces.append(_Piece(
            path=hit.path, start=max(1, hit.line - limits.context_lines),
            end=min(last, hit.line + limits.context_lines), priority=priority, rank=_RANK_WINDOW,
            origins=(f"grep {term!r}",),
        ))
        definition = source.enclosing(hit.line)
        if definition is not None and definition.end - definition.start + 1 <= limits.max_snippet_lines:
            outcome.pieces.append(_Piece(
                path=hit.path, start=definition.start, end=definition.end, priority=priority,
                rank=_RANK_ENCLOSING,
                origins=(f"enclosing {definition.kind} {source.module}.{definition.qualname}",),
            ))
    if _NAME_RE.match(term):
        outcome.pieces.extend(_definition_pieces(root, term, search, files, limits))
    if not outcome.pieces:
        outcome.failure = f"no line of a .py file contains {term!r}"
    return outcome


def _directory_listing(directory: Path, relative: str, limit: int = 40) -> str:
    try:
        names = sorted(
            e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
            for e in os.scandir(directory)
            if e.name not in SKIP_DIR_NAMES and not e.name.startswith(".")
        )
    except OSError:
        return ""
    shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
    return f"{relative or '.'} is a directory holding: {shown or '(nothing)'}"


def _run_file(root: Path, query: RetrievalQuery, files: _Files, limits: RetrievalLimits) -> _QueryOutcome:
    spec = query.path or ""
    if spec.strip() in ("", ".", "./"):
        return _QueryOutcome(failure=_directory_listing(root, ""))
    try:
        relative, absolute = resolve_repo_path(root, spec)
    except ValueError as exc:
        return _QueryOutcome(failure=str(exc))
    if absolute.is_dir():
        return _QueryOutcome(failure=_directory_listing(absolute, relative))
    if not absolute.is_file():
        hint = " (a range is written path:START-END)" if ":" in spec else ""
        return _QueryOutcome(failure=f"no file {relative!r} in the repository{hint}")
    try:
        size = absolute.stat().st_size
        binary = b"\0" in absolute.read_bytes()[:8192] if size else False
    except OSError as exc:
        return _QueryOutcome(failure=f"cannot read {relative}: {exc.strerror or exc}")
    if binary:
        return _QueryOutcome(failure=f"{relative} is a binary file")
    if size > 4 * MAX_FILE_BYTES:
        return _QueryOutcome(failure=f"{relative} is too large to show ({size} bytes)")
    source = files.get(relative)
    count = len(source.lines)
    if count == 0:
        return _QueryOutcome(failure=f"{relative} is empty")
    outcome = _QueryOutcome()
    if query.start is None:
        start, end = 1, min(count, limits.max_file_lines)
        if count > limits.max_file_lines:
            outcome.notes.append(
                f"{relative} has {count} lines; lines 1-{end} are shown: ask for a range, e.g. "
                f"<file>{relative}:{end + 1}-{min(count, end + limits.max_file_lines)}</file>"
            )
    else:
        start, end = query.start, query.end if query.end is not None else query.start
        if start < 1 or end < start:
            return _QueryOutcome(failure=f"bad line range {start}-{end}: write path:START-END with "
                                         "1 <= START <= END")
        if start > count:
            return _QueryOutcome(failure=f"{relative} has only {count} lines")
        end = min(end, count)
        if end - start + 1 > limits.max_file_lines:
            end = start + limits.max_file_lines - 1
            outcome.notes.append(f"{query.label}: only lines {start}-{end} are shown "
                                 f"(at most {limits.max_file_lines} lines per file query)")
    outcome.pieces.append(_Piece(path=relative, start=start, end=end, priority=Priority.LOW,
                                 rank=_RANK_FILE, origins=(f"file {relative}:{start}-{end}",)))
    return outcome


# --- merging -------------------------------------------------------------------------------------


def _merge(pieces: Sequence[_Piece]) -> list[_Piece]:
    """Overlapping or adjacent pieces of one file joined: highest priority, best rank, all origins."""
    merged: list[_Piece] = []
    by_path: dict[str, list[_Piece]] = {}
    for piece in pieces:
        by_path.setdefault(piece.path, []).append(piece)
    for path, group in by_path.items():
        group = sorted(group, key=lambda p: (p.start, p.end))
        current = group[0]
        for piece in group[1:]:
            if piece.start <= current.end + 1:
                current = _Piece(
                    path=path, start=current.start, end=max(current.end, piece.end),
                    priority=max(current.priority, piece.priority), rank=min(current.rank, piece.rank),
                    origins=current.origins + tuple(o for o in piece.origins if o not in current.origins),
                )
            else:
                merged.append(current)
                current = piece
        merged.append(current)
    return merged


def _trim_blank_edges(files: _Files, piece: _Piece) -> _Piece:
    """A grep or AST piece without blank lines at its edges (file ranges are shown as asked)."""
    if piece.rank == _RANK_FILE:
        return piece
    lines = files.get(piece.path).lines
    start, end = piece.start, min(piece.end, len(lines))
    while start < end and not lines[start - 1].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return piece if (start, end) == (piece.start, piece.end) else piece.model_copy(
        update={"start": start, "end": end})


def _shown_before(piece: _Piece, already_shown: Sequence[tuple[str, int, int]]) -> bool:
    return any(path == piece.path and start <= piece.start and piece.end <= end
               for path, start, end in already_shown)


def _rendered_size(snippet: Snippet) -> int:
    """Characters the snippet takes in a prompt: its numbered text plus a header line and fences."""
    return len(snippet.numbered()) + len(snippet.header) + sum(len(o) for o in snippet.origins) + 40


def retrieve(
    root: Path,
    queries: Sequence[RetrievalQuery],
    *,
    search: SearchFn | None = None,
    limits: RetrievalLimits | None = None,
    already_shown: Sequence[tuple[str, int, int]] = (),
) -> RetrievalResult:
    """Run ``queries`` against the repository at ``root``: snippets, failures and notes.

    ``search`` is the grep engine (``python_grep`` when None). ``already_shown`` holds
    ``(path, start, end)`` ranges the model has seen: a snippet inside one is only named in
    ``repeated``. At most ``limits.max_queries`` queries run (``max_file_queries`` of them file
    queries); the others fail with the reason.
    """
    limits = limits or RetrievalLimits()
    search = search or python_grep
    files = _Files(root)
    accepted: list[RetrievalQuery] = []
    failures: dict[int, QueryFailure] = {}
    file_queries = 0
    for index, query in enumerate(queries):
        if len(accepted) >= limits.max_queries:
            failures[index] = QueryFailure(query=query.label, reason=f"not run: at most "
                                           f"{limits.max_queries} queries per answer")
            continue
        if query.kind == "file":
            if file_queries >= limits.max_file_queries:
                failures[index] = QueryFailure(query=query.label, reason=f"not run: at most "
                                               f"{limits.max_file_queries} file query per answer")
                continue
            file_queries += 1
        accepted.append(query)

    def run(query: RetrievalQuery) -> _QueryOutcome:
        if query.kind == "grep":
            return _run_grep(root, query, search, files, limits)
        return _run_file(root, query, files, limits)

    with ThreadPoolExecutor(max_workers=limits.max_workers, thread_name_prefix="retrieve") as pool:
        outcomes = list(pool.map(run, accepted))

    pieces: list[_Piece] = []
    notes: list[str] = []
    ran = iter(zip(accepted, outcomes, strict=True))
    for index, query in enumerate(queries):
        if index in failures:
            continue
        query_ran, outcome = next(ran)
        assert query_ran is query
        pieces.extend(outcome.pieces)
        notes.extend(outcome.notes)
        if outcome.failure is not None:
            failures[index] = QueryFailure(query=query.label, reason=outcome.failure)

    fresh: list[_Piece] = []
    repeated: list[str] = []
    for piece in map(partial(_trim_blank_edges, files), _merge(pieces)):
        if _shown_before(piece, already_shown):
            repeated.append(f"{piece.path}:{piece.start}-{piece.end}")
        else:
            fresh.append(piece)
    fresh.sort(key=lambda p: (-p.priority, p.rank, p.path, p.start))

    snippets: list[Snippet] = []
    omitted: list[str] = []
    budget = limits.max_chars
    for piece in fresh:
        snippet = Snippet(path=piece.path, start_line=piece.start, end_line=piece.end,
                          text=files.get(piece.path).text(piece.start, piece.end),
                          priority=piece.priority, origins=piece.origins)
        size = _rendered_size(snippet)
        if size <= budget:
            snippets.append(snippet)
            budget -= size
        else:
            omitted.append(snippet.header)
    return RetrievalResult(
        queries=tuple(queries),
        snippets=tuple(snippets),
        failures=tuple(failures[i] for i in sorted(failures)),
        notes=tuple(notes),
        repeated=tuple(repeated),
        omitted=tuple(omitted),
    )
