"""What a run spent on the model: the record of each call, and the one ledger that sums them.

A call's record travels back as a value (on the answer, on an error, on the observation a step
returns); whoever needs a total adds records to a ``CostLedger`` and asks it. The ledger is
immutable, so a state machine can hold one in its state and replay it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LLMCall", "LedgerTotals", "CostLedger", "unpriced_models", "price_problem"]


class LLMCall(BaseModel):
    """The record of one LLM call (all its attempts), answered or failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    purpose: str = Field(description="What the call was for, e.g. 'inspection-patch'.")
    model: str = Field(description="The model that answered (or, for a failure, was asked last).")
    prompt_hash: str = Field(description="prompt_hash() of the messages sent.")
    input_tokens: int | None = Field(default=None, description="Prompt tokens; None if not reported.")
    output_tokens: int | None = Field(default=None, description="Completion tokens; None if not reported.")
    cost_usd: float | None = Field(default=None, description="From the price table; None if unknown.")
    latency_s: float = Field(default=0.0, ge=0, description="Seconds the answering request took.")
    attempts: int = Field(default=1, ge=1, description="Requests made, the answering one included.")
    fell_back: bool = Field(default=False, description="The backup model answered (or was asked last).")
    cached: bool = Field(default=False, description="Served from Prefect's cache: nothing was spent.")
    mean_entropy: float | None = Field(
        default=None, description="Mean token entropy (nats) from logprobs, when they were asked for."
    )
    finish_reason: str | None = Field(default=None, description="The endpoint's finish reason.")
    error: str | None = Field(default=None, description="Why the call failed; None when it answered.")
    at: datetime | None = Field(default=None, description="When the call ended (UTC).")

    @property
    def spent_usd(self) -> float:
        """What this call cost: nothing when it came from the cache or has no price."""
        return 0.0 if self.cached else (self.cost_usd or 0.0)


class LedgerTotals(BaseModel):
    """Sums over the calls a ledger has seen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = 0
    failed_calls: int = 0
    cached_calls: int = 0
    unpriced_calls: int = Field(default=0, description="Answered calls with no price or no usage.")
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class CostLedger(BaseModel):
    """The calls of a run, in the order they were added: the one place their cost is summed.

    A cached call is counted but costs nothing; a failed call is counted with what it reported.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: tuple[LLMCall, ...] = ()

    def plus(self, calls: Iterable[LLMCall]) -> CostLedger:
        """This ledger with ``calls`` added."""
        added = tuple(calls)
        return self if not added else CostLedger(calls=(*self.calls, *added))

    @property
    def usd(self) -> float:
        """USD spent, rounded to a millionth of a dollar (what reports show)."""
        return round(sum(call.spent_usd for call in self.calls), 6)

    @property
    def paid_calls(self) -> tuple[LLMCall, ...]:
        """The calls that went to the endpoint (not served from the cache): what the history keeps."""
        return tuple(call for call in self.calls if not call.cached)

    def totals(self) -> LedgerTotals:
        """Counts, tokens and cost over every call."""
        paid = self.paid_calls
        return LedgerTotals(
            calls=len(self.calls),
            failed_calls=sum(1 for c in self.calls if c.error is not None),
            cached_calls=len(self.calls) - len(paid),
            unpriced_calls=sum(1 for c in paid if c.error is None and c.cost_usd is None),
            input_tokens=sum(c.input_tokens or 0 for c in paid),
            output_tokens=sum(c.output_tokens or 0 for c in paid),
            cost_usd=sum(c.cost_usd or 0.0 for c in paid),
        )


def unpriced_models(models: Sequence[str | None], priced: Collection[str]) -> list[str]:
    """The models of ``models`` (the primary, the backup; None: none) that ``priced`` does not name,
    in order, each once."""
    return [m for i, m in enumerate(models) if m and m not in priced and m not in models[:i]]


def price_problem(models: Sequence[str | None], priced: Collection[str], cap_usd: float | None,
                  price_input: float | None, price_output: float | None) -> str | None:
    """Why a run may not use ``models`` as configured, or None when it may.

    A run with a cost cap (``cap_usd`` not None) may ask only models whose calls have a price: those
    ``priced`` names, and the others once both ``price_input`` and ``price_output`` are given. One
    price without the other is a problem whatever the cap. Deterministic runs never ask: the caller
    asks only for the models a run would use.
    """
    if (price_input is None) != (price_output is None):
        given, missing = ("--price-input", "--price-output") if price_output is None else (
            "--price-output", "--price-input")
        return f"{given} is given without {missing}: give both (USD per million tokens)"
    missing_price = unpriced_models(models, priced)
    if cap_usd is None or not missing_price or price_input is not None:
        return None
    names = ", ".join(repr(m) for m in missing_price)
    which = "has" if len(missing_price) == 1 else "have"
    return (f"the model {names} {which} no known price, so the cost cap (${cap_usd:g}) could not stop "
            "its spending: give its prices in USD per million tokens (--price-input and --price-output, "
            "price_input and price_output in [tool.equisa], or EQUISA_PRICE_INPUT and "
            "EQUISA_PRICE_OUTPUT), or run explicitly without a cap (--max-cost none)")
