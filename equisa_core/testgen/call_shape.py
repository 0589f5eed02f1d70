"""How a function is called, read from its definition: the kind of each parameter and how the
function is bound (a plain function, a method called on its instance, a class or static method).

The probe records a call's arguments by name only; this is what lets a generated test place them
as a maintainer would write the call (``merge([(1, 3)], strict=True)``, ``cart.total(2)``) instead
of going through a helper that reads the signature at run time. Pure: a definition's text in, the
shape out; None for what a direct call cannot express (properties, async functions, a
definition that does not parse).
"""

from __future__ import annotations

import ast
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Binding",
    "CallShape",
    "Constructor",
    "ParameterKind",
    "call_shape",
    "constructor_of",
    "init_parameters",
]

ParameterKind = Literal["positional_only", "positional", "var_positional", "keyword_only", "var_keyword"]
Binding = Literal["function", "method", "classmethod", "staticmethod"]

#: Decorators that turn a function into something a call does not reach (an attribute access).
_ATTRIBUTE_DECORATORS = frozenset(
    {"property", "cached_property", "setter", "getter", "deleter", "abstractproperty"}
)


class CallShape(BaseModel):
    """A function's parameters in order, each with its kind, and how a call reaches it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    binding: Binding
    parameters: tuple[tuple[str, ParameterKind], ...]


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def call_shape(definition: str, in_class: bool) -> CallShape | None:
    """The shape of the one function ``definition`` holds (decorators included), defined in a class
    body when ``in_class``; None for a property, an async function or text that is not one ``def``."""
    try:
        tree = ast.parse(definition)
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    function = tree.body[0]
    names = {_decorator_name(d) for d in function.decorator_list}
    if names & _ATTRIBUTE_DECORATORS:
        return None
    arguments = function.args
    parameters: list[tuple[str, ParameterKind]] = [(a.arg, "positional_only") for a in arguments.posonlyargs]
    parameters += [(a.arg, "positional") for a in arguments.args]
    if arguments.vararg is not None:
        parameters.append((arguments.vararg.arg, "var_positional"))
    parameters += [(a.arg, "keyword_only") for a in arguments.kwonlyargs]
    if arguments.kwarg is not None:
        parameters.append((arguments.kwarg.arg, "var_keyword"))
    binding: Binding = "function"
    if in_class:
        binding = (
            "staticmethod"
            if "staticmethod" in names
            else ("classmethod" if "classmethod" in names else "method")
        )
        if binding != "staticmethod" and (
            not parameters or parameters[0][1] not in ("positional_only", "positional")
        ):
            return None  # the receiver comes first, positionally
    return CallShape(binding=binding, parameters=tuple(parameters))


#: Calls an ``__init__`` may wrap a parameter in before storing it: conversions that give the same
#: value again when given what they made (so ``Cls(stored values)`` rebuilds the same state).
_IDEMPOTENT_CONVERSIONS = frozenset(
    {
        "Decimal",
        "str",
        "int",
        "float",
        "bool",
        "tuple",
        "frozenset",
        "list",
        "dict",
        "set",
        "Path",
        "Fraction",
    }
)


#: ``@dataclass(...)`` options under which the generated ``__init__`` takes every field.
_DATACLASS_OPTIONS = frozenset(
    {"init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only", "slots"}
)


def _class_named(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    found: ast.ClassDef | None = None
    for part in qualname.split("."):
        found = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if found is None:
            return None
        body = found.body
    return found


def _stores(statement: ast.stmt, self_name: str) -> tuple[str, str] | None:
    """(attribute, parameter) for ``self.attribute = parameter`` (or an idempotent conversion of it)."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target, value = statement.targets[0], statement.value
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == self_name
    ):
        return None
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        callee = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
        if callee in _IDEMPOTENT_CONVERSIONS:
            value = value.args[0]
    return (target.attr, value.id) if isinstance(value, ast.Name) else None


def _checks_only(statement: ast.stmt) -> bool:
    """A docstring, an assertion, or ``if <condition>: raise ...``: it stores nothing."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True
    if isinstance(statement, ast.Assert):
        return True
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and all(isinstance(s, ast.Raise) for s in statement.body)
    )


def _normalizes(statement: ast.stmt, self_name: str) -> bool:
    """``object.__setattr__(self, "x", f(self.x))`` or ``self.x = f(self.x)``: a field made canonical
    (rounded, upper-cased, ...) by a call on itself, as ``__post_init__`` does; assumed idempotent."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if ast.unparse(call.func) == "object.__setattr__" and len(call.args) == 3:
            field, value = call.args[1], call.args[2]
            return (
                isinstance(field, ast.Constant)
                and isinstance(field.value, str)
                and _call_on(value, f"{self_name}.{field.value}")
            )
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        return _call_on(statement.value, ast.unparse(statement.targets[0]))
    return False


def _call_on(value: ast.expr, subject: str) -> bool:
    """``f(subject)``, or ``subject.method(...)`` whose arguments do not read the object
    (``self.amount.quantize(Decimal("0.01"))``)."""
    if not isinstance(value, ast.Call) or value.keywords:
        return False
    if len(value.args) == 1 and ast.unparse(value.args[0]) == subject:
        return True
    receiver = subject.split(".", 1)[0]
    reads = any(isinstance(n, ast.Name) and n.id == receiver for a in value.args for n in ast.walk(a))
    return isinstance(value.func, ast.Attribute) and ast.unparse(value.func.value) == subject and not reads


def _dataclass_fields(cls: ast.ClassDef, kind: ParameterKind) -> tuple[tuple[str, ParameterKind], ...] | None:
    fields: list[tuple[str, ParameterKind]] = []
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef) and statement.name in ("__init__", "__new__"):
            return None
        if isinstance(statement, ast.FunctionDef) and statement.name == "__post_init__":
            receiver = statement.args.args[0].arg if statement.args.args else "self"
            if not all(_checks_only(s) or _normalizes(s, receiver) for s in statement.body):
                return None
            continue
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        if "ClassVar" in ast.unparse(statement.annotation) or "InitVar" in ast.unparse(statement.annotation):
            return None
        value = statement.value
        if isinstance(value, ast.Call) and any(k.arg in ("init", "kw_only") for k in value.keywords):
            return None
        fields.append((statement.target.id, kind))
    return tuple(fields)


class Constructor(BaseModel):
    """How calling a class rebuilds one of its objects: ``parameters`` (name, kind) in order, each
    stored under its own name, and ``constants``: attribute -> the literal ``__init__`` always
    stores in it (``self.items = []``), which the object's state must hold for the call to rebuild it."""

    model_config = ConfigDict(frozen=True)

    parameters: tuple[tuple[str, ParameterKind], ...]
    constants: tuple[tuple[str, str], ...] = ()


def init_parameters(module_text: str, qualname: str) -> tuple[tuple[str, ParameterKind], ...] | None:
    """The parameters of class ``qualname``'s constructor, in order with their kinds, when calling
    it with an object's attributes rebuilds exactly that object (``constructor_of`` with no
    constants), else None."""
    found = constructor_of(module_text, qualname)
    return found.parameters if found is not None and not found.constants else None


def _stores_constant(statement: ast.stmt, self_name: str) -> tuple[str, str] | None:
    """(attribute, literal text) for ``self.attribute = <literal>`` (``[]``, ``False``, ``0``...)."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == self_name
    ):
        return None
    try:
        ast.literal_eval(statement.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return target.attr, ast.unparse(statement.value)


def constructor_of(module_text: str, qualname: str) -> Constructor | None:
    """How class ``qualname``'s constructor rebuilds its objects: a dataclass without bases, or an
    ``__init__`` that stores each parameter under its own name (through an idempotent conversion at
    most, ``Decimal(amount)``), may store literals in other attributes (``self.items = []``), and
    otherwise only checks (``if ...: raise``). None otherwise, and for a class with ``__slots__``,
    ``__new__`` or bases of its own: then objects are rebuilt from their state (``Cls.__new__``)."""
    try:
        tree = ast.parse(module_text)
    except (SyntaxError, ValueError):
        return None
    cls = _class_named(tree, qualname)
    if cls is None or cls.bases or cls.keywords or _has_slots(cls):
        return None
    decorators = {_decorator_name(d) for d in cls.decorator_list}
    if decorators - {"dataclass"}:
        return None
    if decorators:
        return _dataclass_constructor(cls)
    return _init_constructor(cls)


def _has_slots(cls: ast.ClassDef) -> bool:
    """Whether the class body assigns ``__slots__``."""
    return any(
        isinstance(s, ast.Assign) and any(getattr(t, "id", "") == "__slots__" for t in s.targets)
        for s in cls.body
    )


def _dataclass_constructor(cls: ast.ClassDef) -> Constructor | None:
    """A ``@dataclass`` class's constructor: its fields, when the generated ``__init__`` takes them all."""
    options = {
        k.arg: ast.unparse(k.value) for d in cls.decorator_list if isinstance(d, ast.Call) for k in d.keywords
    }
    refused = options.get("init") == "False" or options.get("slots") == "True"
    if refused or set(options) - _DATACLASS_OPTIONS:
        return None
    fields = _dataclass_fields(cls, "keyword_only" if options.get("kw_only") == "True" else "positional")
    return None if fields is None else Constructor(parameters=fields)


def _init_constructor(cls: ast.ClassDef) -> Constructor | None:
    """The constructor of a class with a hand-written ``__init__`` (see ``constructor_of``)."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None or any(isinstance(s, ast.FunctionDef) and s.name == "__new__" for s in cls.body):
        return None
    shape = call_shape(ast.unparse(init), in_class=True)
    if shape is None or shape.binding != "method" or init.decorator_list:
        return None
    self_name, *parameters = shape.parameters
    if any(kind in ("positional_only", "var_positional", "var_keyword") for _, kind in parameters):
        return None
    read = _init_body(init, self_name[0])
    if read is None:
        return None
    stored, constants, left_out = read
    if set(stored) != {name for name, _ in parameters} - left_out or set(stored) & left_out:
        return None
    return Constructor(parameters=_kept_parameters(parameters, left_out), constants=tuple(constants.items()))


def _init_body(
    init: ast.FunctionDef, self_name: str
) -> tuple[dict[str, str], dict[str, str], set[str]] | None:
    """What ``__init__``'s body does: (attribute -> parameter stored in it, attribute -> literal stored
    in it, parameters it may leave out), or None when it does anything else."""
    stored: dict[str, str] = {}
    constants: dict[str, str] = {}
    left_out: set[str] = set()  # ``if flag: ...``, the flag's default falsy: the call leaves it out
    falsy = _falsy_defaults(init)
    for statement in init.body:
        pair = _stores(statement, self_name)
        constant = _stores_constant(statement, self_name)
        if pair is not None and pair[0] == pair[1] and pair[0] not in {*stored, *constants}:
            stored[pair[0]] = pair[1]
        elif constant is not None and constant[0] not in stored and constant[0] not in constants:
            constants[constant[0]] = constant[1]
        elif (
            isinstance(statement, ast.If)
            and isinstance(statement.test, ast.Name)
            and statement.test.id in falsy
            and not statement.orelse
        ):
            left_out.add(statement.test.id)
        elif not (_checks_only(statement) or _normalizes(statement, self_name)):
            return None
    return stored, constants, left_out


def _kept_parameters(
    parameters: list[tuple[str, ParameterKind]], left_out: set[str]
) -> tuple[tuple[str, ParameterKind], ...]:
    """The parameters a call passes: those not left out; after one left out, the others by name."""
    kept: list[tuple[str, ParameterKind]] = []
    by_name = False
    for name, kind in parameters:
        if name in left_out:
            by_name = True
        else:
            kept.append((name, "keyword_only" if by_name else kind))
    return tuple(kept)


def _falsy_defaults(function: ast.FunctionDef) -> set[str]:
    """The parameters of ``function`` whose default is a falsy literal (``False``, ``None``, ``0``...)."""
    arguments = function.args
    defaulted = arguments.args[len(arguments.args) - len(arguments.defaults) :]
    keyword_only = zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    pairs = [
        *zip(defaulted, arguments.defaults, strict=True),
        *((a, d) for a, d in keyword_only if d is not None),
    ]
    falsy: set[str] = set()
    for argument, default in pairs:
        if isinstance(default, ast.Constant) and not default.value:
            falsy.add(argument.arg)
    return falsy
