"""The README's first command on a fresh clone, with the venv's bytecode compiled at install time
(``compiled``) or on first import (``lazy``) (issue 47).

Run from the repository root::

    uv run python bench/first_command.py [--repeats 3] [--configs compiled,lazy]
                                         [--out-dir bench/results] [--source .]

A third configuration, ``lazy+sandbox-precompile`` (``lazy``, and the packages that sandboxed runs
import compiled once, the first time EQUISA's own interpreter ran a suite), was measured at
``5d6334a`` (``first_command_2026-12-05_5d6334a.md``): it did not pay, and was left out.

For every repeat and configuration (interleaved, the order reversed every other repeat) it

1. makes a fresh ``git clone`` of ``--source``'s committed HEAD and sets ``[tool.uv]``'s
   ``compile-bytecode`` in the clone's pyproject.toml for the configuration;
2. times whole processes in the clone, start-up included, one after the other:

   - ``first``: the first command exactly as the README's first code block has it, run with
     ``bash -c`` (uv makes the clone's ``.venv`` from the lock, then repairs the example);
   - ``repair again``: the same ``uv run equisa repair ...`` a second time (warm: the venv, the
     shared Prefect server and the warm worker are there);
   - ``localize``: ``uv run equisa localize examples/invoicing --json l.json``;
   - ``localize, own interpreter``: ``... --no-provision --no-cache``: every sandboxed run of the
     suite forced, with EQUISA's own interpreter under ``PYTHONDONTWRITEBYTECODE=1``, the runs that
     ``compile-bytecode = true`` was set for (the other commands use it too: ``uv run`` names
     EQUISA's venv in ``$VIRTUAL_ENV``, which ``tasks.run.interpreter`` picks before building one);

3. counts the clone's venv's ``.py`` and ``.pyc`` files, stops the shared server and the warm
   worker the clone started (``equisa server stop``) and deletes the clone.

uv's download cache stays warm (uv's default cache folder, read once with ``uv cache dir``);
``PYTHONDONTWRITEBYTECODE`` is unset, as in a user's shell, unless ``--dont-write-bytecode``; all
else is new for every clone: the venv, EQUISA's data folder (the shared server), its built
environments and workspaces, Prefect's home and the warm worker's runtime folder. The bench's own
venv is kept off ``PATH`` and ``VIRTUAL_ENV`` so that ``python3`` and ``uv`` are the machine's, as
for a user. The machine's core count and load average (at the start, the end and before every
sample) are recorded: another job may be running. It asserts nothing; the results go to
``<out-dir>/first_command_<date>_<shortsha>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT_DIR = REPO / "bench" / "results"
#: ``compile-bytecode`` of ``[tool.uv]`` for each configuration.
CONFIGS: dict[str, bool] = {"compiled": True, "lazy": False}
EXAMPLE = "examples/invoicing"
#: The commands timed after the first, in their order: (name, words after ``uv run``).
LATER_COMMANDS: tuple[tuple[str, str], ...] = (
    ("localize", f"equisa localize {EXAMPLE} --json l.json"),
    ("localize, own interpreter", f"equisa localize {EXAMPLE} --no-provision --no-cache --json own.json"),
)
#: Exit codes that are a command's normal ends: fixed or localized (0), ranked without converging (25).
NORMAL_EXITS = (0, 25)
_COMPILE_LINE = re.compile(r"^compile-bytecode\s*=.*$", re.MULTILINE)


def first_command(readme: str) -> str:
    """The first line of the README's first ``bash`` code block."""
    match = re.search(r"```(?:bash|sh)\n(.+?)\n", readme)
    if match is None:
        raise ValueError("the README has no bash code block")
    return match.group(1).strip()


def warm_command(first: str) -> str:
    """The ``uv run ...`` part of the first command: what a user types again."""
    parts = [p.strip() for p in first.split("&&")]
    found = [p for p in parts if p.startswith("uv run ")]
    if not found:
        raise ValueError(f"no `uv run` in {first!r}")
    return found[-1]


def configured(pyproject: str, compile_bytecode: bool) -> str:
    """``pyproject`` with ``[tool.uv]``'s ``compile-bytecode`` set (added to the table if absent)."""
    line = f"compile-bytecode = {'true' if compile_bytecode else 'false'}"
    if _COMPILE_LINE.search(pyproject):
        return _COMPILE_LINE.sub(line, pyproject, count=1)
    if "[tool.uv]\n" not in pyproject:
        return pyproject.rstrip("\n") + f"\n\n[tool.uv]\n{line}\n"
    return pyproject.replace("[tool.uv]\n", f"[tool.uv]\n{line}\n", 1)


def schedule(configs: list[str], repeats: int) -> list[tuple[int, str]]:
    """(repeat, configuration) in run order: interleaved, reversed every other repeat."""
    order = []
    for index in range(repeats):
        order += [(index, c) for c in (configs if index % 2 == 0 else configs[::-1])]
    return order


def clean_environment(
    base: Mapping[str, str], root: Path, uv_cache: str, own_bin: str | None, dont_write_bytecode: bool = False
) -> dict[str, str]:
    """A fresh machine's environment for one clone: EQUISA's and Prefect's folders in ``root``,
    uv's download cache the warm one, and neither the bench's venv nor any EQUISA/Prefect setting;
    ``PYTHONDONTWRITEBYTECODE`` only if ``dont_write_bytecode`` (a user's shell seldom sets it, but
    some CI machines do: then no EQUISA process writes ``.pyc`` files into a lazy venv)."""
    dropped = ("VIRTUAL_ENV", "PYTHONPATH") + (() if dont_write_bytecode else ("PYTHONDONTWRITEBYTECODE",))
    env = {
        k: v for k, v in base.items() if not k.startswith(("PREFECT_", "EQUISA_", "UV_")) and k not in dropped
    }
    if own_bin:
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != own_bin)
    env.update(
        {
            "UV_CACHE_DIR": uv_cache,
            "XDG_CACHE_HOME": str(root / "cache"),  # EQUISA's built environments and workspaces
            "XDG_DATA_HOME": str(root / "data"),  # the shared Prefect server, artifacts, history
            "XDG_RUNTIME_DIR": str(root / "run"),  # the warm worker's socket
            "PREFECT_HOME": str(root / "prefect-home"),
            "EQUISA_WORKSPACES": str(root / "workspaces"),
            "EQUISA_SCRATCH": str(_scratch(root)),  # the sandboxed runs' folders, watched by ``timed``
            "COLUMNS": "160",
        }
    )
    return env


def _scratch(root: Path) -> Path:
    """The clone's own folder of sandboxed run folders (``one_sample`` makes it): in ``/dev/shm``, where
    EQUISA would put them (a tmpfs), when it is writable, else beside the clone."""
    ram = Path("/dev/shm")
    return ram / f"{root.name}-scratch" if os.access(ram, os.W_OK) else root / "scratch"


#: The moments ``timed`` records in a command (seconds from its start).
MARKS = {"first_line_s": "first line", "first_run_s": "first sandboxed run started",
         "server_line_s": "Prefect UI line (server ready)", "answer_line_s": "first answer line (trace in)"}


def summarize(samples: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """By configuration and command: the median, minimum and maximum seconds and all samples (in
    run order), and the exit codes that were not a normal end."""
    grouped: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for sample in samples:
        for command in sample["commands"]:
            grouped.setdefault(sample["config"], {}).setdefault(command["name"], []).append(command)
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for config, commands in grouped.items():
        summary[config] = {}
        for name, runs in commands.items():
            seconds = [r["seconds"] for r in runs]
            summary[config][name] = {
                "median_s": round(statistics.median(seconds), 2),
                "min_s": min(seconds),
                "max_s": max(seconds),
                "samples_s": seconds,
                "abnormal_exits": [r["exit"] for r in runs if r["exit"] not in NORMAL_EXITS],
            }
            for mark in MARKS:
                seen = [r[mark] for r in runs if r.get(mark) is not None]
                if seen:
                    summary[config][name][mark] = {"median_s": round(statistics.median(seen), 2),
                                                   "samples_s": seen}
    return summary


def marks_table(summary: Mapping[str, Mapping[str, Mapping[str, Any]]], configs: list[str]) -> str:
    """The moments within each command (``MARKS``), seconds from its start: median, then the samples."""
    lines = ["| configuration, command | " + " | ".join(MARKS.values()) + " |",
             "| --- |" + " ---: |" * len(MARKS)]
    for config in configs:
        for name, row in summary.get(config, {}).items():
            cells = [f"**{row[m]['median_s']:.1f}** ({', '.join(f'{s:.1f}' for s in row[m]['samples_s'])})"
                     if m in row else "–" for m in MARKS]
            lines.append(f"| {config}, {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown_table(summary: Mapping[str, Mapping[str, Mapping[str, Any]]], configs: list[str]) -> str:
    """Commands as rows, configurations as columns: the median in bold, then all samples; a last
    column with each configuration's median over the first one's when there are two or more."""
    names: list[str] = []
    for config in configs:
        names += [n for n in summary.get(config, {}) if n not in names]
    ratio = len(configs) > 1
    head = ["command (whole process, s)", *configs] + [f"{c} / {configs[0]}" for c in configs[1:] if ratio]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for name in names:
        cells = [name]
        for config in configs:
            row = summary.get(config, {}).get(name)
            cells.append(
                "–"
                if row is None
                else f"**{row['median_s']:.1f}** ({', '.join(f'{s:.1f}' for s in row['samples_s'])})"
                + (" ⚠ exit " + ",".join(map(str, row["abnormal_exits"])) if row["abnormal_exits"] else "")
            )
        base = summary.get(configs[0], {}).get(name)
        for config in configs[1:]:
            row = summary.get(config, {}).get(name)
            cells.append(
                f"{row['median_s'] / base['median_s']:.2f}" if row and base and base["median_s"] else "–"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown_report(report: Mapping[str, Any]) -> str:
    """The Markdown file: how it was run, on what machine, and the table."""
    machine = report["machine"]
    loads = [s["loadavg_before"][0] for s in report["samples"]]
    lines = [
        "# The first command on a fresh clone (issue 47)",
        "",
        f"{report['date']}, git `{report['git']['short']}`"
        + (
            " (with uncommitted changes; the clones have the committed HEAD)"
            if report["git"]["dirty"]
            else ""
        )
        + f", `{report['command_line']}`.",
        "",
        f"Machine: {machine['nproc']} cores, {machine['platform']}, uv {machine['uv']}; load average "
        f"(1, 5, 15 min) {fmt_load(machine['loadavg_at_start'])} at the start, "
        f"{fmt_load(machine['loadavg_at_end'])} at the end, 1-min load before the samples "
        f"{min(loads):.1f}–{max(loads):.1f}"
        + (
            " — **the machine was loaded by other jobs**: read the ratios between configurations taken in "
            "the same repeats, not the absolute times."
            if max(loads) > 0.5 * machine["nproc"]
            else "."
        ),
        "",
        f"First command: `{report['first_command']}`; {report['repeats']} repeats, configurations "
        "interleaved (reversed every other repeat), a fresh clone and venv for each sample, uv's download "
        "cache warm, `PYTHONDONTWRITEBYTECODE` "
        + (f"= `{report['pythondontwritebytecode']}`" if report.get("pythondontwritebytecode") else "unset")
        + ". Median in bold, then the samples in run order.",
        "",
        markdown_table(report["summary"], report["configs"]),
        "Moments within the commands, seconds from the command's start (``timed``):",
        "",
        marks_table(report["summary"], report["configs"]),
        "Venv files after the commands (`.py` / `.pyc`): "
        + "; ".join(f"{c}: {v['py']} / {v['pyc']}" for c, v in report["venv_files"].items())
        + ".",
        "",
    ]
    return "\n".join(lines)


def fmt_load(load: list[float] | None) -> str:
    return "–" if not load else ", ".join(f"{x:.1f}" for x in load)


def venv_files(venv: Path) -> dict[str, int]:
    """How many ``.py`` and ``.pyc`` files ``venv`` holds."""
    counts = {"py": 0, "pyc": 0}
    for _folder, _dirs, files in os.walk(venv):
        for name in files:
            if name.endswith(".py"):
                counts["py"] += 1
            elif name.endswith(".pyc"):
                counts["pyc"] += 1
    return counts


def timed(name: str, command: str, clone: Path, env: dict[str, str]) -> dict[str, Any]:
    """``command`` run by ``bash -c`` in ``clone``: wall seconds, exit code, stderr's tail, and when
    (seconds from the start) it printed its first line on stderr (``first_line_s``), started its
    first sandboxed run (``first_run_s``: the first ``equisa-run-*`` folder in ``$EQUISA_SCRATCH``,
    which ``clean_environment`` makes the clone's own), said the Prefect UI's address
    (``server_line_s``: ``connect_prefect`` returned) and gave its first answer (``answer_line_s``:
    the trace is in, on a localization's screening path); None when it did not."""
    import threading

    load = os.getloadavg()
    scratch = Path(env["EQUISA_SCRATCH"]) if env.get("EQUISA_SCRATCH") else None
    started = time.perf_counter()
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, stdin=subprocess.DEVNULL,
    )
    marks: dict[str, float | None] = dict.fromkeys(MARKS)
    lines: list[str] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            at = round(time.perf_counter() - started, 2)
            lines.append(line.rstrip("\n"))
            if marks["first_line_s"] is None:
                marks["first_line_s"] = at
            if marks["server_line_s"] is None and "Prefect UI:" in line:
                marks["server_line_s"] = at
            if marks["answer_line_s"] is None and "First answer" in line:
                marks["answer_line_s"] = at

    readers = [threading.Thread(target=read_stderr, daemon=True),
               threading.Thread(target=lambda: process.stdout and process.stdout.read(), daemon=True)]
    for reader in readers:
        reader.start()
    while process.poll() is None:
        if marks["first_run_s"] is None and scratch is not None and any(scratch.glob("equisa-run-*")):
            marks["first_run_s"] = round(time.perf_counter() - started, 2)
        if time.perf_counter() - started > 1800:
            process.kill()
        time.sleep(0.02)
    seconds = round(time.perf_counter() - started, 2)
    for reader in readers:
        reader.join(timeout=10)
    tail = lines[-3:] if process.returncode not in NORMAL_EXITS else []
    return {
        "name": name,
        "command": command,
        "seconds": seconds,
        "exit": process.returncode,
        **marks,
        "loadavg_before": list(load),
        "stderr_tail": tail,
    }


def one_sample(
    source: Path,
    config: str,
    first: str,
    uv_cache: str,
    own_bin: str | None,
    log: Any,
    dont_write_bytecode: bool = False,
) -> dict[str, Any]:
    """One fresh clone in ``config``: the commands timed, the venv counted, everything stopped."""
    root = Path(tempfile.mkdtemp(prefix="equisa-first-command-"))
    clone = root / "equisa"
    env = clean_environment(os.environ, root, uv_cache, own_bin, dont_write_bytecode)
    (root / "run").mkdir()
    Path(env["EQUISA_SCRATCH"]).mkdir()
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True, capture_output=True)
    pyproject = clone / "pyproject.toml"
    pyproject.write_text(configured(pyproject.read_text(encoding="utf-8"), CONFIGS[config]), encoding="utf-8")
    sample: dict[str, Any] = {"config": config, "loadavg_before": list(os.getloadavg()), "commands": []}
    try:
        again = warm_command(first)
        steps = [
            ("first", first),
            ("repair again", again),
            *((name, f"uv run {words}") for name, words in LATER_COMMANDS),
        ]
        for name, command in steps:
            result = timed(name, command, clone, env)
            sample["commands"].append(result)
            log(
                f"  {config:>9} {name:<26} {result['seconds']:6.1f} s  exit {result['exit']}  "
                f"(first line {result['first_line_s']}, run {result['first_run_s']}, "
                f"server {result['server_line_s']}, answer {result['answer_line_s']})  "
                f"load {result['loadavg_before'][0]:.1f}"
            )
        sample["venv_files"] = venv_files(clone / ".venv")
    finally:
        subprocess.run(
            ["bash", "-c", "uv run --no-sync equisa server stop"],
            cwd=clone,
            env=env,
            capture_output=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(env["EQUISA_SCRATCH"], ignore_errors=True)
    return sample


def machine() -> dict[str, Any]:
    uv = subprocess.run(["uv", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "uv": uv.removeprefix("uv "),
        "loadavg_at_start": list(os.getloadavg()),
    }


def git_state(source: Path) -> dict[str, Any]:
    def git(*words: str) -> str:
        return subprocess.run(
            ["git", "-C", str(source), *words], capture_output=True, text=True, check=True
        ).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "short": git("rev-parse", "--short=7", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="samples per configuration (default 3)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated (default: all)")
    parser.add_argument("--source", type=Path, default=REPO, help="repository to clone (its committed HEAD)")
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR)
    parser.add_argument(
        "--dont-write-bytecode",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE=1 in the commands' environment if it is set",
    )
    parser.add_argument("--suffix", default="", help="appended to the result files' names")
    args = parser.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configurations {unknown}; known: {list(CONFIGS)}")

    started = time.perf_counter()
    uv_cache = subprocess.run(
        ["uv", "cache", "dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    own_bin = str(Path(sys.prefix) / "bin") if sys.prefix != sys.base_prefix else None
    git = git_state(args.source)
    first = first_command((args.source / "README.md").read_text(encoding="utf-8"))
    report: dict[str, Any] = {
        "benchmark": "first_command",
        "schema": 1,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command_line": "uv run python bench/first_command.py " + shlex.join(argv or sys.argv[1:]),
        "git": git,
        "machine": machine(),
        "uv_cache": uv_cache,
        "first_command": first,
        "configs": configs,
        "compile_bytecode": {c: CONFIGS[c] for c in configs},
        "repeats": args.repeats,
        "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE")
        if args.dont_write_bytecode
        else None,
        "samples": [],
    }
    print(
        f"first command: {first}\nload average {fmt_load(report['machine']['loadavg_at_start'])}", flush=True
    )
    for index, config in schedule(configs, args.repeats):
        print(f"repeat {index + 1}/{args.repeats}, {config}", flush=True)
        sample = one_sample(
            args.source,
            config,
            first,
            uv_cache,
            own_bin,
            lambda s: print(s, flush=True),
            args.dont_write_bytecode,
        )
        report["samples"].append({"repeat": index, **sample})
    report["machine"]["loadavg_at_end"] = list(os.getloadavg())
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    report["summary"] = summarize(report["samples"])
    report["venv_files"] = {
        c: next(s["venv_files"] for s in report["samples"] if s["config"] == c) for c in configs
    }
    stem = f"first_command_{report['date'][:10]}_{git['short']}{args.suffix}"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    markdown = markdown_report(report)
    (args.out_dir / f"{stem}.md").write_text(markdown, encoding="utf-8")
    print(markdown)
    print(f"wrote {args.out_dir / stem}.{{json,md}} in {report['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
