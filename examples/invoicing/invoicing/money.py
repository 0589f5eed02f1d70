"""Money amounts: a ``Decimal`` rounded half up to cents, tagged with an ISO currency code."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = ["CENT", "CurrencyMismatch", "Money", "format_amount", "quantize", "to_decimal"]

CENT = Decimal("0.01")
SYMBOLS = {"EUR": "€", "GBP": "£", "USD": "$"}


class CurrencyMismatch(ValueError):
    """Two amounts in different currencies were combined."""


def to_decimal(value) -> Decimal:
    """Convert an int, str, float or Decimal to ``Decimal``.

    Floats go through ``repr`` so that ``0.1`` becomes ``Decimal("0.1")``, not the binary
    approximation. Booleans and unparsable strings raise.
    """
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        raise TypeError("a bool is not an amount")
    if isinstance(value, float):
        value = repr(value)
    try:
        return Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a number: {value!r}") from None


def quantize(value, exponent: Decimal = CENT) -> Decimal:
    """Round ``value`` half up to ``exponent`` (cents by default)."""
    return to_decimal(value).quantize(exponent, rounding=ROUND_HALF_UP)


def format_amount(amount, currency: str = "EUR") -> str:
    """``1234.5, "EUR"`` -> ``"€1,234.50"``; unknown currencies get their code as a suffix."""
    value = quantize(amount)
    sign = "-" if value < 0 else ""
    digits = f"{abs(value):,.2f}"
    symbol = SYMBOLS.get(currency.upper())
    if symbol is None:
        return f"{sign}{digits} {currency.upper()}"
    return f"{sign}{symbol}{digits}"


def _same_currency(left: Money, right: object) -> Money:
    """Return ``right`` when it is Money in ``left``'s currency, else raise."""
    if not isinstance(right, Money):
        raise TypeError(f"expected Money, got {type(right).__name__}")
    if right.currency != left.currency:
        raise CurrencyMismatch(f"cannot combine {left.currency} with {right.currency}")
    return right


@dataclass(frozen=True)
class Money:
    """An amount of money; arithmetic keeps the currency and re-rounds to cents."""

    amount: Decimal
    currency: str = "EUR"

    def __post_init__(self) -> None:
        object.__setattr__(self, "amount", quantize(self.amount))
        object.__setattr__(self, "currency", self.currency.upper())

    def __add__(self, other: Money) -> Money:
        other = _same_currency(self, other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        other = _same_currency(self, other)
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor) -> Money:
        return Money(self.amount * to_decimal(factor), self.currency)

    __rmul__ = __mul__

    def __str__(self) -> str:
        return format_amount(self.amount, self.currency)
