"""Rebuilding recorded objects inside the sandbox: the build markers as functions (stdlib only).

Not imported by EQUISA: ``input_search.REBUILD_HELPERS`` is this file's text, put at the top of the
modules that call functions with recorded objects, and inlined into the input search's driver
(``search_driver.py``). They run under the suite's interpreter, so this file keeps to what Python 3.8
runs. A build (``__equisa_object__('m:C', {...})``, ``equisa_core.common.values``) is evaluated
with ``_BUILD_NAMES``: the markers import the class and set the recorded state without running
``__init__``, as carved tests rebuild objects (``values.build_expression``).
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import importlib as _importlib
import pathlib
import uuid
from typing import Any


def _named_class(type_name: str) -> Any:
    module, _, qualname = type_name.partition(":")
    found: Any = _importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def __equisa_class__(type_name: str) -> Any:
    return _named_class(type_name)


def __equisa_object__(type_name: str, attributes: dict[str, Any], slots: dict[str, Any] | None = None) -> Any:
    cls = _named_class(type_name)
    obj = cls.__new__(cls)
    if attributes:
        vars(obj).update(attributes)
    for name, value in (slots or {}).items():
        object.__setattr__(obj, name, value)
    return obj


_BUILD_NAMES: dict[str, Any] = {
    "__builtins__": {"float": float, "set": set, "frozenset": frozenset},
    "__equisa_object__": __equisa_object__,
    "__equisa_class__": __equisa_class__,
    "datetime": datetime,
    "decimal": decimal,
    "fractions": fractions,
    "pathlib": pathlib,
    "uuid": uuid,
}
