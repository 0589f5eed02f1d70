"""Tracing overhead of EQUISA's probe against plain pytest and coverage.py per-test contexts.

Run from the repository root::

    uv run python bench/tracing_overhead.py [--repeats N] [--pythons 3.11,3.12,3.13]
                                            [--out bench/results/tracing_overhead.json]

What it does:

1. writes a synthetic project (``bench/synthetic_suite.py``: a 10-module package and ~315 pytest
   tests, 3 of which fail on purpose) into a temporary folder;
2. for each requested Python, finds the newest ``/root/.pyenv/versions/<ver>`` (``$PYENV_ROOT``),
   creates a venv there with ``uv venv`` and installs pytest and pytest-cov into it (a version
   that is not installed is skipped with a printed reason);
3. times the whole pytest process (``time.perf_counter`` around ``subprocess.run``), interleaved
   ABCD ABCD ... so that every configuration shares the machine's noise, for N repeats after one
   untimed warm-up round:

   - ``plain``             ``python -m pytest -q -p no:cacheprovider``
   - ``probe``             ``... -p equisa_probe --equisa-out=OUT --equisa-root=ROOT``
   - ``coverage``          ``... --cov=minilib --cov-context=test`` (what FauxPy / pytest-cov users run)
   - ``probe-setprofile``  the probe with ``EQUISA_PROBE_BACKEND=setprofile`` (3.12+ only)

   every run with ``PYTHONDONTWRITEBYTECODE=1``, ``PYTHONHASHSEED=0`` and the probe's folder on
   ``PYTHONPATH`` (for all configurations alike, so only the tracing differs);
4. prints a table of medians and ratios vs plain and PASS/FAIL against the targets (probe
   <= 1.05x plain on 3.12+, <= 1.15x on 3.11, <= 2.5x on older Pythons: issue 48), and writes
   environment, raw timings and ratios as JSON to ``--out``;
5. checks every probe run's output: one ``test`` record per test pytest ran, each with a
   non-empty ``covered`` list, and the expected backend in the session record.

It asserts nothing: the exit status is 0 unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_suite

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tasks.sandbox.probe_bytecode import probe_bytecode  # noqa: E402
PROBE_DIR = REPO / "equisa_core" / "probe"
PROBE_FILE = PROBE_DIR / "equisa_probe.py"
#: Where main() copies the probe first, so every run of one benchmark measures the same probe even
#: if the file is edited; each Python's runs get it compiled for that Python (``probe_folder``), as
#: EQUISA's host gives it to a sandboxed run.
probe_path = PROBE_DIR
PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
DEFAULT_OUT = REPO / "bench" / "results" / "tracing_overhead.json"
PACKAGES = ["pytest", "pytest-cov"]
#: Probe wall time / plain wall time, ratio of medians: at most this much on (major, minor) >= key.
TARGETS = {(3, 12): 1.05, (3, 11): 1.15, (0, 0): 2.5}
SUMMARY_RE = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")

#: A tiny plugin, used in one untimed plain run per Python, that measures what each test costs
#: without any tracing: the call phase alone, and the whole setup + call + teardown protocol.
DURATIONS_PLUGIN = '''
import json, os, time
import pytest

_calls, _protocols = {}, {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    start = time.perf_counter()
    yield
    _calls[item.nodeid] = time.perf_counter() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.perf_counter()
    yield
    _protocols[item.nodeid] = time.perf_counter() - start


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["BENCH_DURATIONS_OUT"], "w") as handle:
        json.dump({"call": _calls, "protocol": _protocols}, handle)
'''


def target_for(version: tuple[int, int]) -> float:
    return next(limit for key, limit in sorted(TARGETS.items(), reverse=True) if version >= key)


# -------------------------------------------------------------------------------------------------
# Environment


def run_text(cmd, **kwargs) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kwargs)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def environment(uv: str) -> dict:
    commit = run_text(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    dirty = run_text(["git", "-C", str(REPO), "status", "--porcelain"])
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "host_python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "loadavg_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "uv": run_text([uv, "--version"]),
        "git_commit": commit,
        "git_note": None if commit else "repository has no commits yet",
        "git_dirty": bool(dirty) if commit else None,
        "probe_file": str(PROBE_FILE.relative_to(REPO)),
        "probe_sha256": hashlib.sha256((probe_path / PROBE_FILE.name).read_bytes()).hexdigest(),
    }


def find_python(version: str) -> tuple[Path | None, str]:
    """The newest pyenv interpreter matching ``version`` ('3.12' or '3.12.1'), or a reason."""
    if not PYENV_VERSIONS.is_dir():
        return None, f"{PYENV_VERSIONS} does not exist"
    pattern = re.compile(re.escape(version) + (r"\.\d+$" if version.count(".") == 1 else "$"))
    found = [p for p in PYENV_VERSIONS.iterdir()
             if pattern.match(p.name) and (p / "bin" / "python").exists()]
    if not found:
        listed = ", ".join(sorted(p.name for p in PYENV_VERSIONS.iterdir())) or "nothing"
        wanted = version + ".x" if version.count(".") == 1 else version
        return None, f"no {wanted} in {PYENV_VERSIONS} (it has: {listed})"
    best = max(found, key=lambda p: tuple(int(x) for x in p.name.split(".")))
    return best / "bin" / "python", ""


def make_venv(uv: str, base_python: Path, venv: Path) -> Path:
    subprocess.run([uv, "venv", "-q", "-p", str(base_python), str(venv)], check=True)
    python = venv / "bin" / "python"
    # Bytecode compiled at install time, as pip does: with PYTHONDONTWRITEBYTECODE=1 in the timed
    # runs, pytest's own modules would otherwise be compiled again in every run.
    subprocess.run([uv, "pip", "install", "-q", "--compile-bytecode", "--python", str(python),
                    *PACKAGES], check=True)
    return python


def interpreter_info(python: Path) -> dict:
    script = (
        "import json, sys, importlib.metadata as m\n"
        "info = {'version': '%d.%d.%d' % sys.version_info[:3], 'implementation': sys.implementation.name,\n"
        "        'packages': {p: m.version(p) for p in ('pytest', 'pytest-cov', 'coverage')}}\n"
        "try:\n"
        "    import coverage\n"
        "    cov = coverage.Coverage(data_file=None)\n"
        "    cov.start(); cov.stop()\n"
        "    info['coverage_core'] = dict(cov.sys_info()).get('core')\n"
        "except Exception as error:\n"
        "    info['coverage_core'] = 'unknown: %r' % (error,)\n"
        "print(json.dumps(info))\n"
    )
    return json.loads(subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                                     check=True).stdout)


# -------------------------------------------------------------------------------------------------
# Runs


def configurations(version: tuple[int, int], project: Path, outdir: Path) -> list[dict]:
    probe_args = ["-p", "equisa_probe", "--equisa-out={out}", f"--equisa-root={project}"]
    configs = [
        {"key": "plain", "args": [], "env": {}},
        {"key": "probe", "args": probe_args, "env": {}, "probe_backend":
            "sys.monitoring" if version >= (3, 12) else "instrument"},
        {"key": "coverage", "args": [f"--cov={synthetic_suite.PACKAGE}", "--cov-context=test"],
         "env": {}},
        # The profile hook, the fallback on every version, for comparison.
        {"key": "probe-setprofile", "args": probe_args,
         "env": {"EQUISA_PROBE_BACKEND": "setprofile"}, "probe_backend": "setprofile"},
    ]
    return configs


def base_env(probe_dir: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COVERAGE_", "EQUISA_", "PYTHON", "VIRTUAL_ENV", "UV_"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", PYTHONPATH=str(probe_dir or probe_path))
    return env


def probe_folder(python: Path, workdir: Path) -> Path:
    """The probe as EQUISA's host gives it to a run of ``python``: its bytecode for that interpreter
    alone (``tasks.sandbox.probe_bytecode``), compiled from the copy ``main`` made, else that copy."""
    folder = workdir / "probe"
    folder.mkdir(exist_ok=True)
    compiled = probe_bytecode(str(python), cache=workdir / "probe-cache", source=probe_path / PROBE_FILE.name)
    if compiled is not None:
        shutil.copyfile(compiled, folder / "equisa_probe.pyc")
    else:
        shutil.copyfile(probe_path / PROBE_FILE.name, folder / PROBE_FILE.name)
    return folder


class Runner:
    def __init__(self, python: Path, project: Path, workdir: Path):
        self.python = python
        self.project = project
        self.workdir = workdir
        self.probe_dir = probe_folder(python, workdir)
        self.env = base_env(self.probe_dir)
        self.counter = 0

    def command(self, config: dict, out: Path | None) -> list[str]:
        args = [a.replace("{out}", str(out)) for a in config["args"]]
        return [str(self.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]

    def run(self, config: dict, extra_env: dict | None = None, extra_args: list | None = None) -> dict:
        self.counter += 1
        out = self.workdir / f"probe-{config['key']}-{self.counter}.jsonl"
        cmd = self.command(config, out) + list(extra_args or [])
        env = dict(self.env, **config["env"], **(extra_env or {}))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=self.project, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        lines = done.stdout.strip().splitlines()
        summary = lines[-1] if lines else ""
        counts = {}
        for number, word in SUMMARY_RE.findall(summary):
            counts["errors" if word.startswith("error") else word] = int(number)
        result = {"wall": wall, "cpu": cpu, "returncode": done.returncode, "summary": summary,
                  "counts": counts}
        if done.returncode not in (0, 1):
            result["stderr_tail"] = (done.stderr or done.stdout)[-2000:]
        if "probe_backend" in config:
            result["probe_check"] = check_probe_output(out, counts, config["probe_backend"])
            out.unlink(missing_ok=True)
        return result


def own_function_covered(record: dict) -> bool:
    """Whether a test record's ``covered`` names the test's own function (or method)."""
    parts = record.get("test", "").split("::")[1:]
    if not parts:
        return True
    qualname = ".".join(parts).split("[")[0]
    return any(f == qualname or f.endswith("." + qualname) for f in record.get("covered", ()))


def compare_backends(a: dict, b: dict) -> dict:
    """Per-test differences between two probe runs' covered lists (the package's functions:
    the import-time instrumentation lists test functions only as callers) and edges."""
    package = synthetic_suite.PACKAGE + "."

    def project(run: dict, test: str) -> list:
        return [f for f in run["_covered"].get(test, ()) if f.startswith(package)]

    tests = sorted(set(a["_covered"]) | set(b["_covered"]))
    covered = [t for t in tests if project(a, t) != project(b, t)]
    edges = [t for t in tests if a["_edges"].get(t) != b["_edges"].get(t)]
    example = None
    if covered:
        t = covered[0]
        only_a = sorted(set(project(a, t)) - set(project(b, t)))
        only_b = sorted(set(project(b, t)) - set(project(a, t)))
        example = {"test": t, "only_first": only_a, "only_second": only_b}
    return {"tests": len(tests), "covered_differ": len(covered), "edges_differ": len(edges),
            "example": example}


def check_probe_output(path: Path, counts: dict, backend: str) -> dict:
    """One ``test`` record per test pytest ran, each with a non-empty ``covered`` list."""
    problems = []
    records = []
    if not path.exists():
        return {"ok": False, "problems": ["probe wrote no output file"]}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            records.append(json.loads(line))
        except ValueError:
            problems.append(f"line {n} is not JSON")
    sessions = [r for r in records if r.get("kind") == "session"]
    tests = [r for r in records if r.get("kind") == "test"]
    ran = sum(counts.get(k, 0) for k in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed"))
    if len(sessions) != 1:
        problems.append(f"{len(sessions)} session records")
    elif sessions[0].get("backend") != backend:
        problems.append(f"backend {sessions[0].get('backend')!r}, expected {backend!r}")
    if len(tests) != ran:
        problems.append(f"{len(tests)} test records for {ran} tests run")
    ids = [r.get("test") for r in tests]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} duplicate test records")
    empty = [r.get("test") for r in tests if not r.get("covered")]
    if empty:
        problems.append(f"{len(empty)} tests with empty 'covered', e.g. {empty[:3]}")
    failed = sum(1 for r in tests if r.get("outcome") == "failed")
    if failed != counts.get("failed", 0):
        problems.append(f"{failed} failed records, pytest says {counts.get('failed', 0)}")
    collected = [r for r in records if r.get("kind") == "collected"]  # newer probes write one
    if collected and len(collected[-1].get("tests", ())) != ran:
        problems.append(f"'collected' lists {len(collected[-1].get('tests', ()))} tests, {ran} ran")
    if not any(r.get("kind") == "end" for r in records):
        problems.append("no end record")
    # Every test must list its own test function. Parametrized tests run one code object many
    # times, so this also checks that a function is reported again in every later test. The
    # import-time instrumentation marks project code only: there a test function is listed when
    # it calls the project directly, and the check is that every test reaches the package.
    missing_self = [] if backend == "instrument" else [
        r.get("test") for r in tests if not own_function_covered(r)]
    if missing_self:
        problems.append(f"{len(missing_self)} tests do not list their own test function, "
                        f"e.g. {missing_self[:3]}")
    package = synthetic_suite.PACKAGE + "."
    touching = sum(1 for r in tests if any(f.startswith(package) for f in r.get("covered", ())))
    if backend == "instrument" and touching != len(tests):
        problems.append(f"{len(tests) - touching} tests list no function of the package")
    return {
        "ok": not problems,
        "_covered": {r.get("test"): sorted(r.get("covered", ())) for r in tests},
        "_edges": {r.get("test"): sorted(map(tuple, r.get("edges", ()))) for r in tests},
        "problems": problems,
        "backend": sessions[0].get("backend") if sessions else None,
        "test_records": len(tests),
        "tests_run": ran,
        "tests_covering_package": touching,
        "mean_covered": round(statistics.mean(len(r.get("covered", ())) for r in tests), 2) if tests else 0,
        "mean_edges": round(statistics.mean(len(r.get("edges", ())) for r in tests), 2) if tests else 0,
    }


IR_RE = re.compile(r"I\s+refs:\s+([\d,]+)")


def count_instructions(runner: Runner, config: dict, valgrind: str) -> dict:
    """Instructions executed by one run of ``config`` under cachegrind: immune to machine noise."""
    out = runner.workdir / f"probe-ir-{config['key']}.jsonl"
    cmd = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
           *runner.command(config, out)]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=runner.project, env=dict(runner.env, **config["env"]),
                          capture_output=True, text=True)
    found = IR_RE.findall(done.stderr)
    out.unlink(missing_ok=True)
    return {"instructions": int(found[-1].replace(",", "")) if found else None,
            "returncode": done.returncode, "seconds_under_valgrind": round(time.perf_counter() - start, 1)}


def per_test_work(runner: Runner, plugin_dir: Path) -> dict:
    """Per-test cost without tracing, from one untimed plain run with the durations plugin."""
    out = runner.workdir / "durations.json"
    runner.env["PYTHONPATH"] = os.pathsep.join([str(runner.probe_dir), str(plugin_dir)])
    try:
        runner.run({"key": "durations", "args": [], "env": {}},
                   extra_env={"BENCH_DURATIONS_OUT": str(out)},
                   extra_args=["-p", "_bench_durations"])
    finally:
        runner.env["PYTHONPATH"] = str(runner.probe_dir)
    data = json.loads(out.read_text())
    summary = {}
    for phase in ("call", "protocol"):
        ms = sorted(v * 1000 for v in data[phase].values())
        summary[phase] = {
            "tests": len(ms),
            "median_ms": round(statistics.median(ms), 3),
            "mean_ms": round(statistics.mean(ms), 3),
            "p10_ms": round(ms[len(ms) // 10], 3),
            "p90_ms": round(ms[(len(ms) * 9) // 10], 3),
            "max_ms": round(ms[-1], 3),
            "total_s": round(sum(ms) / 1000, 3),
        }
    return summary


def report_failure(console: Console, label: str, config: dict, result: dict) -> None:
    console.print(f"[red]{label} {config['key']} exited {result['returncode']}:[/]\n"
                  f"{result.get('stderr_tail')}")


def bench_python(label: str, python: Path, project: Path, workdir: Path, repeats: int,
                 warmup: int, console: Console, runners: dict) -> dict:
    info = interpreter_info(python)
    version = tuple(int(x) for x in info["version"].split(".")[:2])
    configs = configurations(version, project, workdir)
    runner = Runner(python, project, workdir)
    plugin_dir = workdir / "plugins"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "_bench_durations.py").write_text(DURATIONS_PLUGIN)

    work = per_test_work(runner, plugin_dir)
    console.print(f"[bold]{label}[/] Python {info['version']}: {work['call']['tests']} tests, "
                  f"call phase median {work['call']['median_ms']:.2f} ms, "
                  f"mean {work['call']['mean_ms']:.2f} ms "
                  f"(setup+call+teardown median {work['protocol']['median_ms']:.2f} ms); "
                  f"coverage core: {info.get('coverage_core')}")

    results = {c["key"]: {"wall_s": [], "cpu_s": [], "runs": []} for c in configs}
    warmups = {c["key"]: [] for c in configs}
    for _ in range(warmup):
        for config in configs:
            r = runner.run(config)
            warmups[config["key"]].append(round(r["wall"], 4))
            if r["returncode"] not in (0, 1):
                report_failure(console, label, config, r)
    loadavg = []
    for i in range(repeats):
        loadavg.append(round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None)
        line = []
        for config in configs:  # interleaved: A B C D, A B C D, ...
            r = runner.run(config)
            slot = results[config["key"]]
            slot["wall_s"].append(round(r["wall"], 4))
            slot["cpu_s"].append(round(r["cpu"], 4))
            slot["runs"].append({k: v for k, v in r.items() if k not in ("wall", "cpu")})
            line.append(f"{config['key']} {r['wall']:.2f}s")
            if r["returncode"] not in (0, 1):
                report_failure(console, label, config, r)
        console.print(f"  {label} round {i + 1}/{repeats}: " + ", ".join(line))

    plain = results["plain"]
    plain_median = statistics.median(plain["wall_s"])
    n_tests = work["call"]["tests"]
    configs_out = {}
    for config in configs:
        slot = results[config["key"]]
        median = statistics.median(slot["wall_s"])
        paired = [a / b for a, b in zip(slot["wall_s"], plain["wall_s"], strict=True)]
        checks = [run["probe_check"] for run in slot["runs"] if "probe_check" in run]
        counts = [run["counts"] for run in slot["runs"]]
        entry = {
            "command": runner.command(config, Path("OUT.jsonl")),
            "env": config["env"],
            "warmup_wall_s": warmups[config["key"]],
            "wall_s": slot["wall_s"],
            "cpu_s": slot["cpu_s"],
            "median_wall_s": round(median, 4),
            "min_wall_s": min(slot["wall_s"]),
            "max_wall_s": max(slot["wall_s"]),
            "median_cpu_s": round(statistics.median(slot["cpu_s"]), 4),
            "ratio_vs_plain": round(median / plain_median, 4),
            "ratio_of_mins_vs_plain": round(min(slot["wall_s"]) / min(plain["wall_s"]), 4),
            "cpu_ratio_vs_plain": round(statistics.median(slot["cpu_s"])
                                        / statistics.median(plain["cpu_s"]), 4),
            "paired_ratios": [round(p, 4) for p in paired],
            "paired_ratio_median": round(statistics.median(paired), 4),
            "overhead_ms_per_test": round((median - plain_median) * 1000 / n_tests, 3),
            "returncodes": sorted({run["returncode"] for run in slot["runs"]}),
            "pytest_counts": counts[-1] if counts else {},
            "pytest_counts_consistent": all(c == counts[0] for c in counts),
        }
        if checks:
            entry["probe_checks_ok"] = all(c["ok"] for c in checks)
            entry["probe_check"] = {k: v for k, v in checks[-1].items() if not k.startswith("_")}
            first = checks[0]
            stable = [compare_backends(first, c) for c in checks[1:]]
            entry["same_covered_every_run"] = all(d["covered_differ"] == 0 for d in stable)
            entry["probe_check_problems"] = sorted({p for c in checks for p in c["problems"]})
        configs_out[config["key"]] = entry
    target = target_for(version)
    probe = configs_out["probe"]
    runners[label] = (runner, configs)
    agreement = None
    if "probe-setprofile" in results:
        last = {key: [r["probe_check"] for r in results[key]["runs"] if "probe_check" in r][-1]
                for key in ("probe", "probe-setprofile")}
        agreement = compare_backends(last["probe"], last["probe-setprofile"])
        agreement["ok"] = agreement["covered_differ"] == 0
        if not agreement["ok"]:
            console.print(f"[red]{label}: sys.monitoring and setprofile disagree on 'covered' for "
                          f"{agreement['covered_differ']} tests, e.g. {agreement['example']}[/]")
    for slot in results.values():  # the per-test lists were only needed for the comparisons
        for run in slot["runs"]:
            if "probe_check" in run:
                run["probe_check"] = {k: v for k, v in run["probe_check"].items() if not k.startswith("_")}
    return {
        "executable": str(python),
        **info,
        "per_test_work_without_tracing": work,
        "tests": n_tests,
        "loadavg_1min_per_round": loadavg,
        "configs": configs_out,
        "target": {"config": "probe", "max_ratio_vs_plain": target,
                   "ratio_vs_plain": probe["ratio_vs_plain"],
                   "verdict": "PASS" if probe["ratio_vs_plain"] <= target else "FAIL"},
        "correctness": {
            "verdict": "PASS" if (probe.get("probe_checks_ok")
                                  and configs_out.get("probe-setprofile", {}).get("probe_checks_ok", True)
                                  and (agreement is None or agreement["ok"])) else "FAIL",
            "backends_agree": agreement,
        },
    }


# -------------------------------------------------------------------------------------------------
# Report


def print_table(console: Console, report: dict) -> None:
    table = Table(title="Tracing overhead: wall time of the whole pytest process "
                        f"(median of {report['settings']['repeats']}, interleaved)")
    for name, justify in [("Python", "left"), ("run", "left"), ("median s", "right"),
                          ("min–max s", "right"), ("× plain", "right"), ("paired ×", "right"),
                          ("min ×", "right"),
                          ("CPU ×", "right"), ("Ir ×", "right"), ("+ms/test", "right"), ("target", "right"),
                          ("verdict", "left")]:
        table.add_column(name, justify=justify)
    first = True
    for label, py in report["pythons"].items():
        if not first:
            table.add_section()
        first = False
        for key, c in py["configs"].items():
            verdict, target = "", ""
            if key == "probe":
                target = f"≤ {py['target']['max_ratio_vs_plain']:.2f}×"
                ok = py["target"]["verdict"] == "PASS"
                verdict = "[green]PASS[/]" if ok else "[red]FAIL[/]"
            if "probe_checks_ok" in c:
                verdict += (" " if verdict else "") + (
                    "[green]output ok[/]" if c["probe_checks_ok"] else "[red]output BAD[/]")
            table.add_row(
                f"{label} ({py['version']})" if key == "plain" else "",
                key,
                f"{c['median_wall_s']:.3f}",
                f"{c['min_wall_s']:.2f}–{c['max_wall_s']:.2f}",
                "1.00" if key == "plain" else f"{c['ratio_vs_plain']:.2f}",
                "1.00" if key == "plain" else f"{c['paired_ratio_median']:.2f}",
                "1.00" if key == "plain" else f"{c['ratio_of_mins_vs_plain']:.2f}",
                "1.00" if key == "plain" else f"{c['cpu_ratio_vs_plain']:.2f}",
                f"{c['instructions_ratio_vs_plain']:.2f}" if c.get("instructions_ratio_vs_plain") else "–",
                "" if key == "plain" else f"{c['overhead_ms_per_test']:+.2f}",
                target,
                verdict,
            )
    console.print(table)
    for label, py in report["pythons"].items():
        work = py["per_test_work_without_tracing"]
        console.print(f"{label}: {py['tests']} tests; per-test work without tracing: call median "
                      f"{work['call']['median_ms']:.2f} ms (p10 {work['call']['p10_ms']:.2f}, p90 "
                      f"{work['call']['p90_ms']:.2f}), setup+call+teardown median "
                      f"{work['protocol']['median_ms']:.2f} ms; coverage core {py.get('coverage_core')}; "
                      f"probe {py['target']['ratio_vs_plain']:.2f}× plain → {py['target']['verdict']} "
                      f"(target ≤ {py['target']['max_ratio_vs_plain']}×); probe output "
                      f"{py['correctness']['verdict']}")
        for key, c in py["configs"].items():
            for problem in c.get("probe_check_problems", []):
                console.print(f"  [red]{key}: {problem}[/]")
    for label, reason in report["skipped"].items():
        console.print(f"[yellow]{label} skipped:[/] {reason}")


def instructions_phase(report: dict, runners: dict, console: Console) -> None:
    """After all timing: one cachegrind run per configuration, in parallel (counts don't care)."""
    from concurrent.futures import ThreadPoolExecutor

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        report["settings"]["instructions"] = "skipped: valgrind is not installed"
        console.print("[yellow]--instructions skipped:[/] valgrind is not installed")
        return
    report["settings"]["instructions"] = ("valgrind --tool=cachegrind --cache-sim=no, "
                                          "one run per configuration")
    tasks = [(label, runner, config) for label, (runner, configs) in runners.items() for config in configs]
    console.print(f"counting instructions: {len(tasks)} runs under valgrind, {os.cpu_count()} at a time ...")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda t: count_instructions(t[1], t[2], valgrind), tasks))
    for (label, _runner, config), result in zip(tasks, results, strict=True):
        report["pythons"][label]["configs"][config["key"]]["instructions"] = result
    for py in report["pythons"].values():
        plain = py["configs"]["plain"].get("instructions", {}).get("instructions")
        for c in py["configs"].values():
            ir = c.get("instructions", {}).get("instructions")
            c["instructions_ratio_vs_plain"] = round(ir / plain, 4) if ir and plain else None


def finish_report(console, report: dict, print_table, out: Path, started: float) -> None:
    """Stamp the end load and elapsed time, print the table, write the JSON (both benchmarks)."""
    report["environment"]["loadavg_at_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    print_table(console, report)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {out} in {report['elapsed_s']} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per Python (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--pythons", default="3.11,3.12,3.13",
                        help="comma-separated versions, e.g. 3.11,3.12 (default 3.11,3.12,3.13)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions of one run per configuration under valgrind "
                             "(cachegrind): slow (~1-2 min per Python) but immune to machine noise")
    args = parser.parse_args(argv)

    console = Console()
    if not console.is_terminal:  # piped or redirected: rich would fall back to 80 columns
        console = Console(width=160)
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    started = time.perf_counter()
    global probe_path
    tmp = Path(tempfile.mkdtemp(prefix="equisa-bench-"))
    probe_path = tmp / "probe"
    probe_path.mkdir()
    shutil.copy2(PROBE_FILE, probe_path / PROBE_FILE.name)
    report = {
        "benchmark": "tracing_overhead",
        "schema": 1,
        "environment": environment(uv),
        "settings": {
            "repeats": args.repeats,
            "warmup_rounds": args.warmup,
            "order": "interleaved per round: plain, probe, coverage[, probe-setprofile]",
            "statistic": "median wall seconds of the whole pytest process; ratio = median / median(plain)",
            "env": {k: v for k, v in base_env().items() if k.startswith("PYTHON")},
            "targets": {"probe_vs_plain_python>=3.12": TARGETS[(3, 12)],
                        "probe_vs_plain_python3.11": TARGETS[(3, 11)],
                        "probe_vs_plain_python<3.11": TARGETS[(0, 0)]},
        },
        "suite": {
            "generator": "bench/synthetic_suite.py",
            "package": synthetic_suite.PACKAGE,
            "modules": sorted(p for p in synthetic_suite.FILES
                              if p.startswith(synthetic_suite.PACKAGE + "/")),
            "test_files": sorted(p for p in synthetic_suite.FILES if p.startswith("tests/")),
            "expected_failures": synthetic_suite.EXPECTED_FAILURES,
        },
        "pythons": {},
        "skipped": {},
    }
    runners: dict = {}
    try:
        project = synthetic_suite.write_project(tmp / "project")
        console.print(f"synthetic project in {project}")
        for label in [v.strip() for v in args.pythons.split(",") if v.strip()]:
            base, reason = find_python(label)
            if base is None:
                console.print(f"[yellow]skipping Python {label}:[/] {reason}")
                report["skipped"][label] = reason
                continue
            venv = tmp / f"venv-{label}"
            try:
                python = make_venv(uv, base, venv)
            except subprocess.CalledProcessError as error:
                reason = f"could not create the venv or install {PACKAGES}: {error}"
                console.print(f"[yellow]skipping Python {label}:[/] {reason}")
                report["skipped"][label] = reason
                continue
            workdir = tmp / f"work-{label}"
            workdir.mkdir()
            report["pythons"][label] = bench_python(label, python, project, workdir, args.repeats,
                                                    args.warmup, console, runners)
        if args.instructions:
            instructions_phase(report, runners, console)
    finally:
        if args.keep:
            console.print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    finish_report(console, report, print_table, args.out, started)
    return 0 if report["pythons"] else 2


if __name__ == "__main__":
    sys.exit(main())
