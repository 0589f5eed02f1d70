"""The shadow plugin (the package ``equisa_core/validation/shadow_plugin/``) on its own: pytest in a
subprocess of this interpreter on a folder written here, the plugin loaded as the sandbox loads it
(``PYTEST_PLUGINS``, its files as the host writes them: ``shadow_plugin_files``, the core's input
rules among them), its records written to ``EQUISA_SHADOW_OUT``. Static and class methods, a
call whose argument cannot be copied, and the tests' own outcomes left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from equisa_core.validation.divergence import ShadowLimits, ShadowOutput, read_shadow_output
from equisa_core.validation.shadow_files import shadow_plugin_files

MODULE = '''import threading


class Units:
    stamps = 0

    def stamp(self, weight):
        Units.stamps += 1
        self.stamped = Units.stamps
        return weight * 2

    @staticmethod
    def grams(kilos):
        return kilos * 1000

    @classmethod
    def named(cls, name):
        return cls.__name__ + ":" + name


def locked_size(lock, items):
    with lock:
        return len(items)
'''
TESTS = '''import threading

from units import Units, locked_size


def test_grams():
    assert Units.grams(2) == 2000


def test_stamp():
    assert Units().stamp(3) == 6


def test_named():
    assert Units.named("kg") == "Units:kg"


def test_locked_size():
    assert locked_size(threading.Lock(), [1, 2]) == 2


def test_fails_on_its_own():
    assert Units.grams(1) == 1
'''


def write_plugin(root: Path) -> None:
    """The plugin's package ``equisa_shadow`` in ``root``, as the host writes it into a run's copy."""
    for path, text in shadow_plugin_files("equisa_shadow").items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def _shadow(tmp_path: Path, qualname: str, edit: tuple[str, str], module: str = MODULE, tests: str = TESTS,
            passing: tuple[str, ...] = ("test_grams", "test_named", "test_locked_size", "test_stamp"),
            failing: tuple[str, ...] = ("test_fails_on_its_own",), config: dict | None = None,
            ) -> tuple[ShadowOutput, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "units.py").write_text(module)
    (tmp_path / "test_units.py").write_text(tests)
    write_plugin(tmp_path)
    config = {"file": "units.py", "qualname": qualname, "candidate": module.replace(*edit),
              "passing": [f"test_units.py::{t}" for t in passing],
              "failing": [f"test_units.py::{t}" for t in failing], **ShadowLimits().model_dump(),
              **(config or {})}
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = {**os.environ, "PYTEST_PLUGINS": "equisa_shadow", "EQUISA_SHADOW_CONFIG": "config.json",
           "EQUISA_SHADOW_OUT": str(tmp_path / "out.jsonl"), "PYTHONPATH": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return read_shadow_output((tmp_path / "out.jsonl").read_text().splitlines()), run.stdout


def test_a_static_method_is_compared_and_the_tests_keep_their_own_outcomes(tmp_path: Path):
    output, log = _shadow(tmp_path, "Units.grams", ("return kilos * 1000", "return kilos * 100"))
    assert "1 failed, 4 passed" in log, log
    report = output.report()
    # of grams(2)'s neighbours, grams(1) is the failing test's own call and grams(0) is next to it:
    # both are where the failure is; grams(3) is not
    assert (report.recorded_calls, report.changed_recorded, report.failing_calls) == (1, 1, 3)
    assert report.examples[0].startswith("Units.grams(2) returned 2000, now returns 200 (in ")
    assert report.changed_generated >= 1


def test_a_class_method_gets_its_class_and_an_unchanged_candidate_does_not_diverge(tmp_path: Path):
    output, _ = _shadow(tmp_path, "Units.named", ('return cls.__name__ + ":" + name',
                                                  'return "%s:%s" % (cls.__name__, name)'))
    report = output.report()
    assert report.recorded_calls == 1 and report.generated_calls >= 2, "the name shortened, emptied..."
    assert not report.diverges, report.examples


def test_a_call_whose_arguments_cannot_be_copied_is_uncomparable(tmp_path: Path):
    output, log = _shadow(tmp_path, "locked_size", ("return len(items)", "return len(items) + 1"))
    assert "1 failed, 4 passed" in log, log
    assert output.found and output.uncomparable == 1, "a lock cannot be deep-copied"
    assert output.report().recorded_calls == 0


def test_a_candidate_without_the_function_is_reported_not_found(tmp_path: Path):
    output, log = _shadow(tmp_path, "Units.grams", ("def grams(kilos):", "def kilograms(kilos):"))
    assert "1 failed, 4 passed" in log, log
    assert not output.found and output.why == "the candidate has no function Units.grams"


def test_an_original_that_differs_from_itself_is_not_held_against_the_candidate(tmp_path: Path):
    """stamp() leaves a counter's value in its receiver: the original and the candidate never leave
    the same one, nor do two runs of the original (the control), so the calls are not compared."""
    output, log = _shadow(tmp_path, "Units.stamp", ("return weight * 2", "return weight + weight"))
    assert "1 failed, 4 passed" in log, log
    report = output.report()
    assert report.recorded_calls == 0 and not report.diverges, report.examples
    assert output.uncomparable >= 1
    assert output.uncomparable_why == "the original's own outcome differs between two runs of the call"
    assert "set aside: the original's own outcome differs" in report.summary()


def test_a_change_beside_a_counter_is_uncomparable_not_unchanged(tmp_path: Path):
    """The limit of the control: it differs from both versions, so the call is set aside, never
    counted as a call that kept its behaviour."""
    output, _ = _shadow(tmp_path, "Units.stamp", ("return weight * 2", "return weight * 3"))
    report = output.report()
    assert output.uncomparable >= 1 and report.recorded_calls == 0 and report.generated_calls == 0


def test_the_failing_tests_calls_and_the_lines_they_ran_are_recorded_apart(tmp_path: Path):
    """No passing test calls ``magnitude``; three failing tests do, on three inputs, and the lines
    they run are recorded as the failing tests' (the evidence of their assertions, which the
    candidate passes), not as the passing tests'."""
    module = "def magnitude(x):\n    if x < 0:\n        return x\n    return x\n"
    tests = ("from units import magnitude\n\n\n"
             + "".join(f"def test_{n}():\n    assert magnitude(-{n}) == {n}\n\n\n" for n in (1, 2, 3)))
    fix = ("        return x\n    return", "        return -x\n    return")
    output, log = _shadow(tmp_path, "magnitude", fix, module=module, tests=tests, passing=(),
                          failing=("test_1", "test_2", "test_3"))
    assert "3 failed" in log, log
    report = output.report()
    assert report.recorded_calls == 0 and report.failing_inputs == 3
    assert report.executed_lines == () and set(report.failing_executed_lines) == {2, 3}
    assert report.oracle_coverage == 2 / 3, "line 4 is never run"


def test_an_index_moved_by_one_shows_on_a_call_with_one_item_moved(tmp_path: Path):
    """The spec is the last record of the day; the patch reads the record before the one found,
    which passes the failing test (the last record comes before the first) and changes nothing on
    the passing test's call, whose records hold the same month twice. A generated call with the
    first record's month moved (``"ay"``) shows the change, and it is held against the patch: its
    records' fields differ from the failing call's, so it is not of the failing call's class."""
    module = ("def month_of(day, records):\n    for i in range(len(records)):\n"
              "        if records[i][1] == day:\n            return records[i][0]\n    return None\n")
    tests = ("from units import month_of\n\n\n"
             "def test_found():\n    assert month_of('2', (('May', '1'), ('May', '2'))) == 'May'\n\n\n"
             "def test_last_one():\n    assert month_of('1', (('May', '1'), ('Jun', '1'))) == 'Jun'\n")
    output, log = _shadow(tmp_path, "month_of", ("return records[i][0]", "return records[i - 1][0]"),
                          module=module, tests=tests, passing=("test_found",), failing=("test_last_one",))
    assert "1 failed, 1 passed" in log, log
    report = output.report()
    assert report.recorded_calls == 1 and report.changed_recorded == 0 and report.failing_inputs == 1
    assert report.changed_generated >= 1, report
    assert any("tuple[tuple['ay', '1'], tuple['May', '2']]) returned 'May', now returns 'ay'" in e
               for e in report.examples), report.examples


URL_CONCAT = '''def url_concat(url, args):
    if isinstance(args, dict):
        pairs = list(args.items())
    elif isinstance(args, (list, tuple)):
        pairs = list(args)
    else:
        raise TypeError("'args' should be a dict, a list or a tuple, not %s" % type(args))
    return url + "?" + "&".join("%s=%s" % pair for pair in pairs) if pairs else url
'''
URL_TESTS = ("from units import url_concat\n\n\n"
             "def test_dict():\n    assert url_concat('u', {'a': 'b'}) == 'u?a=b'\n\n\n"
             "def test_list():\n    assert url_concat('u', [('a', 'b')]) == 'u?a=b'\n\n\n"
             "def test_none():\n    assert url_concat('u', None) == 'u'\n")


def _url_concat_shadow(tmp_path: Path, guard: str, on_purpose: list[str]) -> ShadowOutput:
    edit = ("    else:\n        raise", f"    else:\n        {guard}\n            return url\n        raise")
    return _shadow(tmp_path, "url_concat", edit, module=URL_CONCAT, tests=URL_TESTS,
                   passing=("test_dict", "test_list"), failing=("test_none",),
                   config={"on_purpose": on_purpose})[0]


def test_a_guard_that_lets_other_kinds_past_a_type_check_diverges_and_a_precise_one_does_not(tmp_path: Path):
    """``url_concat`` rejects what is no dict, list or tuple with a ``TypeError`` of its own; the
    failing test passes None. ``if not args: return url`` also lets ``""`` and ``0`` through, which
    the original rejects: a probe of another kind shows it. ``if args is None`` keeps rejecting them."""
    broad = _url_concat_shadow(tmp_path / "broad", "if not args:", ["TypeError"]).report()
    assert broad.changed_generated >= 1, broad
    assert any("url_concat('u', '') raised TypeError, now returns 'u'" in e for e in broad.examples), broad
    precise = _url_concat_shadow(tmp_path / "precise", "if args is None:", ["TypeError"]).report()
    assert precise.changed_generated == 0 and precise.changed_recorded == 0, precise
    assert precise.generated_calls > broad.generated_calls - broad.changed_generated - 1
    # Without the host's word that the function checks its inputs, no probe is made.
    blind = _url_concat_shadow(tmp_path / "blind", "if not args:", []).report()
    assert blind.changed_generated == 0, blind
