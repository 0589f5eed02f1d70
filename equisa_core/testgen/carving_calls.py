"""How a carved test writes the call of its member, as a maintainer would: each recorded argument
placed by its kind (``call_shape``), a method called on its rebuilt instance, a special method in
its operator form (``a + b``, ``len(obj)``), a recorded ``__init__`` as the class's constructor call.

Part of the carving (``equisa_core.testgen.carving``); pure.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from equisa_core.common.models import RecordedCall
from equisa_core.common.values import object_build
from equisa_core.testgen.call_shape import CallShape
from equisa_core.testgen.carving_names import Target, attribute_name, is_name
from equisa_core.testgen.carving_values import Emitter, parsed_build

__all__ = ["Placed", "constructed", "direct_call", "placed"]

#: (the receiver's expression for a method, else None; the positional arguments; the keyword ones).
Placed = tuple[str | None, list[str], list[str]]

#: Special methods as the code that calls them is written: ``a + b``, not ``a.__add__(b)``.
_BINARY_OPERATORS = {
    "__add__": "+",
    "__sub__": "-",
    "__mul__": "*",
    "__truediv__": "/",
    "__floordiv__": "//",
    "__mod__": "%",
    "__pow__": "**",
    "__matmul__": "@",
    "__and__": "&",
    "__or__": "|",
    "__xor__": "^",
    "__lshift__": "<<",
    "__rshift__": ">>",
    "__eq__": "==",
    "__ne__": "!=",
    "__lt__": "<",
    "__le__": "<=",
    "__gt__": ">",
    "__ge__": ">=",
}
_UNARY_OPERATORS = {"__neg__": "-", "__pos__": "+", "__invert__": "~"}
_BUILTIN_CALLS = {
    "__len__": "len",
    "__str__": "str",
    "__repr__": "repr",
    "__bool__": "bool",
    "__hash__": "hash",
    "__abs__": "abs",
    "__int__": "int",
    "__float__": "float",
}


#: Expressions that need no parentheses as an operand.
_OPERANDS = (
    ast.Name,
    ast.Constant,
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.UnaryOp,
)


def placed(shape: CallShape, arguments: dict[str, str]) -> Placed | None:
    """(the receiver's expression for a method, else None; the positional arguments; the keyword
    ones, ``name=value``) with each recorded argument (name -> expression) placed by its kind;
    None when the names do not fit."""
    parameters = list(shape.parameters)
    left = dict(arguments)
    receiver = None
    if shape.binding == "method":
        receiver = left.pop(parameters.pop(0)[0], None)
        if receiver is None:
            return None
    elif shape.binding == "classmethod":
        left.pop(parameters.pop(0)[0], None)  # the class is bound by the reference
    positional: list[str] = []
    keywords: list[str] = []
    in_order = True
    for parameter, kind in parameters:
        if parameter not in left:
            in_order = in_order and kind not in ("positional_only", "positional")
            continue
        expression = left.pop(parameter)
        if kind == "var_positional":
            items = _unpacked(expression)
            if items is None or (items and not in_order):
                return None
            positional.extend(items)
        elif kind == "var_keyword":
            pairs = _keywords(expression)
            if pairs is None:
                return None
            keywords.extend(pairs)
        elif kind == "positional_only" and not in_order:
            return None
        elif kind == "keyword_only" or not in_order:
            keywords.append(f"{parameter}={expression}")
        else:
            positional.append(expression)
    if left:
        return None  # a recorded name the definition does not have: it is not the function called
    return receiver, positional, keywords


def _unpacked(expression: str) -> list[str] | None:
    """A tuple expression's items as texts (``*args`` spelt out); None when it is not a tuple display."""
    node = _parsed_expression(expression)
    if not isinstance(node, ast.Tuple):
        return None
    if any(isinstance(item, ast.Starred) for item in node.elts):
        return None
    return [ast.unparse(item) for item in node.elts]


def _keywords(expression: str) -> list[str] | None:
    """A dict display's items as ``name=value`` (``**kwargs`` spelt out); None when a key is not a
    name."""
    node = _parsed_expression(expression)
    if not isinstance(node, ast.Dict):
        return None
    pairs = []
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and is_name(key.value)):
            return None
        pairs.append(f"{key.value}={ast.unparse(value)}")
    return pairs


def _parsed_expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None


def _operator_form(
    name: str,
    receiver: str,
    positional: Sequence[str],
    keywords: Sequence[str],
) -> str | None:
    """How a special method's call is written (``obj + other``, ``len(obj)``, ``obj[key]``,
    ``key in obj``); None for another method, or arguments that do not fit the form."""
    if keywords:
        return None
    arguments = [a if isinstance(_parsed_expression(a), _OPERANDS) else f"({a})" for a in positional]
    if len(arguments) == 1 and name in _BINARY_OPERATORS:
        return f"{receiver} {_BINARY_OPERATORS[name]} {arguments[0]}"
    if len(arguments) == 1 and name == "__getitem__":
        return f"{receiver}[{arguments[0]}]"
    if len(arguments) == 1 and name == "__contains__":
        return f"{arguments[0]} in {receiver}"
    if not arguments and name in _UNARY_OPERATORS:
        return f"{_UNARY_OPERATORS[name]}{receiver}"
    if not arguments and name in _BUILTIN_CALLS:
        return f"{_BUILTIN_CALLS[name]}({receiver})"
    return None


def _owner_instance(call: RecordedCall, target: Target) -> bool:
    """Whether a method's recorded receiver (its first argument) is an instance of the class that
    defines the member, not of a subclass."""
    first = next(iter(call.args.values()), None)
    return first is not None and first.type == ".".join([target.module, *target.qualname[:-1]])


def constructed(call: RecordedCall, target: Target, shape: CallShape | None) -> bool:
    """Whether a recorded ``__init__`` call is written as the class's constructor call (``Rate(20)``):
    a method called directly, on an instance of exactly its class with nothing set yet."""
    first = next(iter(call.args.values()), None)
    if not (
        shape is not None
        and shape.binding == "method"
        and target.code_name == "__init__"
        and first is not None
        and not first.state
        and _owner_instance(call, target)
    ):
        return False
    if first.build is None:
        return True
    node = parsed_build(first.build)
    built = object_build(node) if node is not None else None
    return built is not None and not built.attributes and not built.slots


def direct_call(
    function: str,
    target: Target,
    call: RecordedCall,
    arguments: Placed,
    emitter: Emitter,
    is_constructed: bool,
) -> str:
    """The expression that calls the member ``function`` names with its ``arguments`` placed: the
    class's constructor call, the method on its receiver (a local when the receiver is not a name)
    or through its class (a subclass's instance), or the function itself."""
    receiver, positional, keywords = arguments
    listed = ", ".join([*positional, *keywords])
    if is_constructed:
        return f"{function.removesuffix('.__init__')}({listed})"
    if receiver is None:
        return f"{function}({listed})"
    if not _owner_instance(call, target):
        # An instance of a subclass: ``obj.method`` could reach an override, so the member is
        # called through its class, the instance first.
        return f"{function}({', '.join(p for p in (receiver, listed) if p)})"
    if not is_name(receiver):
        local = emitter.variable("obj")
        emitter.statement(f"{local} = {receiver}")
        receiver = local
    owner = target.qualname[:-1]
    return _operator_form(target.code_name, receiver, positional, keywords) or (
        f"{receiver}.{attribute_name(owner, target.code_name)}({listed})"
    )
