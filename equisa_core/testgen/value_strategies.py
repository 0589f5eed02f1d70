"""Hypothesis strategies (as the text of expressions, for the input search's driver) from the values
a parameter was seen with: each kind seen gives one alternative, containers of varied sizes up to a
few more than the longest seen, numbers near the constants and the values seen, strings from those
seen and texts over their characters; mappings of no declared types (``mapping_strategy``) and values
of any type (``any_strategy``) from those seen too."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from equisa_core.inputs.neighbours import edges

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "EXTRA_LENGTH",
    "MAX_DICT_KEYS",
    "MAX_SEEN",
    "all_present",
    "any_strategy",
    "elements",
    "float_strategy",
    "from_values",
    "int_strategy",
    "mapping_strategy",
    "max_length",
    "numbers_in",
    "strings_in",
    "text_strategy",
    "value_type_strategy",
]

#: Dicts with at most this many string keys seen are drawn key by key (``_dict_strategy``).
MAX_DICT_KEYS = 40
#: The longest container drawn beyond the longest one seen.
EXTRA_LENGTH = 4
#: Containers drawn with no observation to size them go up to this length.
DEFAULT_MAX_LENGTH = 6
#: Values seen (per parameter) that seed the strategies' sampled numbers and strings.
MAX_SEEN = 12

#: The standard library's value types drawn around the values seen (``value_type_strategy``).
_VALUE_TYPES: tuple[type, ...] = (datetime.datetime, datetime.date, datetime.timedelta, Decimal)
#: The containers drawn with an element strategy, and the strategy that draws each.
_CONTAINERS: tuple[tuple[type, str], ...] = (
    (list, "st.lists"),
    (set, "st.sets"),
    (frozenset, "st.frozensets"),
)


def numbers_in(values: Iterable[object]) -> list[Decimal]:
    """The finite numbers among ``values`` and inside their containers (a dict's keys too), once
    each, booleans left out."""
    found: list[Decimal] = []
    for value in values:
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float | Decimal):
            number = Decimal(str(value))
            if number.is_finite() and number not in found:
                found.append(number)
        elif isinstance(value, list | tuple | set | frozenset):
            found += [n for n in numbers_in(value) if n not in found]
        elif isinstance(value, dict):
            found += [n for n in numbers_in([*value.keys(), *value.values()]) if n not in found]
    return found


def strings_in(values: Iterable[object]) -> list[str]:
    """The strings among ``values`` and inside their containers (a dict's keys too), once each."""
    found: list[str] = []
    for value in values:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list | tuple | set | frozenset):
            found += strings_in(value)
        elif isinstance(value, dict):
            found += strings_in([*value.keys(), *value.values()])
    return list(dict.fromkeys(found))


def int_strategy(numbers: Sequence[Decimal]) -> str:
    """Integers: each of ``numbers`` (and 0, 1, -1) and its edges (``equisa_core.inputs.neighbours``)
    often, any in their range too."""
    ints = sorted({int(n) for n in numbers} | {0, 1, -1})
    near = sorted({int(edge) for i in ints for edge in edges(Decimal(i))})
    low, high = min(near), max(near)
    return f"st.one_of(st.sampled_from({near!r}), st.integers(min_value={low}, max_value={high}))"


def float_strategy(numbers: Sequence[Decimal]) -> str:
    """Floats: each of ``numbers`` (and 0, 1, -1) often, any finite one around their range too."""
    values = sorted({float(n) for n in numbers} | {0.0, 1.0, -1.0})
    low, high = min(values) - 1.0, max(values) + 1.0
    return (
        f"st.one_of(st.sampled_from({values!r}), st.floats(min_value={low!r}, max_value={high!r}, "
        "allow_nan=False, allow_infinity=False))"
    )


def text_strategy(strings: Sequence[str]) -> str:
    """Texts: the first ``MAX_SEEN`` of ``strings`` (and ``''``, ``'a'``), and short texts over their
    characters."""
    samples = list(dict.fromkeys(["", "a", *strings[:MAX_SEEN]]))
    alphabet = "".join(sorted(set("ab 0" + "".join(strings[:MAX_SEEN]))))[:40]
    return f"st.one_of(st.sampled_from({samples!r}), st.text(alphabet={alphabet!r}, max_size=8))"


def all_present(parts: Sequence[str | None]) -> list[str] | None:
    """``parts`` when every one is a strategy, else None."""
    present = [part for part in parts if part]
    return present if len(present) == len(parts) else None


def elements(seen: Sequence[object]) -> list[object]:
    """The items of the containers seen (a dict's keys): what an element strategy is seeded with."""
    items: list[object] = []
    for value in seen:
        if isinstance(value, list | tuple | set | frozenset):
            items += list(value)
        elif isinstance(value, dict):
            items += list(value)
    return items


def max_length(seen: Sequence[object]) -> int:
    """The longest container to draw: ``EXTRA_LENGTH`` more than the longest seen, else
    ``DEFAULT_MAX_LENGTH``."""
    lengths = [len(v) for v in seen if isinstance(v, list | tuple | set | frozenset | dict | str)]
    return max(lengths) + EXTRA_LENGTH if lengths else DEFAULT_MAX_LENGTH


def _dict_strategy(
    dicts: Sequence[dict[Any, Any]], numbers: Sequence[Decimal], strings: Sequence[str]
) -> str:
    """Dicts like those seen. String keys (a few dozen at most, as options and records have): each
    key seen present or not, its value drawn from the values seen under it or, now and then, from
    those seen under any key (what a function that checks each option is given wrong); other keys:
    dicts of the keys and values seen."""
    items = [x for d in dicts for x in d.values()]
    anything = from_values(items, numbers, strings) or int_strategy(numbers)
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    if keys and len(keys) <= MAX_DICT_KEYS and all(type(k) is str for k in keys):
        per_key = {key: [d[key] for d in dicts if key in d] for key in keys}
        optional = ", ".join(
            f"{key!r}: {_value_strategy(values, anything, numbers, strings)}"
            for key, values in per_key.items()
        )
        return f"st.fixed_dictionaries({{}}, optional={{{optional}}})"
    key = from_values(keys, numbers, strings) or text_strategy(strings)
    return f"st.dictionaries({key}, {anything}, max_size={max_length(dicts)})"


def _value_strategy(
    values: Sequence[object], anything: str, numbers: Sequence[Decimal], strings: Sequence[str]
) -> str:
    """One dict key's values: those seen under it, others of their kinds, and ``anything``."""
    plain = (str, int, float, bool, type(None))
    exact = list(dict.fromkeys(repr(v) for v in values if isinstance(v, plain)))
    parts = [f"st.sampled_from([{', '.join(exact[:MAX_SEEN])}])"] if exact else []
    parts += [from_values(values, numbers, strings) or anything, anything]
    return f"st.one_of({', '.join(parts)})"


def value_type_strategy(kind: type, seen: Sequence[Any]) -> str:
    """Dates, datetimes (naive), timedeltas or decimals around the values seen (a year either side
    of the dates; up to twice the longest timedelta, either sign; decimals with their places)."""
    if kind is datetime.datetime or kind is datetime.date:
        return _date_strategy(kind, seen)
    if kind is datetime.timedelta:
        longest = max((abs(v) for v in seen), default=datetime.timedelta(days=1)) * 2
        return f"st.timedeltas({-longest!r}, {longest!r})"
    places = max((-v.as_tuple().exponent for v in seen if v.is_finite()), default=2)
    bound = max((abs(v) for v in seen if v.is_finite()), default=Decimal(100)) * 2 + 1
    return (
        f"st.decimals(min_value={str(-bound)!r}, max_value={str(bound)!r}, places={max(places, 0)}, "
        "allow_nan=False, allow_infinity=False)"
    )


def _date_strategy(kind: type, seen: Sequence[Any]) -> str:
    """Dates or datetimes from a year before the earliest seen to a year after the latest, the ones
    seen drawn often."""
    year = datetime.timedelta(days=366)
    start = datetime.datetime(2000, 1, 1)
    low = min(seen, default=start if kind is datetime.datetime else start.date())
    high = max(seen, default=low)
    maker = "st.datetimes" if kind is datetime.datetime else "st.dates"
    drawn = f"{maker}({low - year!r}, {high + year!r})"
    return f"st.one_of(st.sampled_from({sorted(set(seen))!r}), {drawn})" if seen else drawn


def from_values(seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]) -> str | None:
    """A strategy of the shape of the values seen: each kind seen gives one alternative."""
    if not seen:
        return None
    kinds = {type(v) for v in seen}
    options = _scalar_options(kinds, numbers, strings)
    options += [value_type_strategy(t, [v for v in seen if type(v) is t]) for t in _VALUE_TYPES if t in kinds]
    options += _tuple_options(seen, numbers, strings)
    options += _container_options(seen, numbers, strings)
    dicts = [v for v in seen if type(v) is dict]
    if dicts:
        options.append(_dict_strategy(dicts, numbers, strings))
    if not options:
        return None
    return options[0] if len(options) == 1 else f"st.one_of({', '.join(options)})"


def _scalar_options(kinds: set[type], numbers: Sequence[Decimal], strings: Sequence[str]) -> list[str]:
    """One strategy per kind of scalar seen: booleans, ints, floats, strings, None (in this order)."""
    options = ["st.booleans()"] if bool in kinds else []
    options += [int_strategy(numbers)] if int in kinds else []
    options += [float_strategy(numbers)] if float in kinds else []
    options += [text_strategy(strings)] if str in kinds else []
    options += ["st.none()"] if type(None) in kinds else []
    return options


def _tuple_options(seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]) -> list[str]:
    """Tuples of each of the first three widths seen, each column drawn like the values seen in it."""
    tuples = [v for v in seen if type(v) is tuple]
    options = []
    for width in sorted({len(t) for t in tuples})[:3]:
        columns = [
            from_values([t[i] for t in tuples if len(t) == width], numbers, strings) for i in range(width)
        ]
        drawn = all_present(columns)
        if drawn is not None:
            options.append(f"st.tuples({', '.join(drawn)})")
    return options


def _container_options(
    seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]
) -> list[str]:
    """Lists, sets and frozensets like those seen: their items' kinds (else ints), up to a few more."""
    options = []
    for kind, maker in _CONTAINERS:
        containers = [v for v in seen if type(v) is kind]
        if containers:
            element = from_values(elements(containers), numbers, strings) or int_strategy(numbers)
            options.append(f"{maker}({element}, max_size={max_length(containers)})")
    return options


def mapping_strategy(seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]) -> str:
    """Dicts for a mapping of no declared types (``dict``, ``Mapping``): like the dicts seen
    (``from_values``), and dicts of texts (the strings seen among them, a seen key often present on
    both sides of a two-mapping call) or of the other keys seen, to the values seen under any key
    (nested as they nest), else to ints, and to small containers (``open_values``)."""
    dicts = [v for v in seen if isinstance(v, dict)]
    keys = [k for d in dicts for k in d]
    texts = all(type(k) is str for k in keys)
    key = (None if texts else from_values(keys, numbers, strings)) or text_strategy(strings)
    value = from_values([x for d in dicts for x in d.values()], numbers, strings) or int_strategy(numbers)
    drawn = f"st.dictionaries({key}, {open_values(value, key, numbers)}, max_size={max_length(dicts)})"
    like = from_values([d for d in dicts if type(d) is dict], numbers, strings)
    return f"st.one_of({like}, {drawn})" if like else drawn


def open_values(value: str, key: str, numbers: Sequence[Decimal]) -> str:
    """The values of a mapping that declares none: ``value`` (those seen, else ints), and small
    lists, sets, tuples and dicts of ints, since code over such a mapping often branches on its
    values' kinds (merging lists, sets and nested dicts each its own way)."""
    ints = int_strategy(numbers)
    small = f"st.lists({ints}, max_size=3)"
    return (f"st.one_of({value}, {small}, st.sets({ints}, max_size=3), {small}.map(tuple), "
            f"st.dictionaries({key}, {ints}, max_size=2))")


def any_strategy(seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]) -> str:
    """Values of any type (``Any``, ``object``): of the kinds seen, else ints, texts or None."""
    return from_values(seen, numbers, strings) or (
        f"st.one_of({int_strategy(numbers)}, {text_strategy(strings)}, st.none())"
    )
