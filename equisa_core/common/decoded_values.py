"""The values decoded builds stand for in this process (see ``equisa_core.common.values``).

A build names an enum member, a class or a plain object of the user's code, whose module is never
imported here: each is a read-only stand-in carrying its names (``EnumMember``, ``ClassValue``) or
its recorded attributes (``ObjectValue``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["ClassValue", "EnumMember", "ObjectValue"]


class EnumMember:
    """An enum member named by a build (``shop.status.Status.PAID``); its class is never imported."""

    __slots__ = ("owner", "name")
    owner: str
    name: str

    def __init__(self, owner: str, name: str) -> None:
        object.__setattr__(self, "owner", owner)
        object.__setattr__(self, "name", name)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("an EnumMember is read-only")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EnumMember):
            return NotImplemented
        return (self.owner, self.name) == (other.owner, other.name)

    def __hash__(self) -> int:
        return hash((EnumMember, self.owner, self.name))

    def __repr__(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class ClassValue:
    """A class named by a build (``'builtins:int'``, ``'shop.cart:Cart'``); it is never imported."""

    type_name: str

    def __repr__(self) -> str:
        return self.type_name.partition(":")[2]


class ObjectValue:
    """A read-only view of an object a build describes: its type's name and its attributes.

    ``__type__`` is ``'module:Qualname'``; ``__attributes__`` maps every recorded attribute
    (``__dict__`` and slots) to its decoded value, which attribute access also reads
    (``money.amount``). The class itself is never imported.
    """

    __slots__ = ("__type__", "__attributes__")

    def __init__(self, type_name: str, attributes: Mapping[str, Any]) -> None:
        object.__setattr__(self, "__type__", type_name)
        object.__setattr__(self, "__attributes__", MappingProxyType(dict(attributes)))

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__attributes__[name]
        except KeyError:
            raise AttributeError(f"{self.__type__} object has no recorded attribute {name!r}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("an ObjectValue is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("an ObjectValue is read-only")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectValue):
            return NotImplemented
        return self.__type__ == other.__type__ and dict(self.__attributes__) == dict(other.__attributes__)

    def __hash__(self) -> int:
        return hash((self.__type__, tuple(self.__attributes__.items())))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.__attributes__.items())
        return f"{self.__type__.partition(':')[2]}({fields})"
