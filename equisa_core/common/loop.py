"""The one shape of every loop's state machine: steps out, observations in, a verdict at the end.

Each loop (``equisa_core.discovery``, ``.localization``, ``.validation``, ``.testgen``) keeps its
decisions in a pure state machine with this shape, and its Prefect flow only drives it:

- a serializable, frozen ``State`` (pydantic);
- ``next_steps(state)``: what to run next, as data (test batches, inspections, mutant rounds, model
  calls); an empty list when nothing is left;
- ``record(state, observation)``: the next state, given what one step observed;
- ``verdict(state)``: ``None`` while the loop goes on, else a final ``Verdict`` that says why it
  stopped.

No I/O, no Prefect and no clock in a machine: the same observations, replayed, give the same
states (``replay``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "Verdict", "replay"]


class Frozen(BaseModel):
    """The base of every state, step and observation: immutable, and strict about its fields (a
    misspelt field is an error, not silently dropped), so a replayed run cannot drift."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Verdict(BaseModel):
    """Why a loop stopped. Once a machine gives a verdict, every later state gives the same one."""

    model_config = ConfigDict(frozen=True)

    reason: str
    converged: bool = False


StateT = TypeVar("StateT", bound=BaseModel)
ObservationT = TypeVar("ObservationT")


def replay(state: StateT, observations: Iterable[ObservationT],
           record: Callable[[StateT, ObservationT], StateT]) -> StateT:
    """The state after recording ``observations`` in order, starting from ``state``."""
    for observation in observations:
        state = record(state, observation)
    return state
