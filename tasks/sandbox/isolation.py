"""The local sandbox's isolation: which level works on this machine, and the command that applies it.

The level is chosen in one place, ``detect_isolation``, which says what it chose and why
(``EQUISA_LOCAL_ISOLATION`` may name one; it must then work):

- ``bwrap``: bubblewrap, when it runs;
- ``unshare``: the same confinement from util-linux where bubblewrap is missing or broken;
- ``network-only``: ``unshare -rn --pid``, network and PID namespaces only;
- ``none``: a plain subprocess.

What ``bwrap`` and ``unshare`` both give the sandboxed process: new user, mount, network (only a
loopback), PID, IPC and UTS namespaces; the whole system read-only; a private, empty /tmp and an
empty home folder (EQUISA's own home, where keys and tokens live, is hidden); a minimal /dev; only
the run folder writable; the interpreter's installation visible read-only when it lives under a
hidden folder; no capabilities and no way to gain any (``no_new_privs``).

How ``unshare`` builds it, with util-linux alone. (A library was considered: the Python bindings
for namespaces and mounts on PyPI are unmaintained or wrap only ``unshare(2)``; util-linux is on
every Linux system that has ``unshare`` at all, and its ``mount`` reads a whole table of mounts in
one process, which keeps the set-up within a few process starts of bubblewrap's.)

1. ``unshare --user --map-root-user --mount --net --pid --ipc --uts --fork`` runs the launcher
   (``_LAUNCHER``) as root of a new user namespace, in its own copy of the mount table;
2. ``mount --rbind / ROOT`` copies the whole system under a new root (``RUN/sandbox/root``), and
   ``mount --all -o remount,bind,ro`` makes every mount read-only in one process; the launcher then
   checks each mount under ROOT (one this user cannot even reach passes, as in bubblewrap; an
   original mount may stay writable while a file is open for writing on it, which does not matter:
   the originals are detached in step 4);
3. ``mount --all --fstab RUN/sandbox/fstab`` (written by ``_mount_table``) mounts over ROOT: a
   fresh /proc, tmpfs /tmp and home, a /dev of six device nodes and a tmpfs /dev/shm, the
   re-exposed interpreter and lent folders (read-only binds), the run folder (then remounted
   writable);
4. ``pivot_root`` moves into the new root and the old one is detached, so it cannot be reached;
5. the command runs in a nested user namespace that maps the caller's own uid and gid (as under
   bubblewrap), through ``setpriv --no-new-privs`` with every capability dropped: the mounts belong
   to the outer namespace, so nothing inside can remount, unmount or mount over them.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from equisa_core.common.sandbox_policy import IsolationLevel
from tasks.sandbox.contract import SandboxInfrastructureError

__all__ = ["DetectedIsolation", "detect_isolation", "isolation_words", "hidden_folders", "reexposed_paths",
           "ISOLATION_ENV"]

#: Names the local isolation level to use (it must then work here); unset: the strongest that works.
ISOLATION_ENV = "EQUISA_LOCAL_ISOLATION"
_LOCAL_LEVELS = (IsolationLevel.BWRAP, IsolationLevel.UNSHARE, IsolationLevel.NETWORK_ONLY,
                 IsolationLevel.NONE)
#: Device nodes the sandbox's /dev holds (as bubblewrap's ``--dev``).
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
              "stderr": "/proc/self/fd/2"}
#: Home folders never hidden: hiding them would hide the system.
_SYSTEM_FOLDERS = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/run",
                             "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var"})
_UNSHARE = ["unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--ipc", "--uts",
            "--fork", "--kill-child", "--propagation", "private", "--"]

#: The programs the launcher runs, passed as absolute paths (after ``pivot_root`` PATH may name
#: folders that are hidden); ``ip`` may be missing.
_LAUNCHER_TOOLS = ("mount", "umount", "pivot_root", "unshare", "setpriv", "ip")

# Run by /bin/sh as root of the new user namespace: $1 run folder, $2 working directory, $3 uid,
# $4 gid, $5-$10 the programs of _LAUNCHER_TOOLS, then the command. See the module docstring.
# It exits non-zero before the command starts when it cannot build the sandbox (125 when a mount
# stays writable); the local sandbox reports that as a sandbox failure (exit code 10).
_LAUNCHER = r"""
set -eu
folder=$1 workdir=$2 uid=$3 gid=$4 mount=$5 umount=$6 pivot_root=$7 unshare=$8 setpriv=$9 ip=${10}
shift 10
root=$folder/sandbox/root
"$mount" --rbind / "$root"
if ! "$mount" --all --options remount,bind,ro 2>"$folder/sandbox/remount.log"; then
  while read -r _ _ _ _ point options _; do
    case $point in "$root"|"$root"/*) ;; *) continue ;; esac
    case $point in "$root"/proc|"$root"/proc/*|"$root"/dev|"$root"/dev/*|"$root"/tmp|"$root"/tmp/*)
      continue ;; esac  # covered by the fresh mounts of the table
    case $options in ro|ro,*) continue ;; esac
    case $point in *\\*) ;; *) [ -e "$point" ] || continue ;; esac
    echo "equisa sandbox: cannot make ${point#"$root"} read-only" >&2
    cat "$folder/sandbox/remount.log" >&2
    exit 125
  done < /proc/self/mountinfo
fi
"$mount" --all --fstab "$folder/sandbox/fstab"
"$mount" --options remount,bind,rw "$root$folder"
if [ -n "$ip" ]; then "$ip" link set lo up; fi
"$pivot_root" "$root" "$root$folder/sandbox/old-root"
"$umount" --lazy "$folder/sandbox/old-root"
cd "$workdir"
"$unshare" --user --map-user="$uid" --map-group="$gid" -- \
  "$setpriv" --no-new-privs --inh-caps=-all --bounding-set=-all -- "$@"
"""


class DetectedIsolation(BaseModel):
    """The isolation level the local sandbox uses on this machine, and why."""

    model_config = ConfigDict(frozen=True)

    level: IsolationLevel
    reason: str


@functools.cache
def detect_isolation() -> DetectedIsolation:
    """The strongest local isolation that works here, or the one ``EQUISA_LOCAL_ISOLATION`` names.

    Each candidate is tried once per process by running ``true`` under it.
    """
    wanted = os.environ.get(ISOLATION_ENV, "").strip()
    names = [level.value for level in _LOCAL_LEVELS]
    if wanted and wanted not in names:
        raise SandboxInfrastructureError(f"{ISOLATION_ENV}={wanted!r} is not one of {', '.join(names)}")
    failures: list[str] = []
    for level in _LOCAL_LEVELS:
        if wanted and level.value != wanted:
            continue
        if level is IsolationLevel.NONE:
            because = "asked for" if wanted else "no namespace isolation runs here: " + "; ".join(failures)
            return DetectedIsolation(level=level, reason=because)
        failure = _trial_failure(level)
        if failure is None:
            return DetectedIsolation(level=level, reason=_success_reason(level, failures))
        if wanted:
            raise SandboxInfrastructureError(f"{ISOLATION_ENV}={wanted} was asked for, but {failure}")
        failures.append(failure)
    raise AssertionError("unreachable: the level 'none' always works")


def _success_reason(level: IsolationLevel, failures: list[str]) -> str:
    if level is IsolationLevel.BWRAP:
        said = "bubblewrap runs: namespaces, read-only system, private /tmp and home"
    elif level is IsolationLevel.UNSHARE:
        said = "util-linux builds the bubblewrap confinement" + (
            "" if shutil.which("ip") else " (no iproute2 'ip': the loopback stays down)")
    else:
        said = "network and PID namespaces only"
    return "; ".join([*failures, said])


def _trial_failure(level: IsolationLevel) -> str | None:
    """Why ``true`` does not run under ``level`` here (None when it does)."""
    tools = {
        IsolationLevel.BWRAP: ("bwrap",),
        IsolationLevel.UNSHARE: ("unshare", "mount", "umount", "pivot_root", "setpriv"),
        IsolationLevel.NETWORK_ONLY: ("unshare",),
    }[level]
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return f"{level.value}: {', '.join(missing)} not found"
    with tempfile.TemporaryDirectory(prefix="equisa-isolation-") as scratch:
        folder = Path(scratch)
        (folder / "home").mkdir()
        command = isolation_words(level, folder, folder, interpreter=shutil.which("true") or "/bin/true")
        try:
            done = subprocess.run([*command, "true"], capture_output=True, timeout=30, cwd=folder,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"{level.value} does not run: {error}"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        return f"{level.value} does not run ({said[-1][:200] if said else f'exit {done.returncode}'})"
    return None


def isolation_words(level: IsolationLevel, folder: Path, workdir: Path, interpreter: str,
                    lent: Sequence[str] = ()) -> list[str]:
    """The words that run a command under ``level``, in the run folder ``folder``; the command follows.

    ``lent``: host folders the run reads besides the interpreter (see ``reexposed_paths``). For
    ``unshare`` this writes the launcher's mount table under ``folder/sandbox``.
    """
    if level is IsolationLevel.BWRAP:
        hidden = [word for home in hidden_folders()[1:] for word in ("--tmpfs", str(home))]
        exposed = [word for path in reexposed_paths(interpreter, lent) for word in ("--ro-bind", path, path)]
        # --unshare-user and --cap-drop ALL: run as root, bubblewrap otherwise keeps every capability,
        # and the sandboxed code could remount the system writable.
        return ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
                "--cap-drop", "ALL",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *hidden,
                *exposed, "--bind", str(folder), str(folder), "--chdir", str(workdir), "--"]
    if level is IsolationLevel.UNSHARE:
        _write_launcher_files(folder, interpreter, lent)
        tools = [os.path.realpath(found) if (found := shutil.which(tool)) else "" for tool in _LAUNCHER_TOOLS]
        return [*_UNSHARE, "/bin/sh", "-c", _LAUNCHER, "equisa-sandbox", str(folder), str(workdir),
                str(os.getuid()), str(os.getgid()), *tools]
    if level is IsolationLevel.NETWORK_ONLY:
        return ["unshare", "-rn", "--pid", "--fork", "--kill-child", "--"]
    return []


def hidden_folders() -> list[Path]:
    """Folders the sandbox replaces with empty private ones: /tmp, then EQUISA's home (when it is a
    folder of its own, not a system folder)."""
    hidden = [Path("/tmp")]
    home = Path.home().absolute()
    if home.is_dir() and str(home) not in _SYSTEM_FOLDERS and Path("/tmp") not in (home, *home.parents):
        hidden.append(home)
    return hidden


def reexposed_paths(interpreter: str, lent: Sequence[str] = ()) -> list[str]:
    """The folders under a hidden folder that the run needs, visible read-only again: the
    interpreter's installation, and the ``lent`` folders (EQUISA's coverage.py, say).

    For the interpreter's path as given and as resolved: its environment (the nearest folder above
    it holding ``pyvenv.cfg``, else the folder above ``bin/``) and, for a virtualenv, the
    installation its ``pyvenv.cfg`` names as ``home``.
    """
    roots: list[Path] = [Path(path).absolute() for path in lent]
    for path in (Path(interpreter).absolute(), Path(interpreter).resolve()):
        venv = next((p for p in path.parents if (p / "pyvenv.cfg").is_file()), None)
        roots.append(venv or path.parent.parent)
        if venv is not None:
            base = _venv_home(venv / "pyvenv.cfg")
            if base is not None:
                roots.append(base.parent)
    hidden = hidden_folders()
    kept: list[str] = []
    for root in roots:
        under = any(folder in root.parents for folder in hidden)
        if under and str(root) not in kept and root.is_dir():
            kept.append(str(root))
    return kept


def _venv_home(config: Path) -> Path | None:
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip())
    return None


def _write_launcher_files(folder: Path, interpreter: str, lent: Sequence[str]) -> None:
    """The ``unshare`` launcher's inputs under ``folder/sandbox``: the new root's mount point, the
    old root's, the stub /dev (empty files the device nodes are bound over) and the mount table."""
    sandbox = folder / "sandbox"
    for name in ("root", "old-root", "dev/shm", "dev/pts"):
        (sandbox / name).mkdir(parents=True)
    for device in _DEVICES:
        (sandbox / "dev" / device).touch()
    for name, target in _DEV_LINKS.items():
        (sandbox / "dev" / name).symlink_to(target)
    (sandbox / "fstab").write_text(_mount_table(folder, interpreter, lent), encoding="utf-8")


def _mount_table(folder: Path, interpreter: str, lent: Sequence[str] = ()) -> str:
    """The mounts of step 3, in order, in fstab(5) form (fields escaped as fstab escapes them).

    Binds are made read-only explicitly (``bind,ro``: libmount binds, then remounts): a bind keeps
    its source's flags, and a mount of the namespace's original tree may have stayed writable (a
    remount fails while a file is open for writing on it, such as the run's log). The run folder
    is the one writable bind; the launcher remounts it so.
    """
    root = folder / "sandbox" / "root"

    def at(path: Path | str) -> str:
        return f"{root}{path}"

    rows: list[tuple[str, str, str, str]] = [
        ("equisa-proc", at("/proc"), "proc", "nosuid,nodev,noexec"),
        ("equisa-tmp", at("/tmp"), "tmpfs", "mode=1777,nosuid,nodev"),
        *[("equisa-home", at(home), "tmpfs", "mode=0755,nosuid,nodev") for home in hidden_folders()[1:]],
        (str(folder / "sandbox" / "dev"), at("/dev"), "none", "bind,ro"),
        *[(f"/dev/{device}", at(f"/dev/{device}"), "none", "bind,ro") for device in _DEVICES],
        ("equisa-shm", at("/dev/shm"), "tmpfs", "mode=1777,nosuid,nodev"),
        *[(path, at(path), "none", "bind,ro,X-mount.mkdir") for path in reexposed_paths(interpreter, lent)],
        (str(folder), at(folder), "none", "bind,X-mount.mkdir"),
    ]
    return "".join(f"{_escape(a)} {_escape(b)} {c} {d} 0 0\n" for a, b, c, d in rows)


def _escape(field: str) -> str:
    """An fstab field: blanks and backslashes as octal escapes, as fstab(5) and libmount read them."""
    return (field.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
            .replace("\n", "\\012"))
