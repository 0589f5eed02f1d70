"""How strongly a sandbox isolates, and whether that is enough for the code about to run.

EQUISA runs two kinds of code in sandboxes: the user's own suite, and code nobody reviewed
(generated tests, inspection patches, mutants and fixes, all sent as an overlay or as mutants).
The user's suite may run under any isolation, with one warning when files are not confined.
Unreviewed code runs only where the sandbox confines writes to the file system, unless the user
accepted weaker isolation explicitly (``--sandbox none`` or ``--allow-weak-sandbox``).

Levels, strongest first (``tasks.sandbox.isolation`` detects the local ones):

- ``docker``: a locked-down container (``tasks.sandbox.docker_backend``);
- ``bwrap``: bubblewrap; new user, mount, network, PID, IPC and UTS namespaces, the system
  read-only, a private /tmp and home, only the run folder writable;
- ``unshare``: the same confinement built with util-linux (``unshare``, ``mount``,
  ``pivot_root``, ``setpriv``) where bubblewrap is missing;
- ``network-only``: ``unshare -rn --pid``; network and PID namespaces, files not confined;
- ``none``: a plain subprocess.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, computed_field

from equisa_core.errors import WeakSandboxError

__all__ = ["IsolationLevel", "SandboxIsolation", "require_confinement", "weak_isolation_warning"]


class IsolationLevel(StrEnum):
    """How a sandboxed process is isolated (see the module docstring)."""

    DOCKER = "docker"
    BWRAP = "bwrap"
    UNSHARE = "unshare"
    NETWORK_ONLY = "network-only"
    NONE = "none"


#: The levels under which the sandboxed code can write nowhere but its run folder.
_CONFINING = frozenset({IsolationLevel.DOCKER, IsolationLevel.BWRAP, IsolationLevel.UNSHARE})


class SandboxIsolation(BaseModel):
    """The isolation a run's sandboxes give, as reports record it."""

    model_config = ConfigDict(frozen=True)

    backend: str = Field(description="The sandbox chosen: 'local', 'docker' or 'none'.")
    level: IsolationLevel
    reason: str = Field(description="Why this level: what was found, or what was asked for.")
    weak_allowed: bool = Field(False, description="Unreviewed code may run even if files are not confined "
                                                  "(--sandbox none or --allow-weak-sandbox).")

    @property
    def confines_files(self) -> bool:
        """Whether sandboxed code can write only inside its run folder (and a private /tmp and home)."""
        return self.level in _CONFINING

    if not TYPE_CHECKING:
        # Serialized with the fields (reports record it). Applied here rather than stacked above
        # @property, which mypy rejects (python/mypy#1362): mypy reads the plain property.
        confines_files = computed_field(confines_files)


#: What the user can do about a refusal, on the command line.
_REMEDY = "--allow-weak-sandbox (or --sandbox none) runs it anyway"


def require_confinement(isolation: SandboxIsolation, what: str, remedy: str = _REMEDY) -> None:
    """Raise ``WeakSandboxError`` unless unreviewed code (``what``) may run under ``isolation``.

    It may when the sandbox confines files, or when the user accepted weaker isolation.
    """
    if isolation.confines_files or isolation.weak_allowed:
        return
    raise WeakSandboxError(
        f"refusing to run {what}: the {isolation.backend} sandbox cannot confine file writes here "
        f"(isolation {isolation.level.value}: {isolation.reason}). Install bubblewrap, enable "
        f"unprivileged user namespaces, or use the docker sandbox; {remedy}"
    )


def weak_isolation_warning(isolation: SandboxIsolation) -> str | None:
    """The one warning to show when files are not confined (None when they are)."""
    if isolation.confines_files:
        return None
    return (f"the {isolation.backend} sandbox does not confine file writes here (isolation "
            f"{isolation.level.value}: {isolation.reason}); code under test can write wherever you can")
