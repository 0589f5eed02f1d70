"""Find, extract and replace one function in a module's source text, and diff the result.

Every patch EQUISA makes (inspection patches, mutation candidates, LLM fixes) is a whole-function
replacement, so this module is the one place where source text is edited.

Choice of tools, part by part:

* Locating functions uses ``ast``: it is the fastest full parser in the stdlib and gives exact
  ``lineno``/``end_lineno`` for every definition (``lineno`` is the ``def`` line since 3.8, the
  decorators have their own line numbers). A libcst parse is an order of magnitude slower and
  needs a metadata pass to give positions.
* Finding the lines that lie inside multi-line strings uses ``tokenize``: those lines are string
  content and must never be re-indented. ``textwrap.dedent`` is not used for the same reason: it
  refuses to dedent when a string holds column-0 text, and it blanks whitespace-only lines, which
  would turn "replace a function by itself" into a change.
* Editing splices whole physical lines: bytes outside the replaced span are copied, never
  re-rendered, so line endings, the encoding cookie, a BOM and a missing final newline survive by
  construction. libcst would also round-trip them, but gives nothing a line splice does not, since
  a definition always occupies whole lines.
* Validation re-parses the new code and compiles the edited module with the stdlib compiler, which
  also catches errors ``ast.parse`` lets through (a ``nonlocal`` without a binding, ``await``
  outside an async function).
* Diffs are built from ``difflib.SequenceMatcher`` opcodes (``autojunk=False``, so popular lines
  such as blank ones still align) in the exact text format ``git diff`` writes.
"""

from __future__ import annotations

import ast
import difflib
import functools
import io
import re
import tokenize
import warnings
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.errors import FunctionNotFoundError, InvalidReplacementError, SourceEditError

__all__ = [
    "FunctionLocation",
    "list_functions",
    "find_function",
    "module_qualname",
    "function_source",
    "replace_function",
    "unified_diff",
    "combine_diffs",
]

_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Whitespace the tokenizer accepts in indentation.
_WS = " \t\f"
# Physical lines as the tokenizer sees them: "\r\n", "\r" and "\n" all end a line.
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# A line of a diff: git splits on "\n" only; a "\r" is part of the line's content.
_DIFF_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_MAX_CANDIDATES = 10
_DIFF_CONTEXT = 3
_NO_NEWLINE = "\\ No newline at end of file\n"


class FunctionLocation(BaseModel):
    """Where one function definition sits in a module's source; lines are 1-based, inclusive."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fqn: str = Field(description="'module.qualname' when the module was given, else the qualname.")
    qualname: str = Field(description="As Python spells __qualname__, e.g. 'outer.<locals>.inner'.")
    def_line: int = Field(ge=1, description="The line holding 'def' (or 'async def').")
    start_line: int = Field(ge=1, description="The first decorator's line; def_line if undecorated.")
    end_line: int = Field(ge=1, description="The last line of the body.")
    indent: str = Field(description="The leading whitespace of the def line, e.g. '    '.")
    is_async: bool


# --- locating ------------------------------------------------------------------------------------


def _split_lines(text: str) -> list[str]:
    """Physical lines with their endings, split where the tokenizer splits them."""
    return _LINE_RE.findall(text)


def _eol(line: str) -> str:
    """The line ending of one physical line ('' for a last line without one)."""
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""


def _leading_ws(line: str) -> str:
    return line[: len(line) - len(line.lstrip(_WS))]


def _describe_error(exc: SyntaxError | ValueError) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})" if exc.lineno else str(exc.msg)
    return str(exc)


def _parse(text: str) -> ast.Module:
    """``ast.parse`` with the compiler's warnings silenced.

    User code often holds e.g. invalid escape sequences; under ``-W error`` their
    SyntaxWarning/DeprecationWarning would otherwise turn into a SyntaxError here.
    """
    with warnings.catch_warnings(action="ignore"):
        return ast.parse(text)


def _compile(text: str) -> None:
    """Compile to bytecode (symbol-table errors included), warnings silenced; raises SyntaxError."""
    with warnings.catch_warnings(action="ignore"):
        compile(text, "<edited>", "exec", dont_inherit=True)


@functools.lru_cache(maxsize=8)
def _parse_module(source: str) -> tuple[str, str, ast.Module, tuple[tuple[str, _FunctionNode], ...]]:
    """Split off a BOM (which ``ast`` rejects in a str), parse the rest, list its functions.

    Cached: localization reads function after function of the same (often large) module, and
    parsing it is most of the cost. The tree is shared between callers, so it is read, never changed.
    """
    bom = "\ufeff" if source.startswith("\ufeff") else ""
    text = source[len(bom) :]
    try:
        tree = _parse(text)
    except (SyntaxError, ValueError) as exc:
        raise SourceEditError(f"the module does not parse: {_describe_error(exc)}") from exc
    return bom, text, tree, tuple(_functions(tree))


def _explicit_globals(scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    """Names declared ``global`` directly in a scope (nested scopes excluded)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(scope.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(_statement_children(node))
    return names


def _statement_children(node: ast.AST) -> list[ast.AST]:
    """The children of a node that can hold definitions; expressions never do."""
    return [
        child
        for child in ast.iter_child_nodes(node)
        if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)
    ]


def _collect(
    node: ast.AST, prefix: str, explicit_globals: set[str], out: list[tuple[str, _FunctionNode]]
) -> None:
    """Append (qualname, node) for every function under ``node``, in source order.

    Qualnames follow the compiler: a function's children get ``<name>.<locals>.``, a class's
    ``<name>.``, and a name declared ``global`` in the enclosing scope is left bare.
    """
    for child in _statement_children(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            qualname = child.name if child.name in explicit_globals else prefix + child.name
            if isinstance(child, ast.ClassDef):
                inner_prefix = qualname + "."
            else:
                out.append((qualname, child))
                inner_prefix = qualname + ".<locals>."
            _collect(child, inner_prefix, _explicit_globals(child), out)
        else:
            _collect(child, prefix, explicit_globals, out)


def _functions(tree: ast.Module) -> list[tuple[str, _FunctionNode]]:
    out: list[tuple[str, _FunctionNode]] = []
    _collect(tree, "", set(), out)
    return out


def _alias(qualname: str) -> str:
    """The dotted convenience spelling: 'outer.<locals>.inner' -> 'outer.inner'."""
    return qualname.replace(".<locals>.", ".")


def _location(
    qualname: str, node: _FunctionNode, lines: Sequence[str], module: str | None
) -> FunctionLocation:
    def_line = node.lineno
    start_line = min((d.lineno for d in node.decorator_list), default=def_line)
    if node.decorator_list:
        # A decorator expression may start below its '@' (after a backslash continuation).
        while start_line > 1 and not lines[start_line - 1].lstrip(_WS).startswith("@"):
            start_line -= 1
    end_line = node.end_lineno if node.end_lineno is not None else def_line
    return FunctionLocation(
        fqn=f"{module}.{qualname}" if module else qualname,
        qualname=qualname,
        def_line=def_line,
        start_line=start_line,
        end_line=end_line,
        indent=_leading_ws(lines[def_line - 1]),
        is_async=isinstance(node, ast.AsyncFunctionDef),
    )


def _not_found_message(qualname: str, known: Sequence[str]) -> str:
    if not known:
        return f"no function {qualname!r} in the module: it defines no functions"
    spellings: dict[str, str] = {}
    for name in known:
        spellings.setdefault(name, name)
        spellings.setdefault(_alias(name), name)
    close = difflib.get_close_matches(qualname, list(spellings), n=len(spellings), cutoff=0.6)
    near = list(dict.fromkeys(spellings[s] for s in close))[:_MAX_CANDIDATES]
    if near:
        return f"no function {qualname!r} in the module; near candidates: " + ", ".join(near)
    shown = ", ".join(known[:_MAX_CANDIDATES])
    more = f" and {len(known) - _MAX_CANDIDATES} more" if len(known) > _MAX_CANDIDATES else ""
    return f"no function {qualname!r} in the module; it defines: {shown}{more}"


def _locate(
    source: str, qualname: str, occurrence: int | None, module: str | None
) -> tuple[str, list[str], FunctionLocation, _FunctionNode]:
    """Parse ``source`` and find one definition; return (bom, lines, location, node).

    ``name#k`` (as the probe names a definition that a later one of the same name shadows, e.g. a
    property's getter) is the k-th definition of ``name`` in source order, unless ``occurrence``
    is given."""
    base, hash_mark, number = qualname.rpartition("#")
    if hash_mark and base and number.isdigit() and int(number) >= 1:
        qualname, occurrence = base, (int(number) - 1 if occurrence is None else occurrence)
    bom, text, _, found = _parse_module(source)
    matches = [(q, n) for q, n in found if q == qualname]
    if not matches:
        matches = [(q, n) for q, n in found if _alias(q) == qualname]
    if not matches:
        known = list(dict.fromkeys(q for q, _ in found))
        raise FunctionNotFoundError(_not_found_message(qualname, known))
    index = len(matches) - 1 if occurrence is None else occurrence
    if not -len(matches) <= index < len(matches):
        raise FunctionNotFoundError(
            f"function {qualname!r} is defined {len(matches)} time(s); occurrence {occurrence} does not exist"
        )
    canonical, node = matches[index]
    lines = _split_lines(text)
    return bom, lines, _location(canonical, node, lines, module), node


def list_functions(source: str, *, module: str | None = None) -> list[FunctionLocation]:
    """Every function definition in ``source``, in source order (redefinitions included)."""
    _, text, _, found = _parse_module(source)
    lines = _split_lines(text)
    return [_location(q, node, lines, module) for q, node in found]


def find_function(
    source: str, qualname: str, *, occurrence: int | None = None, module: str | None = None
) -> FunctionLocation:
    """Locate the function ``qualname`` (``Cls.m``, ``outer.<locals>.inner`` or ``outer.inner``).

    Several definitions may share a qualname (property getter and setter, conditional
    redefinition): the last one, which Python binds, is chosen unless ``occurrence`` gives the
    0-based index among them in source order (negative counts from the end), or the qualname is
    spelt ``name#k`` (the k-th, 1-based, as the probe names the shadowed ones). ``module`` only
    fills in ``fqn``. Raises FunctionNotFoundError naming near candidates, SourceEditError when
    ``source`` does not parse.
    """
    return _locate(source, qualname, occurrence, module)[2]


def module_qualname(fqn: str, module: str) -> str:
    """Strip ``module`` from ``fqn``: ('pkg.mod.Cls.m', 'pkg.mod') -> 'Cls.m'.

    Raises ValueError when ``fqn`` does not name something inside ``module``.
    """
    prefix = module + "."
    if not module or not fqn.startswith(prefix) or len(fqn) == len(prefix):
        raise ValueError(f"{fqn!r} does not name a function inside module {module!r}")
    return fqn[len(prefix) :]


# --- dedent / reindent -----------------------------------------------------------------------------


def _string_continuation_lines(lines: Sequence[str]) -> frozenset[int]:
    """0-based indices of lines that continue a multi-line string: their text is data.

    On a tokenize error the lines found so far are returned; the caller's parse reports it.
    """
    text = "".join(line + "\n" for line in lines)
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # 3.12+ tokenizes f-strings
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    protected: set[int] = set()
    open_fstrings: list[int] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING:
                protected.update(range(tok.start[0], tok.end[0]))
            elif fstring_start is not None and tok.type == fstring_start:
                open_fstrings.append(tok.start[0])
            elif fstring_end is not None and tok.type == fstring_end and open_fstrings:
                protected.update(range(open_fstrings.pop(), tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return frozenset(protected)


def _is_blank(line: str) -> bool:
    return not line.strip(_WS)


def _dedent(lines: Sequence[str], margin: str, protected: frozenset[int]) -> list[str]:
    """Remove ``margin`` from each code line.

    String-continuation lines and whitespace-only lines are kept verbatim (so that dedent then
    indent is the identity); a code line indented less than the margin (a comment, a bracket
    continuation) goes to column 0.
    """
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in protected or _is_blank(line):
            out.append(line)
        elif line.startswith(margin):
            out.append(line[len(margin) :])
        else:
            out.append(line.lstrip(_WS))
    return out


def _indent(lines: Sequence[str], indent: str, protected: frozenset[int]) -> list[str]:
    """Prefix each code line with ``indent``; the inverse of ``_dedent``."""
    return [line if i in protected or _is_blank(line) else indent + line for i, line in enumerate(lines)]


def _expand_leading_tabs(lines: Sequence[str], tabsize: int, protected: frozenset[int]) -> list[str]:
    """Turn tabs in the indentation of code lines into spaces (for files indented with spaces)."""
    out: list[str] = []
    for i, line in enumerate(lines):
        ws = _leading_ws(line)
        if i in protected or _is_blank(line) or "\t" not in ws:
            out.append(line)
        else:
            out.append(ws.expandtabs(tabsize) + line[len(ws) :])
    return out


def _indent_unit(lines: Sequence[str], node: _FunctionNode, indent: str) -> str:
    """One level of indentation as the original function writes it (default four spaces)."""
    first = node.body[0].lineno
    if first > node.lineno:
        ws = _leading_ws(lines[first - 1])
        if ws.startswith(indent) and len(ws) > len(indent):
            return ws[len(indent) :]
    return "\t" if "\t" in indent else "    "


def _span_lines(lines: Sequence[str], start: int, end: int) -> list[str]:
    """Lines ``start``..``end`` (1-based, inclusive) without their endings."""
    return [line.rstrip("\r\n") for line in lines[start - 1 : end]]


def function_source(source: str, qualname: str, *, occurrence: int | None = None) -> str:
    """The function's source, decorators included, dedented to column 0 with '\\n' line ends.

    Text inside multi-line strings is left as it is. See ``find_function`` for ``occurrence``.
    """
    _, lines, loc, _ = _locate(source, qualname, occurrence, None)
    span = _span_lines(lines, loc.start_line, loc.end_line)
    return "\n".join(_dedent(span, loc.indent, _string_continuation_lines(span))) + "\n"


# --- replacing -----------------------------------------------------------------------------------


def _code_lines(new_code: str) -> list[str]:
    """The new code's lines without endings, leading and trailing blank lines removed."""
    lines = [line.rstrip("\r\n") for line in _split_lines(new_code.removeprefix("\ufeff"))]
    while lines and _is_blank(lines[0]):
        lines.pop(0)
    while lines and _is_blank(lines[-1]):
        lines.pop()
    return lines


def _margin(lines: Sequence[str]) -> str:
    """The indentation of the first code line (leading comments do not count)."""
    for line in lines:
        stripped = line.lstrip(_WS)
        if stripped and not stripped.startswith("#"):
            return line[: len(line) - len(stripped)]
    return ""


def _describe_statements(body: Sequence[ast.stmt]) -> str:
    if not body:
        return "no statement"
    kinds = []
    for stmt in body[:5]:
        name = getattr(stmt, "name", None)
        kind = type(stmt).__name__
        kinds.append(f"{kind} {name!r}" if isinstance(name, str) else kind)
    more = ", ..." if len(body) > 5 else ""
    return f"{len(body)} statement(s): " + ", ".join(kinds) + more


def _signature_parts(node: _FunctionNode) -> dict[str, tuple[str, str]]:
    """What must not change, as (comparable dump, readable text) per part.

    Async-ness, the ``ast.arguments`` dump (names, defaults, annotations, kinds), the return
    annotation and, on 3.12+, the type parameters.
    """
    kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = node.returns
    type_params = getattr(node, "type_params", ())
    return {
        "async-ness": (kind, kind),
        "parameters": (ast.dump(node.args), f"({ast.unparse(node.args)})"),
        "return annotation": (
            ast.dump(returns) if returns is not None else "",
            ast.unparse(returns) if returns is not None else "none",
        ),
        "type parameters": (
            "|".join(ast.dump(t) for t in type_params),
            "[" + ", ".join(ast.unparse(t) for t in type_params) + "]",
        ),
    }


def _check_signature(qualname: str, old: _FunctionNode, new: _FunctionNode) -> None:
    old_parts, new_parts = _signature_parts(old), _signature_parts(new)
    changes = [
        f"{part} {old_parts[part][1]!r} became {new_parts[part][1]!r}"
        for part in old_parts
        if old_parts[part][0] != new_parts[part][0]
    ]
    if changes:
        raise InvalidReplacementError(
            f"the new code changes the signature of {qualname!r}: " + "; ".join(changes)
        )


def _parse_replacement(qualname: str, code_lines: Sequence[str]) -> _FunctionNode:
    if not code_lines:
        raise InvalidReplacementError(f"the new code for {qualname!r} is empty")
    try:
        tree = _parse("\n".join(code_lines) + "\n")
    except (SyntaxError, ValueError) as exc:
        raise InvalidReplacementError(
            f"the new code for {qualname!r} does not parse: {_describe_error(exc)}"
        ) from exc
    body = tree.body
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        raise InvalidReplacementError(
            f"the new code for {qualname!r} must be exactly one function definition; "
            f"it has {_describe_statements(body)}"
        )
    return body[0]


def _check_compiles(qualname: str, result: str, original: str) -> None:
    """Reject an edit after which the module no longer compiles (or, if it never did, parses)."""
    try:
        _compile(result)
        return
    except (SyntaxError, ValueError) as exc:
        error = exc
    try:
        _compile(original)
    except (SyntaxError, ValueError):
        try:  # the module never compiled; require only that the edit keeps it parsing
            _parse(result)
            return
        except (SyntaxError, ValueError) as exc:
            error = exc
    raise InvalidReplacementError(
        f"the module does not compile after replacing {qualname!r}: {_describe_error(error)}"
    ) from error


def replace_function(
    source: str,
    qualname: str,
    new_code: str,
    *,
    allow_signature_change: bool = False,
    occurrence: int | None = None,
) -> str:
    """Replace one function with ``new_code``, re-indented to the original indentation.

    ``new_code`` may come at any indentation (tabs included; in a file indented with spaces they
    become spaces), with blank lines around it and leading comments. If it carries decorators
    they replace the original ones, otherwise the original decorators stay (and leading comments
    land between them and the ``def``). Everything outside the replaced lines is kept byte for byte; new
    lines take the file's line ending. Replacing a function by its own ``function_source`` returns
    ``source`` unchanged. Raises InvalidReplacementError when the new code does not parse, is not
    exactly one function, renames it, changes its signature (unless ``allow_signature_change``)
    or leaves a module that does not compile.
    """
    bom, lines, loc, old_node = _locate(source, qualname, occurrence, None)
    raw = _code_lines(new_code)
    raw = _dedent(raw, _margin(raw), _string_continuation_lines(raw))
    protected = _string_continuation_lines(raw)
    code = raw
    unit = _indent_unit(lines, old_node, loc.indent)
    if "\t" not in loc.indent + unit:  # the file indents with spaces: no tabs in the new code
        code = _expand_leading_tabs(raw, len(unit), protected)
    new_node = _parse_replacement(loc.qualname, code)
    if new_node.name != old_node.name:
        raise InvalidReplacementError(
            f"the new code defines {new_node.name!r}, expected {old_node.name!r} (replacing {loc.qualname!r})"
        )
    if not allow_signature_change:
        _check_signature(loc.qualname, old_node, new_node)

    start = loc.start_line if new_node.decorator_list else loc.def_line
    old_span = _span_lines(lines, start, loc.end_line)
    old_code = _dedent(old_span, loc.indent, _string_continuation_lines(old_span))
    if raw == old_code or code == old_code:  # the same code: no edit, not even a re-indent
        return source

    newline = _eol(lines[start - 1]) or next((_eol(ln) for ln in lines if _eol(ln)), "\n")
    block = newline.join(_indent(code, loc.indent, protected)) + _eol(lines[loc.end_line - 1])
    text = "".join(lines[: start - 1]) + block + "".join(lines[loc.end_line :])
    _check_compiles(loc.qualname, text, "".join(lines))
    return bom + text


# --- diffs ---------------------------------------------------------------------------------------


def _check_diff_path(path: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"diff path must be relative and '/'-separated, got {path!r}")


_C_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}


def _git_quote(name: str) -> str:
    """Quote a path the way git does (core.quotePath): C escapes, octal for other bytes."""
    if not any(ch in _C_ESCAPES or ord(ch) < 0x20 or ord(ch) >= 0x7F for ch in name):
        return name
    out = []
    for ch in name:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) >= 0x7F:
            out.extend(f"\\{byte:03o}" for byte in ch.encode("utf-8", "surrogateescape"))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _hunk_range(start: int, stop: int) -> str:
    """'start,length' as unified diffs write it: 1-based, length 1 omitted, empty at start-1."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _diff_line(prefix: str, line: str) -> str:
    return prefix + line if line.endswith("\n") else prefix + line + "\n" + _NO_NEWLINE


def unified_diff(path: str, before: str, after: str) -> str:
    """A git-style unified diff of one file (``a/path``, ``b/path``, 3 lines of context).

    ``git apply`` accepts it: lines split on '\\n' only (a '\\r' is content), a last line without
    newline is followed by ``\\ No newline at end of file``, and paths are quoted as git quotes
    them. Both sides are taken to be an existing file. Empty when ``before == after``.
    """
    _check_diff_path(path)
    if before == after:
        return ""
    a, b = _DIFF_LINE_RE.findall(before), _DIFF_LINE_RE.findall(after)
    name_a, name_b = _git_quote("a/" + path), _git_quote("b/" + path)
    tab = "\t" if " " in path else ""  # git ends ---/+++ lines with a tab when the name has a space
    out = [f"diff --git {name_a} {name_b}\n", f"--- {name_a}{tab}\n", f"+++ {name_b}{tab}\n"]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(_DIFF_CONTEXT):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_hunk_range(first[1], last[2])} +{_hunk_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_diff_line(" ", line) for line in a[i1:i2])
                continue
            out.extend(_diff_line("-", line) for line in a[i1:i2])
            out.extend(_diff_line("+", line) for line in b[j1:j2])
    return "".join(out)


def combine_diffs(diffs: Iterable[str]) -> str:
    """Join per-file diffs into one patch, skipping empty ones."""
    return "".join(d if d.endswith("\n") else d + "\n" for d in diffs if d)
