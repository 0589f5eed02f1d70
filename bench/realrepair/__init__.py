"""Real-bug repair: ``equisa repair --no-llm`` on real bugs, half of their tests hidden (issue 19).

Run from the repository root::

    uv run python -m bench.realrepair all --versions BASE,HEAD

Steps (``all`` runs the three in order):

``prepare``
    The bugs, cached in ``~/.cache/equisa-bench/realrepair`` (``$EQUISA_BENCH_CACHE/realrepair``):
    a seeded sample of Refactory's wrong student programs (``refactory.py``; the data set is
    LGPL-3.0 and read at run time only, never copied here), each a tiny repository, kept if it
    defines the called functions and fails some case under the judge (pytest, a 2 s alarm per
    test, in bubblewrap); and the single-function bugs of ``bench.realbugs`` (``bugsinpy_single.py``,
    its six allowed projects only). Each bug's tests are split in two halves (``split.py``); a
    plain pytest run checks that the visible half collects and fails as the split says.
``run``
    ``equisa repair COPY --no-llm --python VENV --json O --diff O --tests VISIBLE...`` for every
    version (a frozen ``git archive`` of ``equisa_core``, ``tasks`` and ``flows`` at each commit),
    without ``--test-timeout``, killed at ``--timeout``; one bug at a time, the versions' order
    alternating. Then the judge (``judge.py``) applies the diff to a copy holding every test, and,
    for Refactory, compares the changed functions with the question's reference on inputs of its
    own (``reference_check.py``).
``rejudge``
    The reference check on the kept records of ``--versions`` (no repair run), written back.
``report``
    The precision and recall of ``fixed`` and ``plausible_only`` per version, source, project and
    Refactory question (Wilson intervals), the runs that spent their time budget; outcomes (correct,
    overfit, not fixed, error), median wall times, Refactory's distance strata;
    ``bench/results/realrepair_<date>.{json,md}``.

Every judged run keeps its record, EQUISA's report and its diff in ``<cache>/results/<bug>/``;
``judged_patches(cache, versions)`` (``patches.py``) reads them back for a later fit.
"""

from bench.realbugs import ALLOWED_PROJECTS

SOURCES = ("refactory", "bugsinpy")

from .patches import JudgedPatch, judged_patches  # noqa: E402  (what a later fit reads: patches.py)

__all__ = ["ALLOWED_PROJECTS", "SOURCES", "JudgedPatch", "judged_patches"]
