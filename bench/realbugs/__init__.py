"""Real-bug fault localization: EQUISA against FauxPy on verified BugsInPy bugs.

Run from the repository root::

    uv run python -m bench.realbugs all --projects black,fastapi,luigi,sanic,scrapy,tornado

Steps (each its own sub-command, ``all`` runs the three in order):

``prepare``
    For every selected bug: the buggy checkout with the fixed commit's test files (as
    ``bugsinpy-checkout -v 0``), a venv built with ``uv`` from the bug's requirement dump (curated
    by ``bench/realbugs_curation.toml``; pytest and ``fauxpy==0.7`` added), and the verification:
    the bug's failing tests (``run_test.sh`` translated to pytest node ids) must fail on the buggy
    copy and pass once ``bug_patch.txt`` is applied. The ground truth is the set of functions the
    fix touches (``truth.py``). Everything goes to the cache (``~/.cache/equisa-bench/realbugs``,
    ``$EQUISA_BENCH_CACHE``); a summary is written to ``bench/results/realbugs_manifest.json``.
``run``
    For every verified bug, on fresh copies: ``equisa localize --no-llm`` and FauxPy (SBFL,
    Ochiai, function granularity), on the same test files, one bug at a time, alternating which
    tool goes first; raw outputs are kept per bug in ``<cache>/results/<project>-<bug>/``. With
    ``--fauxpy-statement``, FauxPy also as its study ran it (``peer.py``: statement granularity,
    ``--failing-list``, the study's test files, each function scored by its best statement).
``report``
    Ranks of the fix's functions in each tool's ranking, Top-1/3/5, EXAM, wall times, per project
    and in total; ``bench/results/realbugs_<date>.json`` and ``.md``. Replays from the raw outputs
    only (no test is run).

Only the projects in ``ALLOWED_PROJECTS`` are ever read from BugsInPy; any other name is refused.
"""

ALLOWED_PROJECTS = ("black", "fastapi", "luigi", "sanic", "scrapy", "tornado")
