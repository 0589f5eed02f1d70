"""Did a change that should not change answers change any? ``equisa localize`` from two frozen
commits, one after the other, on the same real bugs of the real-bug benchmark (its prepared
checkouts and venvs), and their rankings compared function by function.

    uv run python bench/layout_ranks.py --before d96b147 --after HEAD --bugs black-3,scrapy-2

Used for issue 47 (the moves into ``cli/`` and ``tasks/`` packages, ``equisa_core/repair/``):
behaviour is unchanged when every bug's ranking (the functions, in order, with their
confidences rounded to 1e-6) is identical. Results: ``bench/results/layout_ranks_<date>.{json,md}``.
Only EQUISA runs (FauxPy is not needed to compare EQUISA with itself)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.realbugs.bugsinpy import DEFAULT_MIRRORS, Mirrors
from bench.realbugs.report import equisa_entries, rank_of
from bench.realbugs.steps import Context, equisa_command, fresh_copy, run_equisa

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = Path.home() / ".cache" / "equisa-bench" / "realbugs"


def ranking_of(report: Path) -> list[tuple[str, float]]:
    """``(function, confidence)`` in the report's order (empty when there is no report)."""
    if not report.exists():
        return []
    data = json.loads(report.read_text())
    return [(entry["fqn"], round(float(entry["confidence"]), 6)) for entry in data.get("ranking") or []]


def rank_in(report: Path, truth: dict) -> float | None:
    """The benchmark's rank of the bug (``bench/realbugs/report.rank_of``: ties count at their mean)."""
    if not report.exists():
        return None
    return rank_of(equisa_entries(json.loads(report.read_text())), truth["functions"])[0]


def compare(before: list[tuple[str, float]], after: list[tuple[str, float]]) -> dict:
    """Whether two rankings are identical, and where they first differ."""
    same = before == after
    first = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), None)
    if first is None and len(before) != len(after):
        first = min(len(before), len(after))
    return {"identical": same, "first_difference": first}


def table(rows: list[dict], commits: dict) -> str:
    """The Markdown summary of a comparison."""
    title = f"# Localization answers before and after ({commits['before'][:10]} → {commits['after'][:10]})"
    lines = [title, "",
             "| bug | rank before | rank after | functions ranked | identical ranking | exit before/after |",
             "|---|---:|---:|---:|---|---|"]
    for row in rows:
        same = "yes" if row["identical"] else f"no (from #{row['first_difference']})"
        lines.append(f"| {row['bug']} | {row['rank_before']} | {row['rank_after']} | {row['ranked']} | "
                     f"{same} | "
                     f"{row['exit_before']}/{row['exit_after']} |")
    identical = sum(r["identical"] for r in rows)
    lines += ["", f"{identical} of {len(rows)} rankings identical."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--after", default="HEAD", help="the commit after it (default HEAD)")
    parser.add_argument("--bugs", required=True, help="slugs of prepared bugs, e.g. black-3,scrapy-2")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--equisa-args", default="", help='options added to `equisa localize`, e.g. '
                        '"--screen-cost-ratio off" (the cost rule compares seconds, which vary with load)')
    default_out = REPO / "bench" / "results" / f"layout_ranks_{time.strftime('%Y-%m-%d')}"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    ctx = Context(cache=args.cache, mirrors=Mirrors(DEFAULT_MIRRORS, args.cache), variant="layout-ranks")
    commands = {side: equisa_command("head", ctx.cache, commit)
                for side, commit in (("before", args.before), ("after", args.after))}
    rows = []
    for slug in args.bugs.split(","):
        record = json.loads((ctx.bugs_dir / slug / "bug.json").read_text())
        row: dict = {"bug": slug, "truth": [f["fqn"] for f in record["truth"]["functions"]]}
        rankings = {}
        for side, command in commands.items():
            out = ctx.results / slug / side
            out.mkdir(parents=True, exist_ok=True)
            shared = ctx.results / "_equisa"
            work = ctx.cache / "work" / "layout"
            copy = fresh_copy(ctx.bugs_dir / slug / "buggy", work / record["project"])
            result = run_equisa(record, copy, out, command, shared, options=args.equisa_args.split())
            shutil.rmtree(work, ignore_errors=True)
            rankings[side] = ranking_of(out / "equisa_report.json")
            row[f"exit_{side}"] = result["returncode"]
            row[f"wall_{side}_s"] = result["wall_s"]
            row[f"rank_{side}"] = rank_in(out / "equisa_report.json", record["truth"])
            print(f"{slug} {side}: exit {result['returncode']}, rank {row[f'rank_{side}']}, "
                  f"{result['wall_s']:.1f} s", flush=True)
        row.update(compare(rankings["before"], rankings["after"]), ranked=len(rankings["after"]))
        rows.append(row)
    commits = {side: c.info["commit"] for side, c in commands.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"commits": commits, "bugs": rows}, indent=1))
    args.out.with_suffix(".md").write_text(table(rows, commits))
    print(table(rows, commits))
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
