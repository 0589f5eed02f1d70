"""names_bound_in: the names a function may bind, shared by inspections and the mutation operators."""

import ast

from equisa_core.common.bindings import names_bound_in


def _function(source: str) -> ast.FunctionDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_every_kind_of_binding_is_found_and_the_function_itself_is_not():
    function = _function(
        "def f(a, /, b, *args, c, **kw):\n"
        "    global g\n"
        "    x = y = 1\n"
        "    for i in a: pass\n"
        "    with open(b) as handle: pass\n"
        "    import os.path\n"
        "    from json import loads as parse\n"
        "    try: pass\n"
        "    except ValueError as error: pass\n"
        "    match a:\n"
        "        case [first, *rest]: pass\n"
        "        case {'k': value, **others}: pass\n"
        "    def inner(z): pass\n"
        "    class Local: pass\n"
        "    del x\n"
        "    return (n := 2)\n"
    )
    assert names_bound_in(function) == {
        "a", "b", "args", "c", "kw", "g", "x", "y", "i", "handle", "os", "parse", "error", "first",
        "rest", "value", "others", "inner", "z", "Local", "n",
    }


def test_names_only_read_are_not_bound():
    assert names_bound_in(_function("def f():\n    return len(items) + total\n")) == set()
