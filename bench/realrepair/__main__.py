"""``uv run python -m bench.realrepair {prepare,run,rejudge,report,all} [options]`` (see ``__init__``;
``rejudge``: the kept records of ``--versions`` judged again with the reference check, no repair run)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench.realbugs.bugsinpy import Refused, check_project
from bench.realbugs.steps import REPO, log

from . import SOURCES, bugsinpy_single
from .judge import NoSandbox
from .report import build, markdown
from .steps import (
    DEFAULT_TIMEOUT_S,
    Context,
    interleave,
    load_case,
    prepare_bugsinpy,
    prepare_refactory,
    rejudge,
    resolve_versions,
    run,
)

DEFAULT_CACHE = (
    Path(os.environ.get("EQUISA_BENCH_CACHE", Path.home() / ".cache" / "equisa-bench")) / "realrepair"
)
QUICK = {"refactory": 10, "bugsinpy": 6}


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.realrepair", description=__doc__)
    parser.add_argument("step", choices=("prepare", "run", "rejudge", "report", "all"))
    parser.add_argument(
        "--sources", default=",".join(SOURCES), help="comma-separated among refactory,bugsinpy"
    )
    parser.add_argument("--sample", type=int, default=150, help="Refactory programs kept (30 per question)")
    parser.add_argument(
        "--bugs", help="explicit bugs: refactory-wrong_1_001, black:10 or bugsinpy-black-10 (BugsInPy)"
    )
    parser.add_argument("--limit", type=int, help="run/report: at most N bugs per source")
    parser.add_argument("--quick", action="store_true", help="10 Refactory programs and 6 BugsInPy bugs")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per repair (600)")
    parser.add_argument("--rerun", action="store_true", help="run again the versions already run on a bug")
    parser.add_argument("--force", action="store_true", help="prepare again the bugs already prepared")
    parser.add_argument(
        "--versions",
        default="HEAD",
        help="comma-separated git revisions; BASE: the commit before issue 19's work (default HEAD)",
    )
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="default %(default)s")
    parser.add_argument(
        "--out", type=Path, help="report files' stem (default bench/results/realrepair_<date>)"
    )
    args = parser.parse_args(argv)
    args.source_list = [s.strip() for s in args.sources.split(",") if s.strip()]
    if any(s not in SOURCES for s in args.source_list):
        parser.error(f"--sources: among {', '.join(SOURCES)}")
    args.refactory_bugs, args.bugsinpy_bugs = None, None
    try:
        if args.bugs:
            items = [b.strip() for b in args.bugs.split(",") if b.strip()]
            args.refactory_bugs = {b for b in items if b.startswith("refactory-")}
            # BugsInPy bugs as ``black:10`` or as the reports name them, ``bugsinpy-black-10``.
            pairs = [b.removeprefix("bugsinpy-").rpartition("-" if b.startswith("bugsinpy-") else ":")
                     for b in items if not b.startswith("refactory-")]
            args.bugsinpy_bugs = [(check_project(p), int(n)) for p, _, n in pairs]
    except Refused as error:
        parser.error(str(error))
    return args


def chosen_bugsinpy(args: argparse.Namespace) -> list[tuple[str, int]]:
    """``--bugs``' BugsInPy bugs, else every single-function bug of the realbugs manifest."""
    if args.bugs:
        return args.bugsinpy_bugs or []
    return bugsinpy_single.single_function_bugs()


def _cases(args: argparse.Namespace, ctx: Context) -> list[dict]:
    """The kept cases of the selected sources (prepared ones only), ``--limit``/``--quick`` applied."""
    cases = []
    for source in args.source_list:
        if source == "refactory":
            mine = (
                prepare_refactory(ctx, args.sample, args.refactory_bugs)
                if args.step in ("prepare", "all")
                else _prepared(ctx, "refactory", args.refactory_bugs)
            )
        else:
            wanted = chosen_bugsinpy(args)
            mine = (
                prepare_bugsinpy(ctx, wanted)
                if args.step in ("prepare", "all")
                else _prepared(ctx, "bugsinpy", {bugsinpy_single.bug_id(p, n) for p, n in wanted})
            )
        limit = QUICK[source] if args.quick else args.limit
        cases += mine[:limit] if limit is not None else mine
    return cases


def _prepared(ctx: Context, source: str, ids: set[str] | None) -> list[dict]:
    out = []
    for folder in sorted(ctx.bugs.glob(f"{source}-*")):
        case = load_case(folder)
        if case and case["kept"] and (ids is None or case["id"] in ids):
            out.append(case)
    return interleave(out) if source == "refactory" else out


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    ctx = Context(cache=args.cache.expanduser(), force=args.force, timeout=args.timeout)
    ctx.cache.mkdir(parents=True, exist_ok=True)
    versions = resolve_versions([v.strip() for v in args.versions.split(",") if v.strip()])
    try:
        cases = _cases(args, ctx)
        log(
            f"[{args.step}] {len(cases)} bugs: "
            + ", ".join(f"{s} {sum(c['source'] == s for c in cases)}" for s in args.source_list)
        )
        if args.step in ("run", "all"):
            run(ctx, cases, versions, args.rerun)
        if args.step == "rejudge":
            rejudge(ctx, cases, versions)
    except NoSandbox as error:
        print(f"realrepair: {error}", file=sys.stderr)
        return 2
    if args.step in ("report", "all"):
        data = build(ctx.results, cases, versions)
        data["cache"] = str(ctx.cache)
        stem = (
            args.out or REPO / "bench" / "results" / f"realrepair_{time.strftime('%Y-%m-%d', time.gmtime())}"
        )
        Path(f"{stem}.json").write_text(json.dumps(data, indent=1) + "\n")
        Path(f"{stem}.md").write_text(markdown(data))
        print(markdown(data))
        log(f"[report] written {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
