"""The environment a repository's suite runs in: what its files declare (``declared``), and which
interpreter ran and how it was chosen or made (``SuiteEnvironment``, in every report)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SuiteEnvironment"]


class SuiteEnvironment(BaseModel):
    """The interpreter that ran the suite, why, and, for one built with uv, how it was made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    interpreter: str = Field(description="The interpreter's path.")
    python_version: str = Field(description="Its version, e.g. 3.11.7.")
    chosen_because: str = Field(
        description="Why this one: --python, a venv, $VIRTUAL_ENV, built with uv, EQUISA's own.")
    built: bool = Field(False, description="Built with uv from what the repository declares.")
    reused: bool = Field(False, description="A built environment taken from the cache.")
    build_seconds: float | None = Field(None, description="Time to build or find it (built ones only).")
    made_from: tuple[str, ...] = Field((), description="The declaring files it was built from.")
