"""Retrieval for the patcher: queries, grep and its skip rules, AST expansion, file ranges, merging, caps."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from equisa_core.repair.retrieval import (
    GrepHit,
    Priority,
    RetrievalLimits,
    RetrievalQuery,
    is_skipped,
    is_whole_word,
    iter_python_files,
    number_lines,
    parse_queries,
    python_grep,
    resolve_repo_path,
    retrieve,
)

PRICING = '''"""Prices."""
import functools

PRICES = {"apple": 2, "pear": 3}


@functools.cache
def unit_price(name):
    return PRICES[name] - 1
'''

CART = '''"""Shopping cart."""

from shop.pricing import unit_price


class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, quantity):
        self.items.append((name, quantity))

    def total(self):
        return sum(unit_price(n) * q for n, q in self.items)


def subtotal(cart):
    return cart.total()
'''

TEST_CART = '''from shop.cart import Cart


def test_total():
    cart = Cart()
    cart.add("apple", 2)
    assert cart.total() == 4
'''


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write(tmp_path / "repo", {
        "shop/__init__.py": "",
        "shop/pricing.py": PRICING,
        "shop/cart.py": CART,
        "tests/test_cart.py": TEST_CART,
    })


def grep(text: str) -> RetrievalQuery:
    return RetrievalQuery(kind="grep", text=text)


def file(spec: str) -> RetrievalQuery:
    [query] = parse_queries(f"<file>{spec}</file>")
    return query


def summary(result) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(s.header, s.priority.name, s.origins) for s in result.snippets]


# --- queries -------------------------------------------------------------------------------------


def test_queries_are_read_in_order_with_ranges_and_without_duplicates():
    answer = """The total is wrong. Plan: read the pricing.
<grep>unit_price</grep> and <GREP> `Cart.total` </GREP>
<file>shop/pricing.py:3-9</file> <file>./shop/cart.py:14</file> <file>shop/cart.py</file>
<grep>unit_price</grep>"""
    assert parse_queries(answer) == [
        RetrievalQuery(kind="grep", text="unit_price"),
        RetrievalQuery(kind="grep", text="Cart.total"),
        RetrievalQuery(kind="file", text="shop/pricing.py:3-9", path="shop/pricing.py", start=3, end=9),
        RetrievalQuery(kind="file", text="./shop/cart.py:14", path="./shop/cart.py", start=14, end=14),
        RetrievalQuery(kind="file", text="shop/cart.py", path="shop/cart.py"),
    ]
    assert parse_queries(answer)[0].label == "<grep>unit_price</grep>"


def test_tags_inside_think_and_patches_blocks_are_not_queries():
    answer = ("<think>maybe <grep>secret</grep></think>Let me fix it.\n<patches><patch><original_code>\n"
              "x = '<grep>not a query</grep>'\n</original_code></patch></patches>")
    assert parse_queries(answer) == []
    assert parse_queries("no tags at all") == []


def test_number_lines_uses_the_patch_format_prefix():
    assert number_lines("def f():\n    return 1\n", 11) == "11:def f():\n12:    return 1\n"


def test_whole_word_matching():
    assert is_whole_word("x = add(1, 2)", "add")
    assert not is_whole_word("address = 1", "add")
    assert is_whole_word("address = add", "add")  # the second occurrence is whole
    assert not is_whole_word("def subtotal(cart):", "total")
    assert is_whole_word("return cart.total()", "cart.total")
    assert is_whole_word("x = a - b", " - ")  # no word characters at the ends: nothing to check
    assert not is_whole_word("self.items_count", "self.items")


# --- paths ---------------------------------------------------------------------------------------


def test_repo_paths_are_normalised_and_confined(repo, tmp_path):
    assert resolve_repo_path(repo, "./shop/cart.py") == ("shop/cart.py", repo.resolve() / "shop" / "cart.py")
    assert resolve_repo_path(repo, "shop\\cart.py")[0] == "shop/cart.py"
    for bad, reason in [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("../outside.py", "leaves the repository"),
        ("shop/../../outside.py", "leaves the repository"),
        (".git/config", "not part of the sources"),
        ("tests/equisa_generated/test_x.py", "not part of the sources"),
    ]:
        with pytest.raises(ValueError, match=reason):
            resolve_repo_path(repo, bad)
    (tmp_path / "outside.py").write_text("secret = 1\n")
    (repo / "escape.py").symlink_to(tmp_path / "outside.py")
    with pytest.raises(ValueError, match="symbolic link"):
        resolve_repo_path(repo, "escape.py")


def test_skipped_directories():
    assert is_skipped(".git/HEAD") and is_skipped("a/.venv/lib/x.py") and is_skipped("pkg/__pycache__/m.py")
    assert is_skipped("tests/equisa_generated/test_a.py") and is_skipped("tests/equisa_generated")
    assert not is_skipped("src/tests/equisa_generated_notes.py") and not is_skipped("venv.py")
    assert not is_skipped("a/tests/equisa_generated/test_a.py")  # only the workspace's own folder


# --- grep ----------------------------------------------------------------------------------------


def test_grep_walks_sorted_depth_first_and_skips_what_is_not_source(tmp_path):
    root = write(tmp_path, {
        "b.py": "needle = 1\n",
        "a/z.py": "x = 1\nneedle\n",
        "a.py": "# needle in a.py\n",
        ".github/scripts/ci.py": "needle()\n",  # hidden folders are searched
        "notes.txt": "needle\n",  # not .py
        ".git/hooks/x.py": "needle\n",
        ".venv/lib/site.py": "needle\n",
        "venv/x.py": "needle\n",
        "pkg/__pycache__/m.py": "needle\n",
        "lib/site-packages/dep.py": "needle\n",
        "node_modules/x.py": "needle\n",
        "tests/equisa_generated/test_gen.py": "needle\n",
        "binary.py": b"needle\x00\n",
        "big.py": "needle\n" + "#" * (1024 * 1024) + "\n",
        "crlf.py": b"first\r\nthe needle\r\n",
        "latin1.py": b"caf\xe9 = 'needle'\n",
    })
    (root / "link.py").symlink_to(root / "b.py")
    (root / "linkdir").symlink_to(root / "a", target_is_directory=True)
    hits = python_grep(root, "needle", 100)
    assert hits == [
        GrepHit(path=".github/scripts/ci.py", line=1, text="needle()"),
        GrepHit(path="a/z.py", line=2, text="needle"),
        GrepHit(path="a.py", line=1, text="# needle in a.py"),
        GrepHit(path="b.py", line=1, text="needle = 1"),
        GrepHit(path="crlf.py", line=2, text="the needle"),
        GrepHit(path="latin1.py", line=1, text="caf\ufffd = 'needle'"),
    ]
    assert [r for r, _ in iter_python_files(root)][:3] == [".github/scripts/ci.py", "a/z.py", "a.py"]
    assert python_grep(root, "needle", 2) == hits[:2]
    assert python_grep(root, "Needle", 100) == []  # case-sensitive
    assert python_grep(root, "", 100) == []


def test_a_file_of_exactly_one_mebibyte_is_searched(tmp_path):
    write(tmp_path, {"edge.py": "needle\n" + "#" * (1024 * 1024 - 8) + "\n"})
    assert (tmp_path / "edge.py").stat().st_size == 1024 * 1024
    assert [h.line for h in python_grep(tmp_path, "needle", 5)] == [1]


# --- grep with AST expansion ---------------------------------------------------------------------


def test_a_name_finds_its_definition_first_and_the_code_around_each_use(repo):
    # windows of 2 lines around each hit, widened to the enclosing def, blank edges dropped
    result = retrieve(repo, [grep("unit_price")])
    assert summary(result) == [
        ("shop/pricing.py:7-9", "HIGH", (
            "grep 'unit_price'", "enclosing def shop.pricing.unit_price", "def shop.pricing.unit_price")),
        ("shop/cart.py:13-14", "HIGH", ("grep 'unit_price'", "enclosing def shop.cart.Cart.total")),
        ("shop/cart.py:1-3", "HIGH", ("grep 'unit_price'",)),
    ]
    pricing = result.snippets[0]
    assert pricing.text == "@functools.cache\ndef unit_price(name):\n    return PRICES[name] - 1\n"
    assert pricing.numbered().splitlines()[-2:] == [
        "8:def unit_price(name):", "9:    return PRICES[name] - 1"]
    assert result.failures == () and result.notes == () and result.omitted == ()


def test_a_partial_match_is_medium(repo):
    result = retrieve(repo, [grep("price")])  # only inside unit_price
    assert {s.priority for s in result.snippets} == {Priority.MEDIUM}
    assert [s.header for s in result.snippets] == [
        "shop/cart.py:13-14", "shop/pricing.py:7-9", "shop/cart.py:1-3"]


def test_a_dotted_name_finds_the_qualified_definition(repo):
    assert summary(retrieve(repo, [grep("Cart.total")])) == [
        ("shop/cart.py:13-14", "HIGH", ("def shop.cart.Cart.total",)),
    ]
    assert summary(retrieve(repo, [grep("shop.pricing.unit_price")])) == [
        ("shop/pricing.py:7-9", "HIGH", ("def shop.pricing.unit_price",)),
    ]
    # A qualifier that matches nothing still shows the definitions of the last name, as MEDIUM.
    assert summary(retrieve(repo, [grep("Basket.total")])) == [
        ("shop/cart.py:13-14", "MEDIUM", ("def shop.cart.Cart.total",)),
    ]


def test_a_code_snippet_query_and_its_enclosing_class_body(repo):
    result = retrieve(repo, [grep("self.items = []")])
    assert summary(result) == [
        ("shop/cart.py:6-10", "HIGH", ("grep 'self.items = []'", "enclosing def shop.cart.Cart.__init__")),
    ]


def test_a_large_enclosing_definition_is_not_expanded(repo):
    limits = RetrievalLimits(max_snippet_lines=2, context_lines=0)
    result = retrieve(repo, [grep("self.items.append")], limits=limits)
    # add() spans lines 10-11 (fits); with a one-line limit only the hit itself is shown
    assert summary(result) == [
        ("shop/cart.py:10-11", "HIGH", ("enclosing def shop.cart.Cart.add", "grep 'self.items.append'")),
    ]
    tight = retrieve(repo, [grep("self.items.append")], limits=RetrievalLimits(max_snippet_lines=1,
                                                                                 context_lines=0))
    assert summary(tight) == [("shop/cart.py:11-11", "HIGH", ("grep 'self.items.append'",))]


def test_a_grep_without_hits_fails_with_the_reason(repo):
    result = retrieve(repo, [grep("discount"), grep("two\nlines"), grep("")])
    assert result.snippets == ()
    assert [(f.query, f.reason) for f in result.failures] == [
        ("<grep>discount</grep>", "no line of a .py file contains 'discount'"),
        ("<grep>two\nlines</grep>", "a grep query is one line: a name or a one-line code snippet"),
        ("<grep></grep>", "the query is empty"),
    ]


def test_too_many_hits_are_capped_with_a_note(repo):
    result = retrieve(repo, [grep("self")], limits=RetrievalLimits(max_hits=2, context_lines=0,
                                                                   max_snippet_lines=1))
    assert [s.header for s in result.snippets] == ["shop/cart.py:7-8"]  # lines 7 and 8, adjacent: merged
    assert result.notes == ("<grep>self</grep> matched more than 2 lines; only the first 2 are shown: "
                            "use a more specific query",)


# --- file ranges ---------------------------------------------------------------------------------


def test_a_file_range_is_low_priority_and_exact(repo):
    result = retrieve(repo, [file("shop/pricing.py:7-9")])
    assert summary(result) == [("shop/pricing.py:7-9", "LOW", ("file shop/pricing.py:7-9",))]
    assert result.snippets[0].text == "@functools.cache\ndef unit_price(name):\n    return PRICES[name] - 1\n"
    assert summary(retrieve(repo, [file("shop/pricing.py:8-50")]))[0][0] == "shop/pricing.py:8-9"
    assert summary(retrieve(repo, [file("shop/pricing.py:4")]))[0][0] == "shop/pricing.py:4-4"
    assert summary(retrieve(repo, [file("shop/pricing.py")]))[0][0] == "shop/pricing.py:1-9"


def test_a_long_file_is_cut_with_a_note(repo):
    result = retrieve(repo, [file("shop/cart.py")], limits=RetrievalLimits(max_file_lines=5))
    assert summary(result) == [("shop/cart.py:1-5", "LOW", ("file shop/cart.py:1-5",))]
    assert result.notes == ("shop/cart.py has 18 lines; lines 1-5 are shown: ask for a range, e.g. "
                            "<file>shop/cart.py:6-10</file>",)


@pytest.mark.parametrize(("spec", "reason"), [
    ("shop/pricing.py:20-30", "shop/pricing.py has only 9 lines"),
    ("shop/pricing.py:9-7", "bad line range 9-7: write path:START-END with 1 <= START <= END"),
    ("shop/pricing.py:0-3", "bad line range 0-3: write path:START-END with 1 <= START <= END"),
    ("nope.py", "no file 'nope.py' in the repository"),
    ("shop/pricing.py:a-b", "no file 'shop/pricing.py:a-b' in the repository (a range is written "
                            "path:START-END)"),
    ("../secret.py", "'../secret.py' leaves the repository"),
    ("/etc/passwd", "'/etc/passwd' is absolute: give a path relative to the repository root"),
    (".git/config", "'.git/config' is inside a directory that is not part of the sources"),
    ("shop", "shop is a directory holding: __init__.py, cart.py, pricing.py"),
    (".", ". is a directory holding: shop/, tests/"),
    ("shop/__init__.py", "shop/__init__.py is empty"),
])
def test_file_queries_that_cannot_be_served(repo, spec, reason):
    result = retrieve(repo, [file(spec)])
    assert result.snippets == ()
    assert [(f.query, f.reason) for f in result.failures] == [(f"<file>{spec}</file>", reason)]


def test_only_one_file_query_per_answer_and_a_bounded_number_of_queries(repo):
    result = retrieve(repo, [file("shop/pricing.py:1-2"), file("shop/cart.py:1-2"), grep("Cart")],
                      limits=RetrievalLimits(max_queries=2))
    assert [s.header for s in result.snippets][-1] == "shop/pricing.py:1-2"
    assert [(f.query, f.reason) for f in result.failures] == [
        ("<file>shop/cart.py:1-2</file>", "not run: at most 1 file query per answer"),
    ]
    capped = retrieve(repo, [grep("Cart"), grep("unit_price"), grep("total")],
                      limits=RetrievalLimits(max_queries=2))
    assert [(f.query, f.reason) for f in capped.failures] == [
        ("<grep>total</grep>", "not run: at most 2 queries per answer"),
    ]


# --- merging, repeats, size ----------------------------------------------------------------------


def test_overlapping_snippets_from_different_strategies_are_merged(repo):
    result = retrieve(repo, [grep("unit_price"), file("shop/pricing.py:1-6")])
    pricing = [s for s in result.snippets if s.path == "shop/pricing.py"]
    assert [(s.header, s.priority.name) for s in pricing] == [("shop/pricing.py:1-9", "HIGH")]
    assert pricing[0].origins == (
        "file shop/pricing.py:1-6", "grep 'unit_price'", "enclosing def shop.pricing.unit_price",
        "def shop.pricing.unit_price",
    )


def test_snippets_already_shown_are_named_not_repeated(repo):
    result = retrieve(repo, [grep("unit_price")], already_shown=[("shop/pricing.py", 1, 9)])
    assert [s.header for s in result.snippets] == ["shop/cart.py:13-14", "shop/cart.py:1-3"]
    assert result.repeated == ("shop/pricing.py:7-9",)


def test_the_size_cap_keeps_the_best_snippets_and_names_the_rest(repo):
    full = retrieve(repo, [grep("unit_price")])
    sizes = [len(s.numbered()) + len(s.header) + sum(map(len, s.origins)) + 40 for s in full.snippets]
    result = retrieve(repo, [grep("unit_price")], limits=RetrievalLimits(max_chars=sizes[0] + sizes[2]))
    assert [s.header for s in result.snippets] == ["shop/pricing.py:7-9", "shop/cart.py:1-3"]
    assert result.omitted == ("shop/cart.py:13-14",)


# --- parallelism ---------------------------------------------------------------------------------


def test_queries_run_in_parallel_and_results_keep_query_order(repo):
    barrier = threading.Barrier(3, timeout=10)
    delays = {"Cart": 0.2, "subtotal": 0.0, "PRICES": 0.1}

    def search(root: Path, term: str, limit: int) -> list[GrepHit]:
        if term in delays:  # the three literal searches must all be running at once
            barrier.wait()
            time.sleep(delays[term])
        return python_grep(root, term, limit)

    parallel = retrieve(repo, [grep("Cart"), grep("subtotal"), grep("PRICES")], search=search)
    sequential = retrieve(repo, [grep("Cart"), grep("subtotal"), grep("PRICES")])
    assert parallel == sequential
    # class Cart (4-14 with its context) and subtotal (15-18) are adjacent: one snippet, blank edges cut
    assert parallel.snippets[0].header == "shop/cart.py:6-18"


def test_files_read_once_even_when_many_queries_touch_them(repo, monkeypatch):
    opened: list[str] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        opened.append(os.fspath(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    retrieve(repo, [grep("unit_price"), grep("Cart.total"), grep("total")], search=lambda r, t, n: [
        GrepHit(path="shop/cart.py", line=14, text="    def total(self):")] if "total" in t else [])
    assert opened.count(os.fspath(repo / "shop" / "cart.py")) == 1
