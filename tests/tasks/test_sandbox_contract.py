"""The sandbox contract: cache keys, scrubbed environments, run folders and probe arguments."""

from __future__ import annotations

import json

import pytest

from equisa_core.errors import InvalidSelectionError
from tasks.sandbox.contract import (
    RunRequest,
    SandboxLimits,
    cap_text,
    import_roots,
    prepare_run_folder,
    probe_arguments,
    scrubbed_environment,
)
from tests.conftest import FIXTURES


def request(**changes) -> RunRequest:
    base = {"workspace": FIXTURES / "shapes", "workspace_digest": "abc", "interpreter": "/usr/bin/python3"}
    return RunRequest(**{**base, **changes})


def test_cache_key_changes_with_everything_the_result_depends_on():
    key = request().cache_key("local", "3.11.7")
    assert key == request().cache_key("local", "3.11.7")
    variants = [
        request(workspace_digest="abd").cache_key("local", "3.11.7"),
        request(overlay={"a.py": "x = 1\n"}).cache_key("local", "3.11.7"),
        request(tests=("tests/test_a.py",)).cache_key("local", "3.11.7"),
        request(only=("t",)).cache_key("local", "3.11.7"),
        request(shard=(0, 2)).cache_key("local", "3.11.7"),
        request(env={"X": "1"}).cache_key("local", "3.11.7"),
        request(trace=False).cache_key("local", "3.11.7"),
        request(rerun_failures=True).cache_key("local", "3.11.7"),
        request(limits=SandboxLimits(test_timeout_s=5)).cache_key("local", "3.11.7"),
        request(limits=SandboxLimits(per_test={"t": 3.0})).cache_key("local", "3.11.7"),
        request().cache_key("docker", "3.11.7"),
        request().cache_key("local", "3.12.1"),
    ]
    assert len({key, *variants}) == len(variants) + 1


def test_environment_is_scrubbed_and_pinned(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("SOME_RANDOM_HOST_VAR", "v")
    env = scrubbed_environment({"GITHUB_TOKEN": "t", "MY_SETTING": "ok", "DB_PASSWORD": "p"}, "/h", "/t")
    assert env["MY_SETTING"] == "ok"
    for name in ("OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "SOME_RANDOM_HOST_VAR", "GITHUB_TOKEN",
                 "DB_PASSWORD"):
        assert name not in env
    assert (env["PYTHONHASHSEED"], env["TZ"], env["HOME"], env["TMPDIR"]) == ("0", "UTC", "/h", "/t")
    # Another pinned seed may be asked for; anything but digits keeps the default.
    assert scrubbed_environment({"PYTHONHASHSEED": "3"}, "/h", "/t")["PYTHONHASHSEED"] == "3"
    assert scrubbed_environment({"PYTHONHASHSEED": "random"}, "/h", "/t")["PYTHONHASHSEED"] == "0"


def test_overlay_paths_must_stay_inside():
    for bad in ("/etc/passwd", "../x.py", "a/../../x.py"):
        with pytest.raises(InvalidSelectionError):
            request(overlay={bad: ""})


def test_run_folder_holds_copy_overlay_and_probe(tmp_path):
    overlay = {"shapes/geometry.py": "X = 1\n", "tests/new/test_n.py": "pass\n"}
    repo = prepare_run_folder(request(overlay=overlay, only=("t1", "t2")), tmp_path)
    assert (repo / "shapes" / "geometry.py").read_text() == "X = 1\n"
    assert (repo / "tests" / "new" / "test_n.py").exists()
    assert (repo / "tests" / "test_geometry.py").read_bytes() == (
        FIXTURES / "shapes" / "tests" / "test_geometry.py").read_bytes()
    assert (tmp_path / "probe" / "equisa_probe.py").exists()
    assert (tmp_path / "out" / "select.txt").read_text() == "t1\nt2\n"
    # The snapshot itself was not touched.
    assert "X = 1" not in (FIXTURES / "shapes" / "shapes" / "geometry.py").read_text()


def test_probe_arguments_carry_selection_shard_and_timeout():
    args = probe_arguments(request(only=("t",), shard=(1, 3), tests=("tests",), trace=False), "/r", "/o")
    assert "--equisa-select=/o/select.txt" in args
    assert "--equisa-shard=1/3" in args
    assert "--equisa-trace=0" in args
    assert "--equisa-test-timeout=30" in args  # --test-timeout auto: a test with no duration yet (first run)
    assert not any(a.startswith("--equisa-test-limits") for a in args)
    assert args[-1] == "tests"


def test_only_a_run_asked_to_re_run_its_failing_tests_tells_the_probe_so():
    assert "--equisa-rerun-failures=20" in probe_arguments(request(rerun_failures=True), "/r", "/o")
    assert not any(a.startswith("--equisa-rerun") for a in probe_arguments(request(), "/r", "/o"))
    assert request(rerun_failures=False).cache_key("local", "3") == request().cache_key("local", "3")


def test_each_tests_own_limit_goes_to_a_file_the_probe_reads_and_into_the_key(tmp_path):
    limits = SandboxLimits(test_timeout_s=10, per_test={"t1": 3.0, "t2": 5.0, "elsewhere": 60.0})
    focused = request(only=("t1", "t2"), limits=limits)
    assert "--equisa-test-limits=/o/test_limits.json" in probe_arguments(focused, "/r", "/o")
    prepare_run_folder(focused, tmp_path)
    assert json.loads((tmp_path / "out" / "test_limits.json").read_text()) == {"t1": 3.0, "t2": 5.0}
    # Only the limits of the tests a run keeps are part of its key.
    other = limits.model_copy(update={"per_test": {"t1": 3.0, "t2": 5.0, "elsewhere": 20.0}})
    key = focused.cache_key("local", "3")
    assert request(only=("t1", "t2"), limits=other).cache_key("local", "3") == key
    changed = limits.model_copy(update={"per_test": {"t1": 4.0, "t2": 5.0}})
    assert request(only=("t1", "t2"), limits=changed).cache_key("local", "3") != key


def test_cap_text_keeps_the_tail():
    assert cap_text(b"abc", 10) == "abc"
    capped = cap_text(b"a" * 100 + b"END", 10)
    assert capped.endswith("aaaaaaaEND") and capped.startswith("...[truncated]...")


def test_the_import_roots_put_a_src_layout_first_and_a_flat_one_needs_none(tmp_path):
    flat = tmp_path / "flat"
    (flat / "shop").mkdir(parents=True)
    (flat / "shop" / "__init__.py").write_text("")
    (flat / "src").mkdir()  # a src folder with no package in it is not a layout
    (flat / "src" / "notes.txt").write_text("")
    assert import_roots(flat) == []
    layout = tmp_path / "layout"
    (layout / "src" / "shop").mkdir(parents=True)
    (layout / "src" / "shop" / "__init__.py").write_text("")
    assert import_roots(layout) == ["src"]
    mapped = tmp_path / "mapped"
    (mapped / "lib").mkdir(parents=True)
    (mapped / "lib" / "shop.py").write_text("")
    (mapped / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"" = "lib"\n')
    assert import_roots(mapped) == ["lib"]
