"""One venv per distinct set of inputs, built with uv from a bug's curated requirement dump.

The venv's folder name carries a hash of its inputs (interpreter, curated requirements, pytest
and FauxPy requirements), so bugs with the same dump share one venv and a changed curation builds
a new one. A venv is reused only when its marker file ``.realbugs-env.json`` exists (written
last, after a successful install).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .bugsinpy import Bug, req_name, requirement_lines

CURATION = Path(__file__).resolve().parent.parent / "realbugs_curation.toml"
FAUXPY = "fauxpy==0.7.0"
# ``fauxpy = "sbfl"`` (curation): FauxPy's pytest plugin imports its MBFL packages at start-up
# (pyllmut, which imports openai, and cosmic-ray), but SBFL never calls them. These three are
# installed with ``--no-deps``; only what ``import fauxpy.main`` and SBFL need is resolved together
# with the dump (FAUXPY_IMPORT_DEPS), and ``openai`` is a stub (OPENAI_STUB), so openai's
# httpx/pydantic/h11 and cosmic-ray's virtualenv requirements no longer override the dump's pins.
FAUXPY_NO_DEPS = ("fauxpy==0.7.0", "pyllmut==0.6.0", "cosmic-ray==8.3.5")
FAUXPY_IMPORT_DEPS = ("coverage>=6.2", "astor~=0.8.1", "parso", "stevedore", "typing-extensions>=4.4")
OPENAI_STUB = '''"""Stub written by EQUISA's real-bug benchmark (bench/realbugs/envs.py), not the openai package.

FauxPy 0.7 imports pyllmut (LLM mutants, MBFL only), which imports openai at start-up; FauxPy's
SBFL mode never calls it. The real openai needs httpx/pydantic versions that several BugsInPy
dumps pin lower, so it is not installed: any use of it fails loudly.
"""

EQUISA_BENCH_STUB = True


class OpenAIError(Exception):
    pass


class APITimeoutError(OpenAIError):
    pass


class OpenAI:
    def __init__(self, *args, **kwargs):
        raise OpenAIError("openai is a stub in this benchmark venv (FauxPy SBFL only): "
                          "bench/realbugs/envs.py")
'''
DEFAULT_PYTEST = "pytest<8.4"
MAX_RELAXATIONS = 30
INSTALL_TIMEOUT_S = 1500
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv"))

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def python_for(version: str) -> Path:
    """pyenv's interpreter for a bug: 3.8 below 3.9 (EQUISA's probe and FauxPy need 3.8+), else the
    same minor version."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]] or [3, 8]
    minor = "3.8" if tuple(parts) < (3, 9) else f"{parts[0]}.{parts[1]}"
    candidates = sorted((PYENV_ROOT / "versions").glob(f"{minor}*"))
    candidates = [c for c in candidates if re.fullmatch(re.escape(minor) + r"(\.\d+)?", c.name)]
    if not candidates:
        raise FileNotFoundError(f"no Python {minor} under {PYENV_ROOT}/versions")
    return candidates[-1] / "bin" / "python"


def load_curation(path: Path = CURATION) -> dict:
    with open(path, "rb") as handle:
        return tomllib.load(handle)


@dataclass
class EnvSpec:
    python: Path
    requirements: list[str]
    pytest: str
    notes: list[str] = field(default_factory=list)
    site_files: dict[str, str] = field(default_factory=dict)
    fauxpy: str = "full"  # "full": fauxpy==0.7.0 with its dependencies; "sbfl": see FAUXPY_NO_DEPS

    def key(self) -> str:
        inputs = {"python": str(self.python), "requirements": self.requirements,
                  "pytest": self.pytest, "fauxpy": FAUXPY, "site_files": self.site_files}
        if self.fauxpy == "sbfl":
            inputs["fauxpy"] = {"no_deps": FAUXPY_NO_DEPS, "resolved": FAUXPY_IMPORT_DEPS,
                                "openai_stub": OPENAI_STUB}
        data = json.dumps(inputs, sort_keys=True)
        return hashlib.sha256(data.encode()).hexdigest()[:12]

    def resolved(self) -> list[str]:
        """What uv resolves together: the curated dump, pytest and FauxPy (or its SBFL needs)."""
        fauxpy = list(FAUXPY_IMPORT_DEPS) if self.fauxpy == "sbfl" else [FAUXPY]
        return [*self.requirements, self.pytest, *fauxpy]


def curated_spec(bug: Bug, curation: dict) -> EnvSpec:
    lines, dropped = requirement_lines(bug)
    notes = [f"dropped from the dump: {d}" for d in dropped]
    layers = [curation.get("global", {}), curation.get("project", {}).get(bug.project, {}),
              curation.get("bug", {}).get(bug.id, {})]
    pytest_req = None
    site_files: dict[str, str] = {}
    fauxpy = "full"
    for layer in layers:
        site_files.update(layer.get("site_files", {}))
        fauxpy = layer.get("fauxpy", fauxpy)
        drop = {req_name(n) for n in layer.get("drop", [])}
        unpin = {req_name(n) for n in layer.get("unpin", [])}
        pins = {req_name(k): v for k, v in layer.get("pin", {}).items()}
        out = []
        for line in lines:
            name = req_name(line)
            if name in drop:
                notes.append(f"curation drops {line}")
                continue
            if name in pins:
                notes.append(f"curation pins {pins[name]} (dump: {line})")
                line = pins[name]
            elif name in unpin and line.strip() != name:
                notes.append(f"curation unpins {line}")
                line = re.split(r"[=<>!~;]", line, maxsplit=1)[0].strip()
            out.append(line)
        lines = out
        pytest_req = layer.get("pytest", pytest_req)
    for layer in layers:  # after every layer's drop/unpin/pin, so none of them loosens an extra
        for extra in layer.get("extra", []):  # a constraint next to the dump's line when both name it
            if extra not in lines:
                lines.append(extra)
                notes.append(f"curation adds {extra}")
    in_dump = [line for line in lines if req_name(line) == "pytest"]
    if pytest_req is None:
        pytest_req = in_dump[0] if in_dump else DEFAULT_PYTEST
    lines = [line for line in lines if req_name(line) != "pytest"]
    if fauxpy not in ("full", "sbfl"):
        raise ValueError(f"curation: fauxpy = {fauxpy!r} (expected \"full\" or \"sbfl\")")
    if fauxpy == "sbfl":
        notes.append(f"FauxPy installed with --no-deps ({', '.join(FAUXPY_NO_DEPS)}); resolved with the "
                     f"dump: {', '.join(FAUXPY_IMPORT_DEPS)}; openai is a stub")
    return EnvSpec(python=python_for(bug.python_version), requirements=lines, pytest=pytest_req, notes=notes,
                   site_files=site_files, fauxpy=fauxpy)


_PINNED = re.compile(r"`?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([A-Za-z0-9][^\s`,'\"]*)")


def culprit(error: str, requirements: list[str]) -> str | None:
    """The requirement uv's error blames: the first of ours named in it (pinned names first), in
    its error lines first (``error:``, ``cause:``, ``Because``...), not its ``Building x==1`` progress."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", error)
    blame = [line for line in text.splitlines()
             if line.strip().startswith(("×", "error", "cause", "╰─▶", "Because", "And because", "ERROR"))]
    if blame and len(blame) < len(text.splitlines()):
        found = culprit("\n".join(blame), requirements)
        if found:
            return found
    ours = {req_name(r): r for r in requirements}
    for match in _PINNED.finditer(text):
        name = req_name(match.group(1))
        if name in ours:
            return name
    best = None
    for name in ours:
        pattern = re.compile(r"(?<![A-Za-z0-9_.-])" + re.escape(name).replace(r"\-", "[-_.]") +
                             r"(?![A-Za-z0-9_-])", re.I)
        found = pattern.search(text)
        if found and (best is None or found.start() < best[0]):
            best = (found.start(), name)
    return best[1] if best else None


def key_line(error: str) -> str:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in error.splitlines()]
    lines = [line for line in lines if line and not line.startswith(("Using ", "Resolved ", "Prepared "))]
    for line in lines:
        if line.startswith(("×", "error", "╰─▶", "Because", "ERROR")):
            return line[:300]
    return (lines[-1] if lines else "")[:300]


def relax(line: str) -> str | None:
    """The next looser requirement: ``x==1.5.1`` -> ``x>=1.5.1,<2`` -> ``x`` -> None (drop)."""
    name = re.split(r"[=<>!~;\[ ]", line, maxsplit=1)[0].strip()
    pinned = re.fullmatch(r"\s*[A-Za-z0-9._-]+(\[[^\]]*\])?==(\d+)[^,;]*", line)
    if pinned:
        return f"{line.split('==')[0].strip()}>={line.split('==')[1].strip()},<{int(pinned.group(2)) + 1}"
    if re.search(r"[=<>!~]", line):
        return name
    return None


def _resolved(spec: EnvSpec, requirements: list[str]) -> list[str]:
    """``spec.resolved()`` with the dump's lines as relaxed so far."""
    return EnvSpec(spec.python, requirements, spec.pytest, fauxpy=spec.fauxpy).resolved()


#: The venv's folder (beside ``bin``, ``lib``) that holds FauxPy's own package and its dist-info,
#: put on ``PYTHONPATH`` for FauxPy's runs only (``fauxpy_apart``).
FAUXPY_APART = "fauxpy-plugin"


def fauxpy_folder(python: str | Path) -> Path:
    """The venv's ``FAUXPY_APART`` folder, for the venv of interpreter ``python``."""
    return Path(python).parent.parent / FAUXPY_APART


def fauxpy_apart(python: str | Path) -> Path:
    """Move FauxPy's package and its dist-info (which declares its ``pytest11`` entry point) out of
    the venv's site-packages into ``FAUXPY_APART``; return that folder. Idempotent.

    Installed in site-packages, FauxPy's plugin loads in every pytest process of the venv: EQUISA's
    too, which then imported FauxPy and its MBFL packages (cosmic-ray, pyllmut) on each start,
    about 0.14 s a process (luigi's venv), as no EQUISA user's environment would. With the folder
    on ``PYTHONPATH`` (FauxPy's runs only) pytest finds the entry point there and loads the plugin
    as before; its dependencies stay in site-packages."""
    root = Path(python).parent.parent
    apart = fauxpy_folder(python)
    apart.mkdir(exist_ok=True)
    for site in sorted(root.glob("lib/python*/site-packages")):
        for entry in [site / "fauxpy", *site.glob("fauxpy-*.dist-info")]:
            if entry.exists() and not (apart / entry.name).exists():
                shutil.move(str(entry), str(apart / entry.name))
    return apart


def _fauxpy_loads(data: dict, spec: EnvSpec, folder: Path, log) -> dict:
    """FauxPy's plugin must import in the venv (it imports its MBFL dependencies, openai among them,
    even for SBFL): relax the dump's pin that the import error names, reinstall, up to 8 times."""
    python = str(folder / "bin" / "python")
    requirements = list(data.get("requirements") or spec.requirements)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    for _attempt in range(9):
        check = subprocess.run([python, "-c", "import fauxpy.main"], capture_output=True, text=True,
                               env={**env, "PYTHONDONTWRITEBYTECODE": "1"})
        if check.returncode == 0:
            data["fauxpy_import"] = "ok"
            return data
        text = check.stderr
        lines = [line for line in text.splitlines() if line.strip()]
        name = culprit(lines[-1] if lines else "", requirements) or culprit(
            "\n".join(re.findall(r"site-packages/([A-Za-z0-9_]+)/", text)[::-1]), requirements)
        if name is None:
            break
        index = next(i for i, r in enumerate(requirements) if req_name(r) == name)
        line = requirements[index]
        loosened = relax(line)
        if loosened is None:
            break
        requirements[index] = loosened
        data.setdefault("relaxed", []).append(f"{line} -> {loosened or 'unpinned'}: FauxPy does not import: "
                                              f"{lines[-1][:200] if lines else ''}")
        log(f"[env] {folder.name}: {data['relaxed'][-1][:160]}")
        reqfile = folder / "realbugs-requirements.txt"
        reqfile.write_text("\n".join(_resolved(spec, requirements)) + "\n")
        run = subprocess.run([uv(), "pip", "install", "--python", python, "--compile-bytecode", "-r", str(reqfile)],
                             capture_output=True, text=True, env={**env, "UV_PYTHON_DOWNLOADS": "never"})
        if run.returncode != 0:
            break
    lines = [line for line in check.stderr.splitlines() if line.strip()]
    data["fauxpy_import"] = "fails: " + (lines[-1][:300] if lines else "?")
    data["requirements"] = requirements
    return data


def uv() -> str:
    found = shutil.which("uv")
    if not found:
        raise FileNotFoundError("uv is not on PATH (python3 -m pip install uv)")
    return found


def build_env(spec: EnvSpec, project: str, venvs: Path, log) -> dict:
    """The venv for ``spec`` (built or reused): {"python", "key", "relaxed", "reused"} or
    {"error", "key_line"}."""
    key = spec.key()
    folder = venvs / f"{project}-{key}"
    with _locks_guard:
        lock = _locks.setdefault(str(folder), threading.Lock())
    with lock:
        marker = folder / ".realbugs-env.json"
        if marker.exists():
            data = json.loads(marker.read_text())
            if "fauxpy_import" not in data:
                data = _fauxpy_loads(data, spec, folder, log)
                marker.write_text(json.dumps(data, indent=1))
            return {**data, "reused": True}
        failed = folder.with_name(folder.name + ".failed.json")
        if failed.exists():
            return {**json.loads(failed.read_text()), "reused": True}
        shutil.rmtree(folder, ignore_errors=True)
        venvs.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["UV_PYTHON_DOWNLOADS"] = "never"
        started = time.perf_counter()
        subprocess.run([uv(), "venv", "-q", "--python", str(spec.python), str(folder)],
                       check=True, env=env, capture_output=True)
        python = folder / "bin" / "python"
        requirements = list(spec.requirements)
        relaxed: list[str] = []
        reqfile = folder / "realbugs-requirements.txt"
        error = ""
        for _attempt in range(MAX_RELAXATIONS + 1):
            reqfile.write_text("\n".join(_resolved(spec, requirements)) + "\n")
            try:
                run = subprocess.run([uv(), "pip", "install", "--python", str(python), "--compile-bytecode",
                                      "-r", str(reqfile)], capture_output=True, text=True, env=env,
                                     timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                error = f"uv pip install timed out after {INSTALL_TIMEOUT_S} s"
                break
            if run.returncode == 0:
                error = ""
                break
            error = run.stderr
            name = culprit(error, requirements)
            if name is None:
                break
            index = next(i for i, r in enumerate(requirements) if req_name(r) == name)
            line = requirements[index]
            loosened = relax(line)
            if loosened is not None:
                requirements[index] = loosened
                relaxed.append(f"{line} -> {loosened or 'unpinned'}: {key_line(error)}")
            else:
                requirements.pop(index)
                relaxed.append(f"dropped {line}: {key_line(error)}")
            log(f"[env] {folder.name}: {relaxed[-1][:160]}")
        if not error and spec.fauxpy == "sbfl":
            run = subprocess.run([uv(), "pip", "install", "--python", str(python), "--compile-bytecode",
                                  "--no-deps", *FAUXPY_NO_DEPS], capture_output=True, text=True, env=env)
            if run.returncode != 0:
                error = run.stderr or f"uv pip install --no-deps: exit {run.returncode}"
        if error:
            result = {"error": error[-3000:], "key_line": key_line(error), "relaxed": relaxed,
                      "key": key, "seconds": round(time.perf_counter() - started, 1)}
            failed.write_text(json.dumps(result, indent=1))
            shutil.rmtree(folder, ignore_errors=True)
            return result
        site_files = dict(spec.site_files)
        purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                      capture_output=True, text=True, check=True).stdout.strip())
        if spec.fauxpy == "sbfl" and not any((purelib / name).exists() for name in ("openai", "openai.py")):
            site_files["openai/__init__.py"] = OPENAI_STUB
        for name, content in site_files.items():
            (purelib / name).parent.mkdir(parents=True, exist_ok=True)
            (purelib / name).write_text(content)
        freeze = subprocess.run([uv(), "pip", "freeze", "--python", str(python)], capture_output=True,
                                text=True, env=env).stdout.split()
        result = {"python": str(python), "key": key, "relaxed": relaxed, "notes": spec.notes,
                  "pytest": spec.pytest, "fauxpy_install": spec.fauxpy, "installed": freeze,
                  "seconds": round(time.perf_counter() - started, 1), "requirements": requirements}
        result = _fauxpy_loads(result, spec, folder, log)
        fauxpy_apart(python)
        marker.write_text(json.dumps(result, indent=1))
        return {**result, "reused": False}
