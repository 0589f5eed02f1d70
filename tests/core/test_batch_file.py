"""The repositories file's schema: defaults, resolution of folders, clear errors; and the summary."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from equisa_core.errors import RepositoriesFileError
from equisa_core.operations.batch import (
    RepositoryEntry,
    RepositoryResult,
    is_remote,
    parse_repositories,
    renamed_keys,
    summarize,
    with_model_overrides,
)

BASE = PurePosixPath("/srv/batch")


def test_defaults_merge_under_entries_and_folders_resolve_against_the_file():
    entries = parse_repositories({
        "defaults": {"llm": False, "budgets": {"max_inspections": 4, "max_seconds": 60}},
        "repositories": [
            "../examples/gradebook",
            {"name": "billing", "source": "git@git.example.com:acme/billing.git", "ref": "main",
             "python": "/opt/venv/bin/python", "tests": "tests/unit tests/api", "llm": True,
             "budgets": {"max_inspections": 9}},
        ],
    }, BASE)
    first, second = entries
    assert first.source == "/srv/batch/../examples/gradebook" and first.label == "gradebook"
    assert first.llm is False and first.budgets.max_inspections == 4 and first.budgets.max_seconds == 60
    assert second.source == "git@git.example.com:acme/billing.git" and second.ref == "main"
    assert second.llm is True and second.tests == ("tests/unit", "tests/api")
    assert second.budgets.max_inspections == 9 and second.budgets.max_seconds == 60  # merged key by key


def test_a_bare_list_is_a_repositories_file():
    (entry,) = parse_repositories([{"source": "https://git.example.com/acme/shop.git"}], BASE)
    assert entry.label == "shop" and is_remote(entry.source) and entry.budgets.max_validations == 12


@pytest.mark.parametrize(("data", "message"), [
    (None, "is empty"),
    ("just text", "must be a mapping"),
    ({"repositories": []}, "repositories: List should have at least 1 item"),
    ({"repositories": [{"source": "a", "budget": {}}]}, "repositories[0].budget: unknown key"),
    ({"repositories": [{"source": "a", "budgets": {"max_inspections": -1}}]},
     "repositories[0].budgets.max_inspections: Input should be greater than or equal to 0"),
    ({"repositories": [{"source": "a", "sandbox": "vm"}]}, "repositories[0].sandbox: Input should be"),
    ({"repositories": [{"ref": "main"}]}, "repositories[0].source: Field required"),
    ({"repositories": [{"source": "x/app"}, {"source": "y/app"}]}, "are both named 'app'"),
    ({"repos": [{"source": "a"}]}, "repos: unknown key"),
])
def test_bad_files_are_refused_naming_the_entry_and_key(data, message):
    with pytest.raises(RepositoriesFileError) as caught:
        parse_repositories(data, BASE, origin="repositories file r.yaml")
    assert message in caught.value.message and caught.value.exit_code == 50
    assert caught.value.message.startswith("repositories file r.yaml")


def test_event_values_rendered_empty_mean_not_given():
    entry = RepositoryEntry(source="/srv/app", ref="", ci_run_url="  ", failing_tests="a::t1, b::t2")
    assert entry.ref is None and entry.ci_run_url is None and entry.failing_tests == ("a::t1", "b::t2")


def test_remote_sources():
    assert is_remote("https://github.com/a/b.git") and is_remote("file:///srv/git/b")
    assert is_remote("git@github.com:a/b.git")
    assert not is_remote("/srv/app") and not is_remote("../app") and not is_remote("C-drive/app")


def test_summary_counts_every_status_in_file_order():
    results = [RepositoryResult(name=n, source=n, status=s) for n, s in
               [("a", "fixed"), ("b", "error"), ("c", "fixed"), ("d", "nothing_to_fix")]]
    summary = summarize(results, 12.5, "/tmp/reports")
    assert summary.counts == {"fixed": 2, "plausible_only": 0, "not_fixed": 0, "nothing_to_fix": 1,
                              "error": 1}
    assert [row["repository"] for row in summary.table_rows()] == ["a", "b", "c", "d"]


def test_old_budget_keys_still_work_and_are_named_with_their_replacement():
    data = {"defaults": {"budgets": {"max_iterations": 4, "max_inspections": 6}},
            "repositories": [{"source": "a", "budgets": {"wall_clock_s": 90}},
                             {"source": "b", "budgets": {"max_iterations": 2}}]}
    first, second = parse_repositories(data, PurePosixPath("/srv"))
    assert (first.budgets.max_inspections, first.budgets.shard_timeout_s) == (6, 90)  # the new key wins
    assert second.budgets.max_inspections == 2  # the entry's own key wins over the defaults'
    assert renamed_keys(data) == [
        "defaults.budgets.max_iterations is deprecated and will be removed in the next release: "
        "use max_inspections",
        "repositories[0].budgets.wall_clock_s is deprecated and will be removed in the next release: "
        "use shard_timeout_s",
        "repositories[1].budgets.max_iterations is deprecated and will be removed in the next release: "
        "use max_inspections"]
    assert renamed_keys({"repositories": [{"source": "a", "budgets": {"max_inspections": 1}}]}) == []


def test_the_cost_cap_and_prices_of_an_entry_and_of_the_whole_batch():
    data = {"repositories": [{"source": "a", "price_input": 0.5, "price_output": 1.5,
                              "budgets": {"max_cost_usd": "none"}},
                             {"source": "b", "budgets": {"max_cost_usd": None}}]}  # an empty template value
    first, second = parse_repositories(data, PurePosixPath("/srv"))
    assert (first.budgets.max_cost_usd, first.price_input, first.price_output) == ("none", 0.5, 1.5)
    assert second.budgets.max_cost_usd == 2.0 and second.price_input is None  # the defaults
    assert with_model_overrides([first, second], None, None, None) == [first, second]
    capped = with_model_overrides([first, second], 0.25, 2.0, None)
    assert [e.budgets.max_cost_usd for e in capped] == [0.25, 0.25]
    assert [(e.price_input, e.price_output) for e in capped] == [(2.0, 1.5), (2.0, None)]
    with pytest.raises(RepositoriesFileError, match="max_cost_usd"):
        parse_repositories({"repositories": [{"source": "a", "budgets": {"max_cost_usd": "lots"}}]},
                           PurePosixPath("/srv"))
