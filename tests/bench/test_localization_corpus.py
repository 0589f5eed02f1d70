"""The fault-localization corpus: its data files follow the schema, and the rank maths is right.

Nothing here downloads: whether each snippet occurs exactly once in its package is checked by the
benchmark itself (``bench/localization_corpus.py --validate-only``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import localization_corpus as lc  # noqa: E402


@pytest.fixture(scope="module")
def corpus() -> list[lc.Package]:
    return lc.load_corpus()


# -------------------------------------------------------------------------------------------------
# The corpus files


def test_corpus_is_as_large_as_the_issue_asks(corpus):
    assert lc.corpus_size_problems(corpus) == []
    assert sum(len(p.bugs) for p in corpus) >= 30
    assert len(corpus) >= 3
    assert all(len(p.bugs) >= 8 for p in corpus)


def test_bug_ids_are_unique_and_prefixed_by_their_package(corpus):
    ids = [b.id for p in corpus for b in p.bugs]
    assert len(ids) == len(set(ids))
    for package in corpus:
        assert all(b.id.startswith(package.name + "-") for b in package.bugs)


def test_packages_are_pinned(corpus):
    for package in corpus:
        assert package.sdist.startswith(package.folder)
        assert package.version in package.sdist
        assert len(package.sha256) == 64
        assert package.tests
        for requirement in package.requirements:
            assert "==" in requirement, f"{package.name}: {requirement} is not pinned"


def test_ground_truths_look_like_fqns_of_their_files(corpus):
    for package in corpus:
        for bug in package.bugs:
            assert lc.bug_problems(bug, package.src) == []
            assert bug.function.startswith(lc.module_of(bug.file) + ".")
            assert all(part.isidentifier() for part in bug.qualname.split(".") if part != "<locals>")
            assert bug.kind in lc.KINDS


def test_the_corpus_mixes_kinds_of_bugs(corpus):
    kinds = {b.kind for p in corpus for b in p.bugs}
    assert len(kinds) >= 8


def test_a_bad_bug_is_rejected_with_its_reason():
    good = {"package": "demo", "version": "1.0", "sdist": "demo-1.0.tar.gz", "sha256": "0" * 64,
            "src": "demo", "tests": ["tests"],
            "bugs": [{"id": "demo-01", "kind": "off-by-one", "file": "demo/core.py",
                      "function": "demo.core.Thing.run", "original": "a + 1", "replacement": "a"}]}
    package = lc.parse_package(good, "demo.yaml")
    assert package.bugs[0].qualname == "Thing.run"
    for change, message in [
        ({"kind": "typo"}, "kind"),
        ({"function": "other.core.run"}, "does not start with its module"),
        ({"function": "demo.core.Thing..run"}, "module.Class.method"),
        ({"file": "elsewhere/core.py", "function": "elsewhere.core.run"}, "not under the package's src"),
        ({"replacement": "a + 1"}, "equals original"),
        ({"id": "Demo 1"}, "id"),
    ]:
        bad = {**good, "bugs": [{**good["bugs"][0], **change}]}
        with pytest.raises(lc.CorpusError, match=message):
            lc.parse_package(bad, "demo.yaml")
    with pytest.raises(lc.CorpusError, match="unknown keys"):
        lc.parse_package({**good, "extra": 1}, "demo.yaml")
    with pytest.raises(lc.CorpusError, match="missing keys"):
        lc.parse_package({k: v for k, v in good.items() if k != "sha256"}, "demo.yaml")


def test_module_of():
    assert lc.module_of("pkg/sub/mod.py") == "pkg.sub.mod"
    assert lc.module_of("pkg/__init__.py") == "pkg"


# -------------------------------------------------------------------------------------------------
# Ranks, EXAM, summary


def test_rank_without_ties():
    scores = {"a": 0.9, "b": 0.5, "c": 0.1}
    assert [lc.pessimistic_rank(scores, f) for f in "abc"] == [1, 2, 3]


def test_ties_count_against_the_bug():
    scores = {"a": 0.9, "b": 0.9, "c": 0.9, "d": 0.2}
    assert lc.pessimistic_rank(scores, "a") == 3
    assert lc.pessimistic_rank(scores, "c") == 3
    assert lc.pessimistic_rank(scores, "d") == 4
    # Floats that differ only by rounding are one tie.
    assert lc.pessimistic_rank({"x": 0.1 + 0.2, "y": 0.3}, "y") == 2


def test_everyone_tied_is_last():
    scores = dict.fromkeys("abcde", 0.0)
    assert lc.pessimistic_rank(scores, "b") == 5
    assert lc.exam_score(5, 5) == 1.0


def test_missing_target():
    assert lc.pessimistic_rank({"a": 1.0}, "z") is None
    assert lc.exam_score(None, 10) == 1.0
    assert lc.exam_score(3, 0) == 1.0


def test_exam():
    assert lc.exam_score(1, 4) == 0.25
    assert lc.exam_score(2, 200) == 0.01


def test_summary_counts_top_n_and_walls():
    summary = lc.summarize([1, 2, 4, None, 7], [0.1, 0.2, 0.4, 1.0, 0.7], [1.0, 2.0, None, 3.0, 4.0])
    assert summary["cases"] == 5
    assert (summary["top1"], summary["top3"], summary["top5"]) == (1, 2, 3)
    assert summary["top1_pct"] == 20.0
    assert summary["missing"] == 1
    assert summary["mean_exam"] == pytest.approx(0.48)
    assert summary["wall_total_s"] == 10.0


def test_ratios_against_fauxpy():
    def case(fx_rank, eq_rank, fx_wall, eq_wall):
        return {"package": "demo", "results": {
            "fauxpy": {"rank": fx_rank, "ranked": 10, "exam": lc.exam_score(fx_rank, 10),
                       "wall_median_s": fx_wall},
            "tarantula": {"rank": eq_rank, "ranked": 10, "exam": lc.exam_score(eq_rank, 10),
                          "wall_median_s": eq_wall}}}

    cases = [case(1, 1, 10.0, 4.0), case(3, 1, 10.0, 4.0), case(2, 1, 10.0, 4.0),
             {"dropped": "no failing test"}]
    summary = lc.build_summary(cases, ["fauxpy", "tarantula"])
    assert summary["cases"] == 3
    versus = summary["configs"]["tarantula"]["vs_fauxpy"]
    assert versus["top1_ratio"] == 3.0
    assert versus["wall_ratio"] == 0.4
    assert versus["top1_pass"] and versus["faster_pass"]
    assert summary["by_package"]["demo"]["tarantula"]["top1"] == 3
    assert summary["by_package"]["demo"]["fauxpy"]["top3"] == 3
    # FauxPy with no Top-1 at all: the ratio is infinite when EQUISA has any.
    summary = lc.build_summary([case(2, 1, 1.0, 2.0)], ["fauxpy", "tarantula"])
    assert summary["configs"]["tarantula"]["vs_fauxpy"]["top1_ratio"] == "inf"
    assert not summary["configs"]["tarantula"]["vs_fauxpy"]["faster_pass"]


# -------------------------------------------------------------------------------------------------
# Sources: spans, injection, matching FauxPy's names


SOURCE = '''\
import functools


def helper(x):
    return x + 1


class Thing:
    @functools.lru_cache
    def run(self, a):
        if a > 1:
            return helper(a)
        return 0

    def other(self):
        def inner():
            return 1
        return inner()
'''


def test_function_spans():
    spans = lc.function_spans(SOURCE)
    assert set(spans) == {"helper", "Thing.run", "Thing.other", "Thing.other.<locals>.inner"}
    run = spans["Thing.run"]
    assert (run.def_line, run.end_line, run.decorator_lines, run.first_line) == (10, 13, (9,), 9)


def _bug(**kw) -> lc.Bug:
    base = {"id": "demo-01", "package": "demo", "kind": "wrong-comparison", "file": "demo/mod.py",
            "function": "demo.mod.Thing.run", "original": "if a > 1:", "replacement": "if a >= 1:"}
    return lc.Bug(**{**base, **kw})


def test_inject_inside_the_function():
    buggy, problem = lc.inject(SOURCE, _bug())
    assert problem is None
    assert "if a >= 1:" in buggy and "if a > 1:" not in buggy


def test_inject_refuses_ambiguous_missing_or_misplaced_snippets():
    assert "occurs 5 times" in lc.inject(SOURCE, _bug(original="return", replacement="yield"))[1]
    assert "occurs 0 times" in lc.inject(SOURCE, _bug(original="nothing here"))[1]
    assert "not inside Thing.run" in lc.inject(
        SOURCE, _bug(original="return x + 1", replacement="return x"))[1]
    assert "has no function" in lc.inject(SOURCE, _bug(function="demo.mod.Thing.gone"))[1]
    assert "does not parse" in lc.inject(SOURCE, _bug(replacement="if a >>> 1:"))[1]


def test_fauxpy_names_are_matched_by_file_name_and_def_line(tmp_path):
    root = tmp_path / "demo"
    report = tmp_path / "FauxPyReport_demo"
    report.mkdir()
    (report / "Scores_Ochiai.csv").write_text(
        "Entity,Score\n"
        f"{root}/demo/mod.py::run::10::13,0.7071067811865475\n"
        f"{root}/demo/mod.py::helper::4::5,0.7071067811865475\n"
        f"{root}/demo/other.py::run::3::4,0.1\n"
    )
    scores = lc.fauxpy_scores(report, root)
    assert scores == {"demo/mod.py::run::10": 0.7071067811865475,
                      "demo/mod.py::helper::4": 0.7071067811865475, "demo/other.py::run::3": 0.1}
    span = lc.function_spans(SOURCE)["Thing.run"]
    target = lc.fauxpy_target(_bug(), span, scores)
    assert target == "demo/mod.py::run::10"
    assert lc.pessimistic_rank(scores, target) == 2  # tied with helper


def test_equisa_reports_are_read_by_fqn():
    trace = {"nodes": [{"fqn": "demo.mod.Thing.run", "tarantula": 1.0},
                       {"fqn": "demo.mod.helper", "tarantula": 0.5}]}
    localize = {"ranking": [{"fqn": "demo.mod.helper", "confidence": 0.6, "suspiciousness": 0.5},
                            {"fqn": "demo.mod.Thing.run", "confidence": 0.4, "suspiciousness": 1.0}]}
    assert lc.pessimistic_rank(lc.equisa_trace_scores(trace), "demo.mod.Thing.run") == 1
    assert lc.pessimistic_rank(lc.equisa_localize_scores(localize), "demo.mod.Thing.run") == 2


def test_select_subsets(corpus):
    first = corpus[0]
    quick = lc.select(corpus, None, None, quick=True)
    assert [len(p.bugs) for p in quick] == [1] * len(corpus)
    only = lc.select(corpus, first.name, None, quick=False)
    assert [p.name for p in only] == [first.name]
    one = lc.select(corpus, None, first.bugs[1].id, quick=False)
    assert [b.id for p in one for b in p.bugs] == [first.bugs[1].id]
    with pytest.raises(SystemExit):
        lc.select(corpus, "no-such-package", None, quick=False)
