"""``uv run python -m bench.realbugs {prepare,run,report,all} [options]`` (see ``__init__``)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

from . import ALLOWED_PROJECTS
from .bugsinpy import DEFAULT_MIRRORS, Mirrors, Refused, check_project
from .report import build, markdown
from .steps import REPO, Context, log, prepare, run, select_bugs, write_manifest

DEFAULT_CACHE = Path(os.environ.get("EQUISA_BENCH_CACHE", Path.home() / ".cache" / "equisa-bench")) / "realbugs"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.realbugs", description=__doc__)
    parser.add_argument("step", choices=("prepare", "run", "report", "all"))
    parser.add_argument("--projects", default=",".join(ALLOWED_PROJECTS),
                        help=f"comma-separated, among {', '.join(ALLOWED_PROJECTS)} (default: all six)")
    parser.add_argument("--bugs", help="explicit bugs, e.g. black:1,black:2 (overrides --projects)")
    parser.add_argument("--limit", type=int, help="at most N bugs per project (the lowest numbers)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="checkouts, venvs, raw results ($EQUISA_BENCH_CACHE/realbugs; default %(default)s)")
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS,
                        help="folder of bare git snapshots owner+name/repo ($EQUISA_BENCH_MIRRORS; default "
                             "%(default)s); missing ones are cloned from GitHub into the cache")
    parser.add_argument("--jobs", type=int, default=2, help="bugs prepared at once (default 2)")
    parser.add_argument("--force", action="store_true", help="prepare again even if cached")
    parser.add_argument("--retry-failed-envs", action="store_true", help="build venvs that failed before again")
    parser.add_argument("--rerun", action="store_true", help="run the tools again on bugs already run")
    parser.add_argument("--equisa-from", choices=("head", "worktree"), default="head",
                        help="head: a frozen git archive of HEAD's equisa_core/tasks/flows (default; the "
                             "same code for every bug while the work tree changes); worktree: "
                             "`uv run --project REPO equisa` as it is")
    parser.add_argument("--cold", action="store_true",
                        help="run/report: every EQUISA command starts its own Prefect server (stopped "
                             "before it; results in <cache>/results-cold), the cold-start figures")
    parser.add_argument("--variant", default="",
                        help="run/report: a name for --equisa-args (results in <cache>/results-<variant>)")
    parser.add_argument("--equisa-args", default="",
                        help="run: options added to `equisa localize`, e.g. \"--screen-budget 5\" (with --variant)")
    parser.add_argument("--fauxpy-statement", action="store_true",
                        help="run: FauxPy at statement granularity too, as its study ran it (--failing-list, "
                             "the study's test files, each function scored by its best statement)")
    parser.add_argument("--follow", action="store_true",
                        help="run: also take bugs that a prepare running beside it verifies later")
    parser.add_argument("--equisa-commit", default=None,
                        help="with --equisa-from head: the commit to freeze instead of HEAD")
    parser.add_argument("--out", type=Path, default=None,
                        help="report files' stem (default bench/results/realbugs_<date>)")
    args = parser.parse_args(argv)
    if args.equisa_args and not args.variant:
        parser.error("--equisa-args needs --variant (its results must not mix with the defaults')")
    try:
        args.project_list = [check_project(p.strip()) for p in args.projects.split(",") if p.strip()]
        if args.bugs:
            for item in args.bugs.split(","):
                check_project(item.strip().partition(":")[0])
    except Refused as error:
        parser.error(str(error))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    ctx = Context(cache=args.cache.expanduser(), mirrors=Mirrors(args.mirrors, args.cache.expanduser()),
                  jobs=args.jobs, force=args.force, retry_failed_envs=args.retry_failed_envs, cold=args.cold,
                  variant=args.variant, equisa_args=tuple(shlex.split(args.equisa_args)),
                  statement=args.fauxpy_statement)
    ctx.cache.mkdir(parents=True, exist_ok=True)
    chosen = select_bugs(ctx, args.project_list, args.bugs, args.limit)
    if args.step in ("prepare", "all"):
        prepare(ctx, chosen)
    if args.step in ("run", "all"):
        run(ctx, chosen, args.equisa_from, args.rerun, args.equisa_commit, args.follow)
    if args.step in ("report", "all"):
        manifest = write_manifest(ctx)
        chosen_ids = {f"{p}-{n}" for p, n in chosen}
        records = [json.loads(p.read_text()) for p in sorted((ctx.cache / "bugs").glob("*/bug.json"))
                   if p.parent.name in chosen_ids]
        if not ctx.results.exists():
            log("[report] nothing has been run yet")
            return 1
        data = build(ctx.results, records, chosen_ids)
        data["manifest_summary"] = manifest["per_project"]
        data["cache"] = str(ctx.cache)
        stem = args.out or REPO / "bench" / "results" / (f"realbugs_{time.strftime('%Y-%m-%d', time.gmtime())}" + ("_cold" if args.cold else "") + (f"_{args.variant}" if args.variant else ""))
        Path(f"{stem}.json").write_text(json.dumps(data, indent=1) + "\n")
        Path(f"{stem}.md").write_text(markdown(data))
        print(markdown(data))
        log(f"[report] written {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
