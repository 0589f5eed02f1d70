"""Tests for equisa_core.localization.inspection: the deterministic inspection patch."""

from __future__ import annotations

import ast
import asyncio
import copy
import textwrap
import types
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from equisa_core.common.models import EncodedValue, RecordedCall
from equisa_core.common.source_edit import function_source, replace_function
from equisa_core.errors import SourceEditError
from equisa_core.localization.inspection import ASSERTION_PREFIX, assertion_message, build_inspection_patch
from equisa_core.localization.invariants import RESULT_NAME, Invariant, InvariantKind, mine_invariants
from equisa_core.localization.signals import heartbeat
from equisa_core.probe.equisa_probe import encode_value

R = RESULT_NAME
FQN = "pkg.mod.f"


def ev(value: Any) -> EncodedValue:
    return EncodedValue(**encode_value(value))


def inv(expression: str, kind: InvariantKind = InvariantKind.SIGN, subject: str = "x") -> Invariant:
    return Invariant(kind=kind, subject=subject, expression=expression, evidence=3, description=expression)


def compile_function(
    source: str, name: str = "f", namespace: dict[str, Any] | None = None
) -> Callable[..., Any]:
    ns: dict[str, Any] = {} if namespace is None else namespace
    exec(compile(source, "<patched>", "exec"), ns)
    return ns[name]


def record(function: Callable[..., Any], *arg_sets: dict[str, Any]) -> list[RecordedCall]:
    """Run ``function`` on each argument set and record the call as the probe does."""
    calls = []
    for kwargs in arg_sets:
        args = {name: ev(value) for name, value in kwargs.items()}
        try:
            result = function(**copy.deepcopy(kwargs))
        except Exception as exc:  # an expected exception of a passing test
            raised = type(exc).__module__ + "." + type(exc).__name__
            calls.append(RecordedCall(fqn=FQN, args=args, raised=raised))
        else:
            calls.append(RecordedCall(fqn=FQN, args=args, result=ev(result)))
    return calls


def body_statements(patched: str) -> list[ast.stmt]:
    function = ast.parse(patched).body[0]
    assert isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
    return function.body


def is_heartbeat(statement: ast.stmt, fqn: str = FQN) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id == "print"
        and isinstance(statement.value.args[0], ast.Constant)
        and statement.value.args[0].value == heartbeat(fqn)
    )


CLAMP = """\
def f(x, lo=0, hi=10):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
"""
CLAMP_INVARIANTS = [
    inv("isinstance(x, int)", InvariantKind.TYPE),
    inv(f"isinstance({R}, int)", InvariantKind.TYPE, "result"),
    inv(f"{R} >= lo", InvariantKind.RELATION, "result"),
    inv(f"{R} <= hi", InvariantKind.RELATION, "result"),
]


# --- shape -----------------------------------------------------------------------------------


def test_heartbeat_is_the_first_statement() -> None:
    patched = build_inspection_patch(CLAMP, FQN, CLAMP_INVARIANTS)
    body = body_statements(patched)
    assert is_heartbeat(body[0])
    assert isinstance(body[1], ast.Assert)


def test_the_docstring_stays_first_then_the_heartbeat() -> None:
    source = 'def f(x):\n    """Twice x."""\n    return 2 * x\n'
    patched = build_inspection_patch(source, FQN, [inv("x > 0")])
    body = body_statements(patched)
    assert isinstance(body[0], ast.Expr) and body[0].value.value == "Twice x."
    assert is_heartbeat(body[1])
    assert compile_function(patched).__doc__ == "Twice x."


def test_only_asserts_are_added_besides_the_heartbeat_and_result_bindings() -> None:
    patched = build_inspection_patch(CLAMP, FQN, CLAMP_INVARIANTS)
    original = ast.parse(CLAMP).body[0]
    new = ast.parse(patched).body[0]
    added = [n for n in ast.walk(new) if isinstance(n, ast.stmt)]
    kinds = {type(n).__name__ for n in added} - {type(n).__name__ for n in ast.walk(original)}
    assert kinds == {"Assert", "Expr", "Assign"}
    assigns = [n for n in added if isinstance(n, ast.Assign)]
    assert {t.id for a in assigns for t in a.targets} == {R}


def test_messages_name_the_invariant_and_equisa() -> None:
    invariant = CLAMP_INVARIANTS[2]
    message = assertion_message(FQN, invariant)
    assert message.startswith(ASSERTION_PREFIX) and "relation" in message and f"{R} >= lo" in message
    assert repr(message) in build_inspection_patch(CLAMP, FQN, CLAMP_INVARIANTS)


def test_every_own_return_is_checked_and_the_signature_kept() -> None:
    module = "import os\n\n\n" + CLAMP + "\n\ndef g():\n    return 1\n"
    patched = build_inspection_patch(function_source(module, "f"), FQN, CLAMP_INVARIANTS)
    assert patched.count(f"return {R}") == 3
    assert patched.count(f"assert {R} >= lo") == 3
    replaced = replace_function(module, "f", patched)  # raises if the signature changed
    assert "def g():\n    return 1" in replaced


# --- behaviour -------------------------------------------------------------------------------


def test_behaviour_is_unchanged_when_the_invariants_hold(capsys: pytest.CaptureFixture[str]) -> None:
    original = compile_function(CLAMP)
    patched = compile_function(build_inspection_patch(CLAMP, FQN, CLAMP_INVARIANTS))
    for args in ((5,), (-4,), (40,), (3, 4, 5), (0, 0, 0)):
        assert patched(*args) == original(*args)
    assert capsys.readouterr().out == (heartbeat(FQN) + "\n") * 5


def test_a_violated_argument_invariant_raises_at_entry(capsys: pytest.CaptureFixture[str]) -> None:
    patched = compile_function(build_inspection_patch(CLAMP, FQN, CLAMP_INVARIANTS))
    with pytest.raises(AssertionError, match=f"^{ASSERTION_PREFIX}: type invariant violated in {FQN}"):
        patched(2.5)
    assert heartbeat(FQN) in capsys.readouterr().out


def test_a_violated_result_invariant_raises_at_the_return() -> None:
    buggy = CLAMP.replace("return hi", "return hi + 1")
    patched = compile_function(build_inspection_patch(buggy, FQN, CLAMP_INVARIANTS))
    assert patched(5) == 5
    with pytest.raises(AssertionError, match=r"relation invariant violated .* \[__equisa_result__ <= hi\]"):
        patched(40)


def test_bare_returns_and_falling_off_the_end_are_not_checked() -> None:
    source = "def f(x):\n    if x:\n        return\n    print('none')\n"
    patched = build_inspection_patch(source, FQN, [inv(f"{R} is not None", InvariantKind.NONE, "result")])
    function = compile_function(patched)
    assert function(1) is None and function(0) is None


def test_arguments_are_compared_as_they_were_passed() -> None:
    # The body rebinds n: the relation is about the n the caller passed.
    source = "def f(n):\n    total = 0\n    while n > 0:\n        total += n\n        n -= 1\n"
    source += "    return total\n"
    invariants = [
        inv("isinstance(n, int)", InvariantKind.TYPE, "n"),
        inv(f"{R} >= n", InvariantKind.RELATION, "result"),
    ]
    assert "__equisa_entry_n__ = " in build_inspection_patch(source, FQN, invariants)
    patched = compile_function(build_inspection_patch(source, FQN, invariants))
    assert patched(4) == 10


def test_arguments_changed_in_place_are_snapshotted() -> None:
    source = "def f(xs):\n    top = max(xs)\n    xs.remove(top)\n    return top\n"
    invariants = [
        inv("isinstance(xs, list)", InvariantKind.TYPE, "xs"),
        inv(f"{R} in xs", InvariantKind.MEMBERSHIP, "result"),
        inv("len(xs) > 0", InvariantKind.LENGTH, "xs"),
    ]
    patched_source = build_inspection_patch(source, FQN, invariants)
    assert "xs.copy()" in patched_source
    patched = compile_function(patched_source)
    items = [3, 9, 4]
    assert patched(items) == 9 and items == [3, 4]


def test_arguments_only_read_are_not_copied() -> None:
    source = "def f(xs):\n    for x in xs:\n        if x > 2:\n            return x\n    return len(xs)\n"
    invariants = [
        inv("isinstance(xs, list)", InvariantKind.TYPE, "xs"),
        inv(f"{R} in xs", InvariantKind.MEMBERSHIP, "result"),
    ]
    patched = build_inspection_patch(source, FQN, invariants)
    assert "copy" not in patched and "__equisa_entry_" not in patched
    assert f"assert {R} in xs" in patched


def test_shadowed_builtins_are_reached_through_the_builtins_module() -> None:
    source = "def f(type, len=3):\n    return [type] * len\n"
    invariants = [
        inv("isinstance(type, str)", InvariantKind.TYPE, "type"),
        inv(f"len({R}) >= len", InvariantKind.RELATION, "result"),
    ]
    patched = build_inspection_patch(source, FQN, invariants)
    assert "__import__('builtins').len(" in patched
    assert compile_function(patched)("a", 2) == ["a", "a"]


def test_async_functions_check_their_results() -> None:
    source = "async def f(x):\n    await asyncio.sleep(0)\n    return x + 1\n"
    patched = build_inspection_patch(source, FQN, [inv(f"{R} > x", InvariantKind.RELATION, "result")])
    function = compile_function(patched, namespace={"asyncio": asyncio})
    assert asyncio.run(function(1)) == 2
    bad = compile_function(patched.replace("x + 1", "x - 1"), namespace={"asyncio": asyncio})
    with pytest.raises(AssertionError, match=ASSERTION_PREFIX):
        asyncio.run(bad(1))


# --- kinds of functions ----------------------------------------------------------------------


MODULE = '''\
"""A module with a method, a decorated function and a generator."""

import functools


def counted(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return fn(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


class Stats:
    def __init__(self, scale):
        self.scale = scale

    def scaled(self, xs, *, offset=0):
        """Scale every value."""
        return [x * self.scale + offset for x in xs]


@counted
@functools.lru_cache(maxsize=None)
def clamp(x, /, lo=0, hi=10, *rest, **options) -> int:
    def helper(v):
        return v * 1000  # a nested function's return is not the target's
    if x < lo:
        return lo
    big = lambda: helper(x)  # noqa: E731
    return hi if x > hi else (x if big() else x)


def evens(xs, limit):
    for x in xs:
        if x % 2 == 0:
            yield x
    return limit


async def countdown(n):
    while n > 0:
        yield n
        n -= 1
'''


def load(source: str) -> types.ModuleType:
    module = types.ModuleType("patched_module")
    exec(compile(source, "patched_module.py", "exec"), module.__dict__)
    return module


def patch_module(qualname: str, fqn: str, invariants: list[Invariant]) -> tuple[str, types.ModuleType]:
    patched = build_inspection_patch(function_source(MODULE, qualname), fqn, invariants)
    new_source = replace_function(MODULE, qualname, patched)
    return patched, load(new_source)


def test_methods_skip_self_and_behave_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    original = load(MODULE)
    stats = original.Stats(3)
    calls = [
        RecordedCall(fqn="m.Stats.scaled", args={"self": ev(stats), "xs": ev(xs), "offset": ev(o)},
                     result=ev(stats.scaled(xs, offset=o)))
        for xs, o in (([1, 2], 0), ([3], 1), ([0, 5, 6], 2))
    ]
    invariants = mine_invariants(calls, ["self", "xs", "offset"])
    assert f"len({R}) == len(xs)" in [i.expression for i in invariants]
    assert not any("self" in i.expression for i in invariants)
    patched, module = patch_module("Stats.scaled", "m.Stats.scaled", invariants)
    assert module.Stats.scaled.__doc__ == "Scale every value."
    assert module.Stats(2).scaled([1, 2], offset=1) == [3, 5]
    assert heartbeat("m.Stats.scaled") in capsys.readouterr().out
    with pytest.raises(AssertionError, match="length invariant violated"):
        module.Stats(2).scaled([], offset=1)


def test_decorated_functions_keep_their_decorators_and_nested_scopes() -> None:
    invariants = [
        inv("isinstance(x, int)", InvariantKind.TYPE),
        inv(f"isinstance({R}, int)", InvariantKind.TYPE, "result"),
        inv(f"{R} <= hi", InvariantKind.RELATION, "result"),
    ]
    patched, module = patch_module("clamp", "m.clamp", invariants)
    tree = ast.parse(patched).body[0]
    assert isinstance(tree, ast.FunctionDef)
    assert [ast.unparse(d) for d in tree.decorator_list] == ["counted", "functools.lru_cache(maxsize=None)"]
    helper = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert ast.unparse(helper) == "def helper(v):\n    return v * 1000"
    assert patched.count(f"return {R}") == 2
    assert module.clamp(5) == 5 and module.clamp(-1) == 0 and module.clamp(50, 0, 20) == 20
    assert module.clamp.calls == 3
    with pytest.raises(AssertionError, match=ASSERTION_PREFIX):
        module.clamp(50, 0, 20.5)  # returns a float: the result's type invariant fails


def test_generators_get_argument_assertions_only(capsys: pytest.CaptureFixture[str]) -> None:
    invariants = [
        inv("isinstance(xs, list)", InvariantKind.TYPE, "xs"),
        inv("limit > 0", InvariantKind.SIGN, "limit"),
        inv(f"{R} is None", InvariantKind.NONE, "result"),  # would break the generator's return value
    ]
    patched, module = patch_module("evens", "m.evens", invariants)
    assert R not in patched and "assert limit > 0" in patched
    generator = module.evens([1, 2, 3, 4], 7)
    assert capsys.readouterr().out == ""  # nothing runs before the first next()
    assert next(generator) == 2 and next(generator) == 4
    with pytest.raises(StopIteration) as stop:
        next(generator)
    assert stop.value.value == 7
    assert heartbeat("m.evens") in capsys.readouterr().out
    with pytest.raises(AssertionError, match="sign invariant violated"):
        list(module.evens([1], 0))


def test_async_generators_get_argument_assertions_only() -> None:
    invariants = [inv("n >= 0", InvariantKind.SIGN, "n"), inv(f"{R} > 0", InvariantKind.SIGN, "result")]
    patched, module = patch_module("countdown", "m.countdown", invariants)
    assert R not in patched

    async def collect(n: int) -> list[int]:
        return [v async for v in module.countdown(n)]

    assert asyncio.run(collect(3)) == [3, 2, 1]
    with pytest.raises(AssertionError, match=ASSERTION_PREFIX):
        asyncio.run(collect(-1))


def test_every_parameter_kind_survives_replace_function() -> None:
    source = textwrap.dedent(
        """\
        def f(a, /, b: int = 2, *args: str, c, d=u"x", **kw) -> "list[int]":
            return [a, b, c]
        """
    )
    invariants = [inv("a > 0", subject="a"), inv("c is not None", InvariantKind.NONE, "c")]
    patched = build_inspection_patch(source, FQN, invariants)
    assert replace_function(source, "f", patched) != source
    assert compile_function(patched)(1, c=3) == [1, 2, 3]


# --- bad input -------------------------------------------------------------------------------


def test_invariants_naming_unknown_variables_are_left_out() -> None:
    patched = build_inspection_patch(CLAMP, FQN, [inv("y > 0", subject="y"), inv("x > 0")])
    assert "y > 0" not in patched and "assert x > 0" in patched


def test_bad_source_and_bad_expressions_are_reported() -> None:
    with pytest.raises(SourceEditError, match="does not parse"):
        build_inspection_patch("def f(:\n", FQN, [])
    with pytest.raises(SourceEditError, match="exactly one function"):
        build_inspection_patch("x = 1\n", FQN, [])
    with pytest.raises(ValueError, match="does not parse"):
        build_inspection_patch(CLAMP, FQN, [inv("x >")])


def test_no_invariants_gives_the_heartbeat_alone() -> None:
    patched = build_inspection_patch(CLAMP, FQN, [])
    body = body_statements(patched)
    assert is_heartbeat(body[0])
    assert ast.dump(ast.Module(body[1:], [])) == ast.dump(ast.Module(ast.parse(CLAMP).body[0].body, []))


# --- property: the patch never fails on the inputs it was mined from ---------------------------


TEMPLATES = {
    "shift": "def f(xs, k):\n    return [x + k + {c} for x in xs]\n",
    "total": "def f(xs, k):\n    return sum(xs) * k + {c}\n",
    "largest": "def f(xs, k):\n    if not xs:\n        return k\n    return max(xs)\n",
    "above": "def f(xs, k):\n    return [x for x in xs if x > k + {c}]\n",
    "push": "def f(xs, k):\n    xs.append(k)\n    return len(xs)\n",
    "pop": "def f(xs, k):\n    if xs:\n        return xs.pop()\n    return k\n",
    "drop": "def f(xs, k):\n    del xs[:max(k, 0)]\n    return xs\n",
    "countdown": "def f(xs, k):\n    while k > {c}:\n        k -= 1\n    return k + len(xs)\n",
    "prefix": (
        "def f(xs, k):\n    total = 0\n    for x in xs:\n        if x == k:\n            return total\n"
        "        total += x\n    return total\n"
    ),
    "pick": "def f(xs, k):\n    return xs[k % len(xs)]\n",
    "head": "def f(xs, k):\n    return sorted(xs)[:k]\n",
    "mean": "def f(xs, k):\n    return sum(xs) / len(xs)\n",
    "ratio": "def f(xs, k):\n    return len([x for x in xs if x > k]) / (len(xs) or 1)\n",
    "clip": "def f(xs, k):\n    return [min(max(x, {c}), k) for x in xs]\n",
    "find": "def f(xs, k):\n    return xs.index(k) if k in xs else None\n",
    "evens": (
        "def f(xs, k):\n    for x in xs:\n        if x % 2 == 0:\n            yield x * k\n    return k\n"
    ),
}


def outcome(function: Callable[..., Any], xs: list[int], k: int) -> tuple[str, Any, list[int]]:
    """What a call does: ('ok', result, xs afterwards) or ('raised', exception type, xs)."""
    xs = list(xs)
    try:
        result = function(xs, k)
        if isinstance(result, types.GeneratorType):
            result = list(result)
    except AssertionError:
        raise
    except Exception as exc:
        return "raised", type(exc), xs
    return "ok", result, xs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(TEMPLATES)),
    c=st.integers(-3, 3),
    inputs=st.lists(
        st.tuples(st.lists(st.integers(-5, 9), min_size=1, max_size=5), st.integers(-3, 6)),
        min_size=1,
        max_size=8,
    ),
    with_empty=st.booleans(),
)
def test_the_patch_never_fails_on_the_inputs_it_was_mined_from(
    name: str, c: int, inputs: list[tuple[list[int], int]], with_empty: bool
) -> None:
    if with_empty:
        inputs = [*inputs, ([], inputs[0][1])]
    source = TEMPLATES[name].format(c=c)
    original = compile_function(source)
    calls = []
    for xs, k in inputs:
        args = {"xs": ev(xs), "k": ev(k)}
        kind, value, _ = outcome(original, xs, k)
        if kind == "ok":
            calls.append(RecordedCall(fqn=FQN, args=args, result=ev(original(list(xs), k))))
        else:
            calls.append(RecordedCall(fqn=FQN, args=args, raised="builtins." + value.__name__))
    invariants = mine_invariants(calls, ["xs", "k"])
    patched_source = build_inspection_patch(source, FQN, invariants)
    assert replace_function(source, "f", patched_source) is not None
    patched = compile_function(patched_source)
    for xs, k in inputs:
        assert outcome(patched, xs, k) == outcome(original, xs, k), (patched_source, xs, k)


def test_the_property_covers_every_invariant_kind() -> None:
    """The templates above, run on a few inputs, produce every kind at least once."""
    seen: set[InvariantKind] = set()
    inputs = [([1, 2, 3], 2), ([4, 5], 1), ([7, 8, 9, 6], 3), ([2], 1)]
    for template in TEMPLATES.values():
        function = compile_function(template.format(c=0))
        seen.update(i.kind for i in mine_invariants(record(function, *[{"xs": x, "k": k} for x, k in inputs]),
                                                       ["xs", "k"], limit=50))
    assert seen >= set(InvariantKind) - {InvariantKind.NONE}
