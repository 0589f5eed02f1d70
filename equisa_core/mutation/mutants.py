"""Deterministic mutants of one function: small, verified source edits, most likely fixes first.

``mutate_function`` takes one function definition (as ``source_edit.function_source`` returns it)
and lists its mutants: the function with one small change, such as ``>`` turned into ``>=``, a
condition negated, a constant moved by one or a statement removed. Three users share it:
mutation-based evidence in fault localization, the deterministic repair search (a mutant that
makes the failing tests pass is a candidate patch) and the mutation score of generated tests.

Ordering. Mutants come by operator priority (the order of ``OPERATORS``), then by position in
the function, then by edit size, then in the order they were made. The priority is a judgement
of how often each kind of fix appears in studies of single-statement bugs (wrong boundary in a
comparison, wrong boolean connective, wrong constant, off-by-one, wrong operator, missing None
check, wrong variable), with the operators that make many mutants per site (``variable_swap``,
statement removal and duplication) late, so that a budget reaches the cheap, likely ones first.
Duplicates (equal ``ast.dump``) keep their first place; ``max_mutants`` truncates last. The edit
size is the number of tokens changed (a replaced token counts once: ``>`` -> ``>=`` is 1,
``n`` -> ``n + 1`` is 2, an inserted guard is 7, a removed statement its own tokens).

Every mutant is a minimal text edit. The changed node's span (``lineno``/``col_offset`` to
``end_lineno``/``end_col_offset``, columns in UTF-8 bytes) is replaced in the original text, so
comments and formatting outside the span are byte-identical: a repair's diff is then one token
(``>`` -> ``>=``), not a re-rendered function. Operator swaps edit only the operator token; ``not``
and ``+ 1`` are inserted next to the operand. ``ast.unparse`` renders only replacement fragments,
and the whole changed node only as a fallback. Statement removal and duplication splice whole
lines (removing the only statement of a block leaves ``pass``); a statement that shares a line
(``if x: return 1``, ``a = 1; b = 2``) is not removed or duplicated, and an ``elif`` only goes
with its whole ``if``.

Every mutant is verified, not trusted: the intended change is applied to the original AST, the
edited text is parsed and must dump equal to it (so precedence can never silently change the
meaning: when ``not a or b`` would parse as ``(not a) or b`` the edit is retried as
``not (a or b)``), it must compile when the original does, and it must differ from the original.
ASTs are compared through a structural hash that reuses the hashes of untouched subtrees (see
``edits.Shape``), so a mutant of a long function costs one path of its tree, not a whole ``ast.dump``.
The docstring, decorators, signature (defaults and annotations included), annotations in the body
and nested function and class definitions are never mutated; lambdas and comprehensions are. The
function model and this verification live in ``equisa_core.mutation.edits``, which the repair's
wider fix space (``fix_space``) shares.

No mutation library is used: mutmut and cosmic-ray are mutation *testing* tools that mutate whole
files or projects under their own runners and session stores (mutmut 3 writes trampolined copies
of the project, cosmic-ray works on parso trees through sessions and distributors); neither
offers "the mutants of this function's text" as an importable function, and ``equisa_core`` may
import only the stdlib and pydantic.

Bad input (text that does not parse, or is not exactly one function definition) raises
``InvalidReplacementError``; unknown operator names and a negative ``max_mutants`` raise
``ValueError``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterator

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from equisa_core.mutation.edits import SELF_NAMES as _SELF_NAMES
from equisa_core.mutation.edits import Candidate as _Candidate
from equisa_core.mutation.edits import Edit as _Edit
from equisa_core.mutation.edits import FunctionModel as _Function
from equisa_core.mutation.edits import Site as _Site
from equisa_core.mutation.edits import bounds as _bounds
from equisa_core.mutation.edits import int_node as _int_node
from equisa_core.mutation.edits import int_value as _int_value
from equisa_core.mutation.edits import is_int as _is_int
from equisa_core.mutation.edits import is_stringy as _is_stringy
from equisa_core.mutation.edits import load_function as _load
from equisa_core.mutation.edits import make as _make
from equisa_core.mutation.edits import negate as _negate
from equisa_core.mutation.edits import shift as _shift
from equisa_core.mutation.edits import with_field as _with

__all__ = ["Mutant", "OPERATORS", "mutate_function"]

#: Operator names, in priority order (see the module docstring).
OPERATORS: tuple[str, ...] = (
    "comparison_swap",  # < <= > >= == != is / is not, in / not in
    "boolean_operator_swap",  # and <-> or
    "negate_condition",  # if/elif/while/ternary/assert/comprehension tests: add or remove `not`
    "constant_off_by_one",  # int literals +1 / -1 (so 0 <-> 1)
    "range_bound",  # range(n) -> range(n + 1) / range(n - 1), start and stop
    "subscript_off_by_one",  # x[i] -> x[i + 1] / x[i - 1], slice bounds +-1
    "arithmetic_swap",  # + <-> -, * <-> /, / <-> //, // <-> %, ** -> *, & <-> |, << <-> >>
    "augmented_assignment_swap",  # += <-> -=, ...
    "boolean_constant_flip",  # True <-> False
    "none_guard",  # `if <param> is None: return None` first in the body
    "return_value",  # return x -> return None; boolean returns negated
    "variable_swap",  # a local read replaced by another local bound before it
    "argument_swap",  # f(a, b) -> f(b, a), adjacent positional arguments
    "min_max_swap",  # min <-> max
    "any_all_swap",  # any <-> all
    "unary_minus",  # -x -> x, a + b -> -a + b
    "break_continue_swap",  # break <-> continue
    "statement_removal",  # expression, assignment, return, raise, if-block
    "statement_duplication",  # expression, assignment
)

#: At most this many replacement variables per variable read.
_MAX_VARIABLE_SWAPS = 3

_COMPARE_SWAPS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt, ast.GtE),
    ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE),
    # `!=` for `>`/`<` (a loop that never ends, a test that never fails) and `==` for `<=`/`>=`
    # (an exact match where a bound was meant) are common real bugs, so they are swapped too.
    ast.Eq: (ast.NotEq, ast.LtE, ast.GtE),
    ast.NotEq: (ast.Eq, ast.Gt, ast.Lt),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_COMPARE_TEXT: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_ARITHMETIC_SWAPS: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div,),
    ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div, ast.Mod),
    ast.Mod: (ast.FloorDiv,),
    ast.Pow: (ast.Mult,),
    ast.BitAnd: (ast.BitOr,),
    ast.BitOr: (ast.BitAnd,),
    ast.LShift: (ast.RShift,),
    ast.RShift: (ast.LShift,),
}
_OPERATOR_TEXT: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitXor: "^",
    ast.MatMult: "@",
}
_NAME_SWAPS = {"min": "max", "max": "min", "any": "all", "all": "any"}
# Calls that return a bool: `return isinstance(x, T)` is a boolean return.
_BOOLEAN_CALLS = frozenset({"isinstance", "issubclass", "callable", "hasattr", "all", "any", "bool"})
_CONDITION_PARENTS = (ast.If, ast.While, ast.IfExp, ast.Assert)
_NEGATABLE_OPERANDS = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)
_NEGATABLE_IN = (ast.Add, ast.Sub, ast.Mult, ast.Div)


class Mutant(BaseModel):
    """One mutant of a function: its whole source text and what changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fqn: str = Field(description="The mutated function's fully qualified name, as passed in.")
    operator: str = Field(description="The operator that made it: one of OPERATORS, or of REPAIR_OPERATORS.")
    description: str = Field(description='What changed, e.g. "line 58: `>` -> `>=`".')
    line: int = Field(ge=1, description="The file line of the edit (start_line + offset in the text).")
    source: str = Field(description="The whole mutated function, byte-identical outside the edit.")
    edit_size: int = Field(ge=1, description="Tokens changed (replaced, inserted or removed).")
    pattern: str = Field("", description="The fix pattern (a REPAIR_OPERATORS name); '' for mutants.")
    site_line: int = Field(0, ge=0, description="The file line of the edited statement; 0 when not set.")

    @model_serializer(mode="wrap")
    def _unset_fix_fields_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """A mutant without a pattern or site line serializes exactly as before those fields existed."""
        data: dict[str, object] = handler(self)
        if not self.pattern:
            data.pop("pattern", None)
        if not self.site_line:
            data.pop("site_line", None)
        return data


# --- operators -----------------------------------------------------------------------------------


def _comparison_swap(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            gap = fn.operator_span(
                fn.span(operands[i])[1], fn.span(operands[i + 1])[0], _COMPARE_TEXT[type(op)]
            )
            for new_op in _COMPARE_SWAPS[type(op)]:
                ops = [*node.ops[:i], new_op(), *node.ops[i + 1 :]]
                primary = [] if gap is None else [[(*gap, _COMPARE_TEXT[new_op])]]
                yield fn.replace(site, _with(node, "ops", ops), primary, gap)


def _boolean_operator_swap(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.BoolOp):
            continue
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        gaps = [
            fn.operator_span(fn.span(a)[1], fn.span(b)[0], old)
            for a, b in zip(node.values, node.values[1:], strict=False)
        ]
        primary = [] if None in gaps else [[(*gap, new) for gap in gaps if gap is not None]]
        display = gaps[0] if len(gaps) == 1 and gaps[0] is not None else None
        yield fn.replace(site, _with(node, "op", ast.Or() if old == "and" else ast.And()), primary, display)


def _negate_condition(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        if (isinstance(site.parent, _CONDITION_PARENTS) and site.field == "test") or (
            isinstance(site.parent, ast.comprehension) and site.field == "ifs"
        ):
            yield _negate(fn, site)


def _constant_off_by_one(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        literal = _int_value(node)
        if literal is None:
            continue
        start, end = fn.span(node)
        for delta in (1, -1):
            value = literal + delta
            yield fn.replace(site, _int_node(value), [[(start, end, str(value))]])


def _range_bound(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
            and "range" not in fn.bound
            and 1 <= len(node.args) <= 3
            and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            continue
        for i, arg in enumerate(node.args[:2]):
            if _is_int(arg):  # constant_off_by_one covers literals
                continue
            for delta in (1, -1):
                yield _shift(fn, _Site(arg, node, "args", i, site.shadow), delta, fn.span(node))


def _subscript_off_by_one(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Subscript):
            continue
        index = node.slice
        targets: list[_Site] = []
        if isinstance(index, ast.Slice):
            targets = [
                _Site(bound, index, name, None, site.shadow)
                for name, bound in (("lower", index.lower), ("upper", index.upper))
                if bound is not None and not _is_int(bound) and not _is_stringy(bound)
            ]
        elif not isinstance(index, ast.Tuple | ast.Constant | ast.JoinedStr | ast.UnaryOp):
            targets = [_Site(index, node, "slice", None, site.shadow)]
        for target in targets:
            for delta in (1, -1):
                yield _shift(fn, target, delta, fn.span(node))


def _arithmetic_swap(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.BinOp) or type(node.op) not in _ARITHMETIC_SWAPS:
            continue
        if isinstance(node.op, ast.Add | ast.Mod) and (_is_stringy(node.left) or _is_stringy(node.right)):
            continue  # concatenation and %-formatting
        old = _OPERATOR_TEXT[type(node.op)]
        gap = fn.operator_span(fn.span(node.left)[1], fn.span(node.right)[0], old)
        for new_op in _ARITHMETIC_SWAPS[type(node.op)]:
            primary = [] if gap is None else [[(*gap, _OPERATOR_TEXT[new_op])]]
            yield fn.replace(site, _with(node, "op", new_op()), primary, gap)


def _augmented_assignment_swap(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.AugAssign) or type(node.op) not in _ARITHMETIC_SWAPS:
            continue
        if isinstance(node.op, ast.Add | ast.Mod) and _is_stringy(node.value):
            continue
        old = _OPERATOR_TEXT[type(node.op)] + "="
        gap = fn.operator_span(fn.span(node.target)[1], fn.span(node.value)[0], old)
        for new_op in _ARITHMETIC_SWAPS[type(node.op)]:
            primary = [] if gap is None else [[(*gap, _OPERATOR_TEXT[new_op] + "=")]]
            yield fn.replace(site, _with(node, "op", new_op()), primary, gap)


def _boolean_constant_flip(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            new = not node.value
            yield fn.replace(site, ast.Constant(new), [[(*fn.span(node), str(new))]])


def _none_guard(fn: _Function) -> Iterator[_Candidate]:
    body = fn.node.body
    anchor = body[0]  # the docstring, or the first statement
    if not fn.own_lines(anchor):
        return
    indent = fn.lines[anchor.lineno - 1][: anchor.col_offset]
    def_line = fn.lines[fn.node.lineno - 1]
    outer = def_line[: len(def_line) - len(def_line.lstrip(" \t\f"))]
    unit = indent[len(outer) :] if indent.startswith(outer) and len(indent) > len(outer) else "    "
    eol = fn.eol()
    at, lead = 0, ""
    if fn.docstring is not None:  # right after the docstring
        at, line = 1, _bounds(fn.docstring)[2] + 1
    else:  # right before the first statement (the decorators of a nested definition included)
        line = min([anchor.lineno, *(d.lineno for d in getattr(anchor, "decorator_list", []))])
    if line > len(fn.lines):
        point = len(fn.text)
        lead = "" if fn.text.endswith(("\n", "\r")) else eol
    else:
        point = fn.starts[line - 1]
    args = fn.node.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg in _SELF_NAMES:
            continue
        guard = ast.If(
            test=ast.Compare(ast.Name(arg.arg, ast.Load()), [ast.Is()], [ast.Constant(None)]),
            body=[ast.Return(ast.Constant(None))],
            orelse=[],
        )
        text = f"{lead}{indent}if {arg.arg} is None:{eol}{indent}{unit}return None{eol}"
        value = [*body[:at], guard, *body[at:]]
        yield _Candidate(fn.node, "body", value, (((point, point, text),),), (point, point), "inserted")


def _is_boolean(node: ast.expr) -> bool:
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.Not)
    if isinstance(node, ast.BoolOp):
        return all(_is_boolean(v) for v in node.values)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BOOLEAN_CALLS


def _return_value(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        if isinstance(value, ast.Constant) and value.value is None:
            continue
        target = _Site(value, node, "value", None, site.shadow)
        if _is_boolean(value):
            if isinstance(value, ast.Constant):
                flipped = not value.value
                yield fn.replace(
                    target, ast.Constant(flipped), [[(*fn.span(value), str(flipped))]], fn.span(node)
                )
            else:
                negated = _negate(fn, target)
                yield _Candidate(
                    negated.parent, negated.field, negated.value, negated.alternatives, fn.span(node)
                )
        yield fn.replace(target, ast.Constant(None), [[(*fn.span(value), "None")]], fn.span(node))


def _variable_swap(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in fn.bindings
            and node.id not in site.shadow
            and not (isinstance(site.parent, ast.Call) and site.field == "func")
        ):
            continue
        start, end = fn.span(node)
        # the most recently bound other locals first (nearest binding before this read)
        recent = []
        for name, offsets in fn.bindings.items():
            before = [o for o in offsets if o < start]
            if name != node.id and name not in site.shadow and before:
                recent.append((-before[-1], name))
        # shown with the enclosing expression: one line may read the same variable twice
        display = fn.span(site.parent) if isinstance(site.parent, ast.expr) else None
        for _, name in sorted(recent)[:_MAX_VARIABLE_SWAPS]:
            yield fn.replace(site, ast.Name(name, ast.Load()), [[(start, end, name)]], display)


def _argument_swap(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Call):
            continue
        for i in range(len(node.args) - 1):
            a, b = node.args[i], node.args[i + 1]
            if isinstance(a, ast.Starred) or isinstance(b, ast.Starred) or ast.dump(a) == ast.dump(b):
                continue
            args = [*node.args[:i], b, a, *node.args[i + 2 :]]
            (a0, a1), (b0, b1) = fn.span(a), fn.span(b)
            edits = [(a0, a1, fn.text[b0:b1]), (b0, b1, fn.text[a0:a1])]
            yield fn.replace(site, _with(node, "args", args), [edits], (a0, b1))


def _name_swap(fn: _Function, names: Collection[str]) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if (
            isinstance(node, ast.Name)
            and node.id in names
            and node.id not in fn.bound
            and isinstance(site.parent, ast.Call)
            and site.field == "func"
        ):
            new = _NAME_SWAPS[node.id]
            yield fn.replace(site, ast.Name(new, ast.Load()), [[(*fn.span(node), new)]])


def _min_max_swap(fn: _Function) -> Iterator[_Candidate]:
    return _name_swap(fn, ("min", "max"))


def _any_all_swap(fn: _Function) -> Iterator[_Candidate]:
    return _name_swap(fn, ("any", "all"))


def _unary_minus(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        start, end = fn.span(node) if isinstance(node, ast.expr) else (0, 0)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = fn.src(node.operand)
            yield fn.replace(site, node.operand, [[(start, end, inner)], [(start, end, f"({inner})")]])
        elif (
            isinstance(node, _NEGATABLE_OPERANDS)
            and isinstance(site.parent, ast.BinOp)
            and isinstance(site.parent.op, _NEGATABLE_IN)
            and not (_is_stringy(site.parent.left) or _is_stringy(site.parent.right))
        ):
            new = ast.UnaryOp(ast.USub(), node)
            yield fn.replace(site, new, [[(start, start, "-")], [(start, start, "-("), (end, end, ")")]])


def _break_continue_swap(fn: _Function) -> Iterator[_Candidate]:
    for site in fn.sites:
        node = site.node
        if isinstance(node, ast.Break | ast.Continue):
            new: ast.stmt = ast.Continue() if isinstance(node, ast.Break) else ast.Break()
            yield fn.replace(
                site, new, [[(*fn.span(node), "continue" if isinstance(node, ast.Break) else "break")]]
            )


def _line_statement(fn: _Function, site: _Site) -> bool:
    """A statement of a block (not a docstring-like bare literal, not an ``elif``) on its own lines."""
    node = site.node
    if not isinstance(node, ast.stmt) or site.index is None:
        return False
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return False
    if isinstance(node, ast.If) and fn.text.startswith("elif", fn.span(node)[0]):
        return False
    return fn.own_lines(node)


def _statement_removal(fn: _Function) -> Iterator[_Candidate]:
    removable = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.If)
    for site in fn.sites:
        node = site.node
        if not isinstance(node, removable) or not _line_statement(fn, site):
            continue
        if isinstance(node, ast.AnnAssign) and node.value is None:
            continue
        assert site.index is not None
        block: list[ast.stmt] = getattr(site.parent, site.field)
        start, end = fn.line_span(node.lineno, _bounds(node)[2])
        if len(block) == 1:  # the only statement of its block: leave `pass`
            line = fn.lines[node.lineno - 1]
            indent = line[: len(line) - len(line.lstrip(" \t\f"))]
            last = fn.lines[_bounds(node)[2] - 1]
            eol = last[len(last.rstrip("\r\n")) :]
            value: list[ast.stmt] = [ast.Pass()]
            edits: tuple[_Edit, ...] = ((start, end, f"{indent}pass{eol}"),)
        else:
            value = [*block[: site.index], *block[site.index + 1 :]]
            edits = ((start, end, ""),)
        yield _Candidate(site.parent, site.field, value, (edits,), fn.span(node), "removed")


def _statement_duplication(fn: _Function) -> Iterator[_Candidate]:
    duplicable = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)
    for site in fn.sites:
        node = site.node
        if not isinstance(node, duplicable) or not _line_statement(fn, site):
            continue
        if isinstance(node, ast.AnnAssign) and node.value is None:
            continue
        assert site.index is not None
        block: list[ast.stmt] = getattr(site.parent, site.field)
        start, end = fn.line_span(node.lineno, _bounds(node)[2])
        lines = fn.text[start:end]
        copy = lines if lines.endswith(("\n", "\r")) else fn.eol() + lines
        value = [*block[: site.index + 1], node, *block[site.index + 1 :]]
        yield _Candidate(site.parent, site.field, value, (((end, end, copy),),), fn.span(node), "duplicated")


_GENERATORS: dict[str, Callable[[_Function], Iterator[_Candidate]]] = {
    "comparison_swap": _comparison_swap,
    "boolean_operator_swap": _boolean_operator_swap,
    "negate_condition": _negate_condition,
    "constant_off_by_one": _constant_off_by_one,
    "range_bound": _range_bound,
    "subscript_off_by_one": _subscript_off_by_one,
    "arithmetic_swap": _arithmetic_swap,
    "augmented_assignment_swap": _augmented_assignment_swap,
    "boolean_constant_flip": _boolean_constant_flip,
    "none_guard": _none_guard,
    "return_value": _return_value,
    "variable_swap": _variable_swap,
    "argument_swap": _argument_swap,
    "min_max_swap": _min_max_swap,
    "any_all_swap": _any_all_swap,
    "unary_minus": _unary_minus,
    "break_continue_swap": _break_continue_swap,
    "statement_removal": _statement_removal,
    "statement_duplication": _statement_duplication,
}



def mutate_function(
    function_source: str,
    fqn: str,
    *,
    start_line: int = 1,
    max_mutants: int | None = None,
    operators: Collection[str] | None = None,
) -> list[Mutant]:
    """The mutants of one function, most likely fixes first (see the module docstring).

    ``function_source`` is one function or method definition at column 0, decorators included
    (``source_edit.function_source``); ``start_line`` is the file line of its first line.
    ``operators`` restricts the operators used (names from ``OPERATORS``); ``max_mutants`` keeps
    the first ones. Raises InvalidReplacementError when the text does not parse or is not exactly
    one function definition, ValueError for an unknown operator or a negative ``max_mutants``.
    """
    if start_line < 1:
        raise ValueError(f"start_line must be >= 1, got {start_line}")
    if max_mutants is not None and max_mutants < 0:
        raise ValueError(f"max_mutants must be >= 0, got {max_mutants}")
    chosen = (
        set(OPERATORS) if operators is None else {operators} if isinstance(operators, str) else set(operators)
    )
    unknown = chosen - set(OPERATORS)
    if unknown:
        raise ValueError(f"unknown mutation operator(s) {sorted(unknown)}; known: {', '.join(OPERATORS)}")
    fn = _load(function_source, fqn)
    seen = {fn.shape}
    mutants: list[Mutant] = []
    for operator in OPERATORS:
        if operator not in chosen or (max_mutants is not None and len(mutants) >= max_mutants):
            continue
        made = [m for c in _GENERATORS[operator](fn) if (m := _make(fn, operator, c, start_line)) is not None]
        for m in sorted(made, key=lambda m: (m.position, m.edit_size)):  # stable: ties keep their order
            if m.shape in seen:
                continue
            seen.add(m.shape)
            mutants.append(
                Mutant(
                    fqn=fqn,
                    operator=m.operator,
                    description=m.description,
                    line=m.line,
                    source=m.source,
                    edit_size=m.edit_size,
                )
            )
    return mutants if max_mutants is None else mutants[:max_mutants]
