"""Which functions and classes of a module the input search can call, with a Hypothesis strategy
(``annotation_strategies.strategy_for``) per parameter it passes, seeded with the argument tuples
recorded from the suite and the docstrings' ``>>>`` examples, and the module's strings."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from decimal import Decimal

from equisa_core.testgen.annotation_strategies import strategy_for
from equisa_core.testgen.callable_inputs import callable_strategy, documented_styles, is_callable_text
from equisa_core.testgen.import_names import held_after_import, names_held
from equisa_core.testgen.input_search import OPERATOR_SYNTAX, SearchedClass, SearchedFunction
from equisa_core.testgen.named_inputs import NO_NAMES, ModuleNames, module_names, named_strategy
from equisa_core.testgen.pattern_strings import pattern_strings
from equisa_core.testgen.usage_shapes import (
    Shape,
    attribute_shapes,
    forwarded,
    parameter_shapes,
    shape_strategy,
)
from equisa_core.testgen.value_strategies import (
    MAX_SEEN,
    all_present,
    from_values,
    int_strategy,
    strings_in,
    text_strategy,
)
from equisa_core.testgen.value_texts import is_object_text, literal_value, literals

__all__ = ["annotated_members", "searched_classes", "searched_functions"]

#: Argument tuples seen per qualname (``f``, ``Class.method``), each argument a literal's text.
Seen = Mapping[str, Sequence[Sequence[str]]]


def _module_strings(tree: ast.Module, seen: Seen) -> list[str]:
    """Strings worth drawing anywhere in the module: those every recorded call and docstring example
    passed (a format string seen by one function is a good input for its neighbours), the shortest
    text each of its regular expressions finds (``pattern_strings``), then the module's own short
    string constants."""
    rows = [
        *(row for rows in seen.values() for row in rows),
        *(row for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for row in _doctest_rows(f)),
    ]
    passed = strings_in([literal_value(text)[1] for row in rows for text in row])
    constants = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) <= 20
    ]
    return list(dict.fromkeys(passed[:MAX_SEEN] + pattern_strings(tree) + constants[:MAX_SEEN]))


def _doctest_examples(docstring: str) -> list[str]:
    """The code of a docstring's examples: each ``>>>`` line with its ``...`` continuations."""
    examples: list[str] = []
    for line in docstring.splitlines():
        text = line.strip()
        if text.startswith(">>> "):
            examples.append(text[4:])
        elif text.startswith("... ") and examples:
            examples[-1] += "\n" + text[4:]
    return examples


def _doctest_rows(function: ast.FunctionDef) -> list[tuple[str, ...]]:
    """The literal argument tuples of the calls of ``function`` in its docstring's examples (``>>>``
    lines, with their ``...`` continuations)."""
    rows = []
    for example in _doctest_examples(ast.get_docstring(function) or ""):
        for at in (i for i in range(len(example)) if example.startswith(function.name + "(", i)):
            texts = _call_arguments(example, at)
            if texts is not None and literals(texts):
                rows.append(texts)
    return rows


def _call_arguments(example: str, at: int) -> tuple[str, ...] | None:
    """The positional arguments' texts of the call starting at ``at`` in ``example`` (its text: the
    shortest span from its name that parses), or None when it is no call of positional ones."""
    for close in (i for i in range(at, len(example)) if example[i] == ")"):
        try:
            call = ast.parse(example[at : close + 1], mode="eval").body
        except SyntaxError:
            continue
        if isinstance(call, ast.Call) and not call.keywords:
            return tuple(ast.unparse(a) for a in call.args)
        return None
    return None


def _parameters(
    function: ast.FunctionDef,
    skip_first: bool,
    rows: Sequence[Sequence[str]],
    numbers: Sequence[Decimal],
    strings: Sequence[str],
    usage: Mapping[str, str] | None = None,
    names: ModuleNames = NO_NAMES,
) -> tuple[list[str], list[str], bool] | None:
    """(A strategy per positional parameter the search passes, one per keyword-only parameter it
    passes by name (``_keyword_strategies``), whether every one came from an annotation):
    ``self``/``cls`` skipped when ``skip_first``; ``*args``, ``**kwargs`` and defaulted parameters
    without one are left out. None when a required parameter has none. ``rows``: argument tuples
    seen, as literal texts; ``usage``: parameter -> a strategy from how the body uses it
    (``_usage_strategies``); ``names``: the module's, for parameters that take its enum members
    or classes (``named_inputs``)."""
    args = function.args
    if args.posonlyargs:
        return None
    positional = list(args.args)[1 if skip_first else 0 :]
    split = _split_rows(function, skip_first, rows)
    strategies = _positional_strategies(positional, args.defaults, [p for p, _ in split], numbers, strings,
                                        usage or {}, names)
    keywords = _keyword_strategies(function, [k for _, k in split if k], numbers, strings, usage or {}, names)
    if strategies is None or keywords is None:
        return None
    drawn = positional[: len(strategies)] + [parameter for parameter, _ in keywords]
    typed = all(_declared(parameter, names, usage or {}) for parameter in drawn)
    return strategies, [text for _, text in keywords], typed and bool(drawn)


def _readable(annotation: ast.expr, names: ModuleNames) -> bool:
    """Whether ``annotation`` gives a strategy: its own (``strategy_for``) or the module's names."""
    return strategy_for(annotation, [], [], []) is not None or bool(named_strategy(annotation, None, [],
                                                                                     names))


def _declared(parameter: ast.arg, names: ModuleNames, usage: Collection[str]) -> bool:
    """Whether the values drawn for ``parameter`` are of the type its annotation declares (where an
    input that raises looks like a bug, ``bug_like``): it is annotated, and its annotation gives a
    strategy or the body's use (``usage``) gave none (then the values seen were drawn)."""
    annotation = parameter.annotation
    return annotation is not None and (parameter.arg not in usage or _readable(annotation, names))


def _left_out(qualname: str, function: ast.FunctionDef, skip_first: bool, names: ModuleNames) -> str:
    """Why the search does not call ``function``: a note for the attempt."""
    args = function.args
    if args.posonlyargs:
        return f"{qualname} (positional-only parameters)"
    positional = args.args[1 if skip_first else 0 : len(args.args) - len(args.defaults)]
    keywords = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    required = [*positional, *(a for a, default in keywords if default is None)]
    unread = [f"{a.arg}: {ast.unparse(a.annotation)}" for a in required
              if a.annotation is not None and not _readable(a.annotation, names)]
    return f"{qualname} (no strategy for {', '.join(unread) or 'a parameter'}, and no value seen)"


def _split_rows(function: ast.FunctionDef, skip_first: bool,
                rows: Sequence[Sequence[str]]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each row seen as (its positional texts, then the items of its ``*args``; its keyword-only
    texts): a recorded call holds every parameter in the order of the code's variables (positional,
    keyword-only, ``*args`` as one tuple, ``**kwargs``); a row of another width, or whose ``*args``
    is not a tuple (a docstring's example), is positional, as it is."""
    args = function.args
    width = len(args.args) - (1 if skip_first else 0)
    at = width + len(args.kwonlyargs)
    full = at + (args.vararg is not None) + (args.kwarg is not None)
    split: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for row in rows:
        items = _tuple_items(row[at]) if args.vararg is not None and len(row) == full else ()
        if len(row) != full or (args.vararg is not None and items is None):
            split.append((tuple(row), ()))
        else:
            split.append(((*row[:width], *(items or ())), tuple(row[width:at])))
    return split


def _tuple_items(text: str) -> tuple[str, ...] | None:
    """The items of a tuple's literal text, each as its ``repr``; None when ``text`` is no tuple."""
    ok, value = literal_value(text)
    return tuple(repr(item) for item in value) if ok and isinstance(value, tuple) else None


def _keyword_strategies(
    function: ast.FunctionDef,
    rows: Sequence[Sequence[str]],
    numbers: Sequence[Decimal],
    strings: Sequence[str],
    usage: Mapping[str, str],
    names: ModuleNames,
) -> list[tuple[ast.arg, str]] | None:
    """Each keyword-only parameter of ``function`` that gets a strategy, with it (``_parameter_strategy``;
    ``rows``: the keyword-only texts seen), each drawing a ``_Keyword`` the driver passes by name
    (``search_driver._keyword``): always for a required one, sometimes for one with a default (left
    out otherwise, as is one that gets no strategy); None when a required one gets none."""
    args = function.args
    strategies: list[tuple[ast.arg, str]] = []
    for index, (parameter, default) in enumerate(zip(args.kwonlyargs, args.kw_defaults, strict=True)):
        texts = [r[index] for r in rows]
        strategy = _parameter_strategy(parameter, default, texts, numbers, strings, usage.get(parameter.arg),
                                       names)
        if strategy is None and default is None:
            return None
        if strategy is not None:
            strategies.append((parameter, f"_keyword({parameter.arg!r}, {strategy}, {default is None!r})"))
    return strategies


def _positional_strategies(
    positional: Sequence[ast.arg],
    defaults: Sequence[ast.expr],
    rows: Sequence[Sequence[str]],
    numbers: Sequence[Decimal],
    strings: Sequence[str],
    usage: Mapping[str, str],
    names: ModuleNames,
) -> list[str] | None:
    """A strategy per parameter of ``positional`` (the last ones given ``defaults``) up to the first
    defaulted one that gets none; None when a required one gets none."""
    required = len(positional) - len(defaults)
    rows = [r for r in rows if len(r) == len(positional)]
    strategies: list[str] = []
    for index, parameter in enumerate(positional):
        texts = [r[index] for r in rows]
        default = defaults[index - required] if index >= required else None
        strategy = _parameter_strategy(parameter, default, texts, numbers, strings, usage.get(parameter.arg),
                                       names)
        if strategy is None:
            return strategies if index >= required else None  # the next keep their defaults too
        strategies.append(strategy)
    return strategies


def _parameter_strategy(
    parameter: ast.arg,
    default: ast.expr | None,
    texts: Sequence[str],
    numbers: Sequence[Decimal],
    strings: Sequence[str],
    used: str | None = None,
    names: ModuleNames = NO_NAMES,
) -> str | None:
    """One parameter's strategy: the module's enum members or classes when its default, annotation
    or values seen say it takes them (``named_inputs``); else from its annotation or, when it has
    none or one that gives none, the values seen (``texts``), the objects seen drawn too; with
    nothing else to go by, from how the body uses it (``used``), else from its default (for a
    required parameter whose annotation gives none, no guess: None)."""
    named = named_strategy(parameter.annotation, default, texts, names)
    if named is not None:
        return named
    if parameter.annotation is None and any(map(is_callable_text, texts)):  # a function was passed
        return used if used and "_callable" in used else callable_strategy()
    values = [value for ok, value in map(literal_value, texts) if ok]
    read = strategy_for(parameter.annotation, values, numbers, strings) if parameter.annotation else None
    strategy = _with_objects(read or strategy_for(None, values, numbers, strings), texts, bool(values))
    if strategy is None and (parameter.annotation is None or default is not None):
        return used or _from_default(default, numbers, strings)
    return strategy or used


def _usage_strategies(
    function: ast.FunctionDef,
    callees: Mapping[str, ast.FunctionDef],
    seen: Seen,
    numbers: Sequence[Decimal],
    strings: Sequence[str],
) -> dict[str, str]:
    """Parameter -> a strategy from how ``function`` uses it (``usage_shapes``): for one passed on as
    it is to a function of the module (``callees``) whose calls the suite recorded, the values seen
    in the place it fills; else the shape its uses give."""
    documented = documented_styles(ast.unparse(function))
    found = {name: shape_strategy(shape, numbers, strings, documented)
             for name, shape in parameter_shapes(function, callees).items()}
    for name in _named_callables(function):
        found.setdefault(name, callable_strategy())
    for name, uses in forwarded(function, callees).items():
        for callee, position in uses:
            texts = [row[position] for row in seen.get(callee, ()) if len(row) > position]
            drawn = from_values([v for ok, v in map(literal_value, texts) if ok], numbers, strings)
            if drawn is not None:
                found[name] = drawn
                break
    return found


_CALLABLE_WORDS = re.compile(r"\b(function|callable|decorator|predicate|callback)\b", re.IGNORECASE)


def _named_callables(function: ast.FunctionDef) -> list[str]:
    """The parameters ``function``'s docstring names a function or callable on their own line
    (``key: a function of one item``, ``:param func: callable to apply``)."""
    lines = (ast.get_docstring(function) or "").splitlines()
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return [name for name in names
            if any(re.search(rf"\b{re.escape(name)}\b", line) and _CALLABLE_WORDS.search(line)
                   for line in lines)]


def _extra_arguments(function: ast.FunctionDef, rows: Sequence[Sequence[str]], numbers: Sequence[Decimal],
                     strings: Sequence[str], source: str) -> tuple[list[str], bool]:
    """Strategies the search passes after the positional parameters' (all of which got one): two
    items of ``*args`` (``_vararg_strategy``), and for a decorator factory (it returns a function it
    defines) what its result is applied to; and whether the last one is that."""
    documented = documented_styles(source)
    item = _vararg_strategy(function, rows, numbers, strings, documented)
    extra = [item, item] if item is not None else []
    inner = _returned_function(function)
    applied = parameter_shapes(inner).get(_first_parameter(inner)) if inner is not None else None
    if applied is None or applied.kind != "callable":
        return extra, False
    made = (callable_strategy(-1, documented, applied=True) if applied.documented
            else callable_strategy(applied.width))
    return [*extra, made], True


def _vararg_strategy(function: ast.FunctionDef, rows: Sequence[Sequence[str]], numbers: Sequence[Decimal],
                     strings: Sequence[str], documented: Sequence[str]) -> str | None:
    """The strategy of an item of ``*args``: callables or mappings when the body uses its items so
    (``for other in others: other.__doc__``, ``for d in dicts: d.items()``), else its annotation's
    (``*sources: Mapping``, around the values seen), else the values seen
    past the positional parameters (``merge({1: 'one'}, {2: 'two'})`` in a docstring, the items of
    a recorded call's ``*args``); None when there is no ``*args`` or nothing to go by."""
    vararg = function.args.vararg
    if vararg is None:
        return None
    shape = parameter_shapes(function).get(vararg.arg)
    if shape is not None and shape.kind == "sequence" and shape.item in ("callable", "mapping"):
        item = Shape(shape.item, width=-1, documented=shape.documented)
        return shape_strategy(item, numbers, strings, documented)
    width = len(function.args.args)
    items = [text for positional, _ in _split_rows(function, False, rows) for text in positional[width:]]
    seen = [v for ok, v in map(literal_value, items) if ok]
    annotated = strategy_for(vararg.annotation, seen, numbers, strings) if vararg.annotation else None
    return annotated or from_values(seen, numbers, strings)


def _returned_function(function: ast.FunctionDef) -> ast.FunctionDef | None:
    """The function ``function`` defines and returns (a decorator factory's decorator), if any."""
    defined = {n.name: n for n in function.body if isinstance(n, ast.FunctionDef)}
    returned = [n.value.id for n in function.body
                if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in defined]
    return defined[returned[0]] if returned else None


def _first_parameter(function: ast.FunctionDef) -> str:
    positional = [*function.args.posonlyargs, *function.args.args]
    return positional[0].arg if positional else ""


def _with_objects(strategy: str | None, texts: Sequence[str], values_seen: bool) -> str | None:
    """``strategy`` drawing the objects the suite passed too (as ``texts``, their builds), each draw a
    fresh copy (a call may change it); them alone when no value was seen."""
    built = list(dict.fromkeys(t for t in texts if is_object_text(t)))[:MAX_SEEN]
    if not built:
        return strategy
    drawn = f"st.sampled_from({built!r}).map(_rebuild)"
    return f"st.one_of({drawn}, {strategy})" if strategy and values_seen else drawn


def _from_default(default: ast.expr | None, numbers: Sequence[Decimal], strings: Sequence[str]) -> str | None:
    """The strategy of a default's kind; without a default, numbers and short strings."""
    if default is None:  # nothing to go by
        return f"st.one_of({int_strategy(numbers)}, {text_strategy(strings)})"
    ok, value = literal_value(ast.unparse(default))
    return from_values([value], numbers, strings) if ok else None


def searched_functions(
    source: str, qualnames: Iterable[str], seen: Seen, numbers: Sequence[Decimal],
    dropped: list[str] | None = None,
) -> list[SearchedFunction]:
    """The module-level public functions of ``source`` named in ``qualnames`` that the search can call
    (``_parameters``); those it cannot, with why, added to ``dropped``. ``seen``: qualname ->
    argument tuples recorded from the suite (literal texts, positional). A name the module does not
    hold after its import (``import_names``) is left out."""
    left = [] if dropped is None else dropped
    tree = ast.parse(source)
    held = names_held(tree)
    wanted = {q for q in qualnames if held_after_import(q, held)}
    strings = _module_strings(tree, seen)
    callees = _module_functions(tree)
    names = module_names(tree)
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in wanted or node.name.startswith("_"):
            continue
        rows = [*_doctest_rows(node), *(tuple(r) for r in seen.get(node.name, ()))]
        usage = _usage_strategies(node, callees, seen, numbers, strings)
        made = _parameters(node, False, rows, numbers, strings, usage, names)
        if made is None:
            left.append(_left_out(node.name, node, False, names))
            continue
        strategies, keywords, typed = made
        complete = len(strategies) == len(node.args.args)
        extra, applied = _extra_arguments(node, rows, numbers, strings, source) if complete else ([], False)
        width = len(strategies) + (len(extra) if not applied else 0)
        seeds = _seeds(node, rows, width) if not applied else ()
        drawn = (*strategies, *extra[: len(extra) - applied], *keywords, *extra[len(extra) - applied :])
        found.append(SearchedFunction(node.name, drawn, typed, seeds[:MAX_SEEN], applied))
    return found


def _seeds(
    function: ast.FunctionDef, rows: Sequence[Sequence[str]], width: int
) -> tuple[tuple[str, ...], ...]:
    """The rows seen as the search's first inputs: their ``width`` first positional texts, then their
    keyword-only ones, each as the driver's ``_Keyword`` (passed by name); when ``function`` has a
    required keyword-only parameter, only the rows that hold it (a recorded call)."""
    names = [a.arg for a in function.args.kwonlyargs]
    required = any(d is None for d in function.args.kw_defaults)
    seeds = []
    for positional, keywords in _split_rows(function, False, rows):
        if len(positional) < width or not literals(positional[:width]) or (required and not keywords):
            continue
        named = [f"_Keyword({n!r}, {t})" for n, t in zip(names, keywords, strict=False) if literals([t])]
        seeds.append((*positional[:width], *named))
    return tuple(dict.fromkeys(seeds))


def _module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module-level functions of ``tree``, by name."""
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _class_methods(classes: Mapping[str, ast.ClassDef], name: str) -> dict[str, tuple[str, ast.FunctionDef]]:
    """Method name -> (the class defining it, its definition): the plain methods of class ``name``,
    its bases' in this module included (its own win)."""
    node = classes[name]
    methods: dict[str, tuple[str, ast.FunctionDef]] = {}
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id != name:
            methods.update(_class_methods(classes, base.id))
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and not item.decorator_list:
            methods[item.name] = (name, item)
    own = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
    made = _dataclass_init(node) if "__init__" not in own else None
    if made is not None:
        methods["__init__"] = (name, made)
    return methods


def _is_dataclass(node: ast.ClassDef) -> bool:
    """Whether ``node`` is decorated ``@dataclass`` (``@dataclasses.dataclass(...)`` too)."""
    return any(ast.unparse(d.func if isinstance(d, ast.Call) else d).endswith("dataclass")
               for d in node.decorator_list)


def _dataclass_init(node: ast.ClassDef) -> ast.FunctionDef | None:
    """The ``__init__`` a dataclass gets, written out: a parameter per field (``ClassVar`` and
    ``field(init=False)`` ones left out), annotated and defaulted as declared, each stored under its
    name (``self.logger = logger``); None for another class."""
    if not _is_dataclass(node):
        return None
    parameters: list[ast.arg] = [ast.arg("self")]
    defaults: list[ast.expr] = []
    for item in node.body:
        if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
            continue
        value = item.value
        told = {k.arg: k.value for k in value.keywords} if isinstance(value, ast.Call) else {}
        no_init = ast.unparse(told.get("init", ast.Constant(True))) == "False"
        if "ClassVar" in ast.unparse(item.annotation) or no_init:
            continue
        parameters.append(ast.arg(item.target.id, item.annotation))
        default = told.get("default", value) if told else value
        defaults += [default] if default is not None else []
    body: list[ast.stmt] = [ast.parse(f"self.{a.arg} = {a.arg}").body[0] for a in parameters[1:]]
    arguments = ast.arguments(posonlyargs=[], args=parameters, kwonlyargs=[], kw_defaults=[],
                              defaults=defaults)
    return ast.FunctionDef(name="__init__", args=arguments, body=body or [ast.Pass()], decorator_list=[],
                           returns=None, type_comment=None, lineno=node.lineno)


def _seen_for(seen: Seen, name: str, owner: str, method: str) -> list[Sequence[str]]:
    """The argument tuples recorded for ``method`` on class ``name`` or on the class defining it."""
    return [*seen.get(f"{name}.{method}", ()), *(seen.get(f"{owner}.{method}", ()) if owner != name else ())]


def _annotated(function: ast.FunctionDef, skip_first: bool, names: ModuleNames) -> bool:
    """Whether ``function`` has parameters (``self``/``cls`` aside when ``skip_first``), all annotated
    and drawn as declared (``_declared``)."""
    args = function.args
    parameters = [*args.posonlyargs, *args.args][1 if skip_first else 0 :] + args.kwonlyargs
    used = parameter_shapes(function)
    return bool(parameters) and all(_declared(a, names, used) for a in parameters)


def annotated_members(source: str) -> frozenset[str]:
    """The qualnames (``f``, ``Cls.method``: inherited methods under each subclass too) of the
    module-level functions and plain methods whose parameters, ``self``/``cls`` aside, are all
    annotated (at least one) and drawn as declared: where an input "the types allow" has a meaning
    (``bug_like``)."""
    tree = ast.parse(source)
    names = module_names(tree)
    found = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and _annotated(n, False, names)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for name in classes:
        methods = _class_methods(classes, name).items()
        found |= {f"{name}.{m}" for m, (_, node) in methods if _annotated(node, True, names)}
    return frozenset(found)


def searched_classes(
    source: str, qualnames: Iterable[str], seen: Seen, numbers: Sequence[Decimal],
    dropped: list[str] | None = None,
) -> list[SearchedClass]:
    """The module-level classes of ``source`` with a method in ``qualnames`` that the search can build
    (a public class: its ``__init__``'s parameters, or none; a private one, or one whose ``__init__``
    gets no strategies: a public function returning it, ``_factories``) and drive: each public plain
    method and each special method of ``OPERATOR_SYNTAX`` whose parameters get strategies
    (``_parameters``; ``seen`` keyed ``Class.method``, ``self`` left out); the constructors and
    methods it cannot call, with why, added to ``dropped``. Classes and factories the module does
    not hold after its import (``import_names``) are left out."""
    left = [] if dropped is None else dropped
    tree = ast.parse(source)
    held = names_held(tree)
    wanted = {q for q in qualnames if held_after_import(q, held)}
    strings = _module_strings(tree, seen)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    factories = _factories(tree, set(classes), held)
    names = module_names(tree)
    found = []
    for name in classes:
        if not any(q.startswith(name + ".") for q in wanted):
            continue
        methods = _class_methods(classes, name)
        usage = _init_usage(classes[name], methods, numbers, strings)
        built = _construction(name, methods, factories.get(name, []), seen, numbers, strings, usage, names)
        if built is None:
            left += [_left_out(f"{name}.__init__", m[1], True, names) for m in [methods.get("__init__")] if m]
            continue
        (init, typed), factory = built
        calls = _method_calls(name, methods, seen, numbers, strings, _others(factory or name, init), names)
        called = {method for method, _ in calls}
        left += [_left_out(f"{name}.{m}", node, True, names) for m, (_, node) in methods.items()
                 if m not in called and (not m.startswith("_") or m in OPERATOR_SYNTAX)]
        if calls:
            found.append(SearchedClass(name, tuple(init), tuple(calls), typed, factory))
    return found


def _construction(
    name: str,
    methods: Mapping[str, tuple[str, ast.FunctionDef]],
    factories: Sequence[ast.FunctionDef],
    seen: Seen,
    numbers: Sequence[Decimal],
    strings: Sequence[str],
    usage: Mapping[str, str] | None = None,
    names: ModuleNames = NO_NAMES,
) -> tuple[tuple[list[str], bool], str | None] | None:
    """How the search makes objects of class ``name``: (its ``__init__``'s strategies and whether they
    came from annotations, None) for a public class, else (a factory's, its name); None when neither
    can be called. ``usage``: ``__init__``'s parameter -> a strategy from how the class uses it."""
    if not name.startswith("_"):
        owner, init = methods.get("__init__", (name, None))
        recorded = _seen_for(seen, name, owner, "__init__")
        made = _parameters(init, True, recorded, numbers, strings, usage, names) if init else ([], [], True)
        if made is not None:
            items = _recorded_varargs(init, made[0], recorded, numbers, strings) if init else []
            return ([*made[0], *items, *made[1]], made[2]), None
    for function in factories:
        rows = [*_doctest_rows(function), *(tuple(r) for r in seen.get(function.name, ()))]
        made = _parameters(function, False, rows, numbers, strings, None, names)
        if made is not None:
            return ([*made[0], *made[1]], made[2]), function.name
    return None


def _method_calls(
    name: str,
    methods: Mapping[str, tuple[str, ast.FunctionDef]],
    seen: Seen,
    numbers: Sequence[Decimal],
    strings: Sequence[str],
    others: str = "",
    names: ModuleNames = NO_NAMES,
) -> list[tuple[str, tuple[str, ...]]]:
    """The methods a sequence on class ``name`` calls, each with a strategy per parameter (from how the
    method uses it when nothing else says): the public plain ones and the special ones of
    ``OPERATOR_SYNTAX`` whose parameters get strategies; its own
    ``__eq__`` and ``__hash__`` given other objects of the class too (``others``: ``obj == other``,
    ``hash(obj) == hash(other)``)."""
    calls: list[tuple[str, tuple[str, ...]]] = []
    for method_name, (owner, method) in methods.items():
        if method_name.startswith("_") and method_name not in OPERATOR_SYNTAX:
            continue
        recorded = _seen_for(seen, name, owner, method_name)
        usage = _usage_strategies(method, {}, seen, numbers, strings)
        parameters = _parameters(method, True, recorded, numbers, strings, usage, names)
        if method_name == "__hash__" and others:
            calls.append((method_name, (others,)))
        elif method_name == "__eq__" and others and parameters is not None and len(parameters[0]) == 1:
            calls.append((method_name, (f"st.one_of({others}, {parameters[0][0]})",)))
        elif parameters is not None and method_name != "__hash__":
            items = _recorded_varargs(method, parameters[0], recorded, numbers, strings)
            calls.append((method_name, (*parameters[0], *items, *parameters[1])))
    return calls


def _recorded_varargs(method: ast.FunctionDef, drawn: Sequence[str], rows: Sequence[Sequence[str]],
                      numbers: Sequence[Decimal], strings: Sequence[str]) -> list[str]:
    """A strategy per item of ``*args`` in the recorded calls of ``method`` (``self`` aside) whose
    positional parameters all got one (``drawn``): each item drawn like those seen in its place, in
    the calls of the commonest width (``Dict({'a': {'b': 1}})``: one, dicts like that one); none
    without ``*args`` or a recorded call passing items."""
    args = method.args
    width = len(args.args) - 1
    at = width + len(args.kwonlyargs)
    full = at + 1 + (args.kwarg is not None)
    if args.vararg is None or len(drawn) != width:
        return []
    passed = [value for row in rows if len(row) == full for ok, value in [literal_value(row[at])] if ok]
    tuples = [value for value in passed if isinstance(value, tuple) and value]
    if not tuples:
        return []
    common = Counter(len(t) for t in tuples).most_common(1)[0][0]
    columns = [[t[i] for t in tuples if len(t) == common] for i in range(common)]
    return all_present([strategy_for(None, column, numbers, strings) for column in columns]) or []


def _others(maker: str, init: Sequence[str]) -> str:
    """The strategy of other objects of a searched class made by ``maker`` (the class, or its factory)
    from ``init``'s strategies: each written as that call (``search_driver._construct``)."""
    return f"st.tuples({', '.join(init)}).map(functools.partial(_construct, _target.{maker}, {maker!r}))"


def _init_usage(node: ast.ClassDef, methods: Mapping[str, tuple[str, ast.FunctionDef]],
                numbers: Sequence[Decimal], strings: Sequence[str]) -> dict[str, str]:
    """``__init__``'s parameter -> a strategy from how the class uses it
    (``usage_shapes.attribute_shapes``: ``self.key = key`` and later ``self.key(item)``: callables of
    one argument)."""
    owner, init = methods.get("__init__", ("", None))
    if init is None or owner != node.name:
        return {}
    return {name: shape_strategy(shape, numbers, strings)
            for name, shape in attribute_shapes(node, init).items()}


def _factories(
    tree: ast.Module, classes: set[str], held: Collection[str]
) -> dict[str, list[ast.FunctionDef]]:
    """Class name -> the module's public functions (of ``held``) with a ``return Class(...)``: how a
    private class's objects are made (``complement(wrapped)`` returns a ``_ComplementSet``)."""
    found: dict[str, list[ast.FunctionDef]] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_") or node.name not in held:
            continue
        made = {
            n.value.func.id
            for n in ast.walk(node)
            if isinstance(n, ast.Return)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name)
            and n.value.func.id in classes
        }
        for name in sorted(made):
            found.setdefault(name, []).append(node)
    return found
