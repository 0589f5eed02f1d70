"""``equisa testgen --no-llm`` with two attempts (issue 49 item 2): the second round's search takes
the mutants the first round's tests left alive, keeps the inputs (a function) and method sequences
(a class) on which one of them does otherwise than the original, and their tests kill it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import FIXTURES
from tests.flows.test_testgen_cli import EQUISA

UNTYPED = FIXTURES / "untyped_intervals"
CACHE = FIXTURES / "small_cache"


def two_rounds(repo: Path, target: str, tmp_path: Path, cli_env: dict[str, str]) -> tuple[dict, dict]:
    """The report's two attempts of ``equisa testgen`` on ``repo`` (mutation target 100, so the
    second round runs)."""
    out, report = tmp_path / "out", tmp_path / "report.json"
    done = subprocess.run([EQUISA, "testgen", str(repo), "--target", target, "--no-llm",
                           "--out", str(out), "--json", str(report), "--max-attempts", "2",
                           "--mutation-target", "100"],
                          capture_output=True, text=True, env=cli_env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = json.loads(report.read_text())["attempts"]
    return first, second


def test_a_second_round_searches_for_inputs_that_tell_the_survivors_apart_and_kills_them(tmp_path, cli_env):
    """Round 0's tests leave boundary mutants of ``merge`` alive (``<=`` -> ``<`` in the overlap
    test); round 1's search compares every surviving mutant with the original on each input it draws,
    keeps the inputs that tell one apart, and their tests kill it."""
    first, second = two_rounds(UNTYPED, "intervals.py", tmp_path, cli_env)
    boundary = "intervals.merge line 8: `<=` -> `<`"
    assert boundary in first["surviving_mutants"], first["surviving_mutants"]
    assert boundary not in second["surviving_mutants"], second["surviving_mutants"]
    told = [n for n in second["deterministic"] if n.startswith("compared ")]
    assert told and " told apart" in told[0] and not told[0].startswith("compared 0 "), told
    scores = first["mutation_score"], second["mutation_score"]
    assert scores[1] > scores[0] + 10, scores


def test_a_method_sequence_made_again_with_a_survivor_swapped_in_kills_it(tmp_path, cli_env):
    """Round 0's tests leave ``put``'s eviction of the newest entry (``pop(0)`` -> ``pop(-1)``) alive:
    only a sequence that fills the cache and puts once more shows it. Round 1 makes every drawn
    sequence again with each surviving mutant swapped into the class, and the sequences whose
    results or state left differ become tests that kill it."""
    first, second = two_rounds(CACHE, "cache.py", tmp_path, cli_env)
    evicts_newest = "cache.Cache.put line 24: `0` -> `-1`"
    assert evicts_newest in first["surviving_mutants"], first["surviving_mutants"]
    assert evicts_newest not in second["surviving_mutants"], second["surviving_mutants"]
    told = [n for n in second["deterministic"] if n.startswith("made every sequence again")]
    assert told and " 0 told apart" not in told[0], second["deterministic"]
    scores = first["mutation_score"], second["mutation_score"]
    assert scores[1] > scores[0], scores
