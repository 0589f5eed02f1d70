"""Sandboxed test execution: fan-out over shards, Prefect's cache, and each sandbox's start-up cost.

Run from the repository root::

    uv run python bench/sandbox_execution.py [--repeats N] [--startup-repeats M] [--no-docker]
                                             [--out bench/results/sandbox_execution.json]

What it does (issue 3, "Done means", bench item):

1. writes two projects into a temporary folder: ``cpulib``, a CPU-bound suite of 100 pytest tests
   (10 kinds of pure-Python work — trial-division primes, Collatz chains, three sorts, edit
   distance, a knapsack, matrices, shortest paths, an expression parser, the game of life,
   checksums — each cross-checked against a second implementation, each test about 0.25 s; 2 tests
   fail on purpose, a run-length decoder bug) and ``tiny``, 2 trivial tests; both are
   snapshotted with ``tasks.run.workspace.snapshot``. The suites run on a fresh venv of this Python
   with EQUISA's pytest version, bytecode compiled at install (``--python`` to use another); the
   temporary folder is under ``/var/tmp`` because bwrap hides the host's ``/tmp``;
2. **fan-out**: times ``execute_request`` with the local sandbox, tracing on, for the whole suite
   in one sandbox (``1 shard``) against two sandboxes at once (``RunRequest(shard=(i, 2))`` in a
   ``ThreadPoolExecutor``, merged with ``combine``/``interleave`` as the flow does), alternating
   which goes first in each round; checks that the merged trace has every test exactly once,
   in the 1-shard order, with the same outcomes. Each round starts with a control without
   EQUISA (one CPU-bound process alone, then two at once) that shows what the machine itself
   gives two processes at that moment;
3. **cache**: starts a temporary Prefect server (``prefect_test_harness``, untimed) with
   ``PREFECT_HOME``, ``PREFECT_LOCAL_STORAGE_PATH`` and ``EQUISA_WORKSPACES`` in the temporary
   folder, warms Prefect up with one flow run on ``tiny``, then times the ``trace_suite`` flow
   call on ``cpulib``: ``no_cache=True`` (cold) then the same parameters with the cache
   (cached), alternately; checks that the cached run started no sandbox (a counter wrapped
   around ``LocalSandbox.run``) and that the server records its ``run-tests`` task runs as
   ``Cached``, and that both runs report the same outcomes;
4. **start-up**: times, on ``tiny``, a plain ``python -m pytest`` subprocess, the same with the
   probe, the plain run with EQUISA's own interpreter (for comparison), ``LocalSandbox.run`` at
   each isolation level that works here (bwrap, unshare, network-only, none:
   ``EQUISA_LOCAL_ISOLATION`` set and ``detect_isolation``'s cache cleared before each run,
   outside the timing) and
   ``DockerSandbox.run`` on a private ``dockerd`` started with the helpers of
   ``tests/integration/docker_fixtures.py`` (skipped, with the reason, when none can start, or
   with ``--no-docker``); interleaved, the starting configuration rotating each round, after one
   untimed warm-up round;
5. prints a table of medians and ratios with PASS/FAIL against the targets (2 shards >= 1.7x
   faster than 1 on 2 cores; a cached flow >= 10x faster than a cold one; a run under the
   util-linux fallback at most 1.2x one under bubblewrap, issue 23), and writes the
   environment, raw timings, checks and ratios as JSON to ``--out``.

It asserts nothing: the exit status is 0 unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(REPO))  # tasks, flows, equisa_core and tests.integration.docker_fixtures
from tracing_overhead import environment as tracing_environment  # noqa: E402  (shared helpers)
from tracing_overhead import finish_report, run_text  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "sandbox_execution.json"
PROBE_FILE = REPO / "equisa_core" / "probe" / "equisa_probe.py"
#: 2-shard speedup (median 1-shard wall / median 2-shard wall) at least this, on 2 cores.
TARGET_FANOUT = 1.7
#: Cold flow wall / cached flow wall (medians) at least this.
TARGET_CACHE = 10.0
#: The fan-out suite must take at least this long in one sandbox.
MIN_SERIAL_S = 20.0
ISOLATION_LEVELS = ("bwrap", "unshare", "network-only", "none")
#: Issue 23: the util-linux fallback's cost per sandboxed run, at most this times bubblewrap's.
TARGET_FALLBACK = 1.2
#: The machine's own 2-process scaling, without EQUISA: one edit distance of this size (about 1 s
#: of pure Python here) in one process, then in two processes at once.
CONTROL_SIZE = 2300
CONTROL_SCRIPT = (
    "import sys, time; sys.path.insert(0, sys.argv[1])\n"
    "from cpulib.dynprog import edit_distance\nfrom cpulib.rng import Lcg\n"
    "rng = Lcg(7); a, b = rng.text(int(sys.argv[2])), rng.text(int(sys.argv[2]))\n"
    "start = time.perf_counter(); edit_distance(a, b); print(time.perf_counter() - start)\n"
)

# -------------------------------------------------------------------------------------------------
# The suites

CPU_PACKAGE = "cpulib"
CPU_TESTS_PER_KIND = 10
#: Tests that fail on purpose (rle_decode reads one digit of a run's length).
CPU_EXPECTED_FAILURES = ["tests/test_codec.py::test_rle_roundtrip[long-runs-a]",
                         "tests/test_codec.py::test_rle_roundtrip[long-runs-b]"]

CPU_FILES = {
    "cpulib/__init__.py": '"""CPU-bound helpers for the sandbox benchmark."""\n',
    "cpulib/rng.py": '''
        """A small linear congruential generator, so data is the same on every Python."""


        class Lcg:
            def __init__(self, seed):
                self.state = (seed * 6364136223846793005 + 1442695040888963407) % 2**64

            def next(self):
                self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 2**64
                return self.state >> 33

            def randint(self, low, high):
                return low + self.next() % (high - low + 1)

            def ints(self, count, low, high):
                return [self.randint(low, high) for _ in range(count)]

            def text(self, length, alphabet="abcdefgh"):
                return "".join(alphabet[self.next() % len(alphabet)] for _ in range(length))

            def data(self, length):
                return bytes(self.next() & 0xFF for _ in range(length))
    ''',
    "cpulib/numbers.py": '''
        """Primes and Collatz chains."""


        def is_prime(n):
            if n < 2:
                return False
            if n % 2 == 0:
                return n == 2
            d = 3
            while d * d <= n:
                if n % d == 0:
                    return False
                d += 2
            return True


        def count_primes_trial(limit):
            return sum(1 for n in range(limit) if is_prime(n))


        def sieve(limit):
            flags = [True] * limit
            flags[0:2] = [False, False][:limit]
            i = 2
            while i * i < limit:
                if flags[i]:
                    for j in range(i * i, limit, i):
                        flags[j] = False
                i += 1
            return [n for n, flag in enumerate(flags) if flag]


        def collatz_length(n, memo):
            steps, path = 0, []
            while n != 1 and n not in memo:
                path.append(n)
                n = n // 2 if n % 2 == 0 else 3 * n + 1
            base = memo.get(n, 0)
            for offset, value in enumerate(reversed(path), 1):
                memo[value] = base + offset
            return base + len(path)


        def longest_collatz(start, stop):
            memo = {}
            best = max(range(start, stop), key=lambda n: collatz_length(n, memo))
            return best, collatz_length(best, memo)


        def collatz_plain(n):
            steps = 0
            while n != 1:
                n = n // 2 if n % 2 == 0 else 3 * n + 1
                steps += 1
            return steps
    ''',
    "cpulib/sorting.py": '''
        """Three sorts written out in Python."""


        def merge_sort(items):
            if len(items) <= 1:
                return list(items)
            middle = len(items) // 2
            left, right = merge_sort(items[:middle]), merge_sort(items[middle:])
            merged, i, j = [], 0, 0
            while i < len(left) and j < len(right):
                if left[i] <= right[j]:
                    merged.append(left[i])
                    i += 1
                else:
                    merged.append(right[j])
                    j += 1
            merged.extend(left[i:])
            merged.extend(right[j:])
            return merged


        def quick_sort(items):
            items = list(items)
            stack = [(0, len(items) - 1)]
            while stack:
                low, high = stack.pop()
                if low >= high:
                    continue
                pivot = items[(low + high) // 2]
                i, j = low, high
                while i <= j:
                    while items[i] < pivot:
                        i += 1
                    while items[j] > pivot:
                        j -= 1
                    if i <= j:
                        items[i], items[j] = items[j], items[i]
                        i, j = i + 1, j - 1
                stack.append((low, j))
                stack.append((i, high))
            return items


        def _sift_down(items, start, end):
            root = start
            while 2 * root + 1 <= end:
                child = 2 * root + 1
                if child + 1 <= end and items[child] < items[child + 1]:
                    child += 1
                if items[root] >= items[child]:
                    return
                items[root], items[child] = items[child], items[root]
                root = child


        def heap_sort(items):
            items = list(items)
            end = len(items) - 1
            for start in range((end - 1) // 2, -1, -1):
                _sift_down(items, start, end)
            while end > 0:
                items[0], items[end] = items[end], items[0]
                end -= 1
                _sift_down(items, 0, end)
            return items
    ''',
    "cpulib/dynprog.py": '''
        """Dynamic programming: edit distance, longest common subsequence, 0/1 knapsack."""
        from itertools import combinations


        def edit_distance(a, b):
            previous = list(range(len(b) + 1))
            for i, ca in enumerate(a, 1):
                current = [i]
                for j, cb in enumerate(b, 1):
                    current.append(min(previous[j] + 1, current[j - 1] + 1,
                                       previous[j - 1] + (ca != cb)))
                previous = current
            return previous[-1]


        def lcs_length(a, b):
            previous = [0] * (len(b) + 1)
            for ca in a:
                current = [0]
                for j, cb in enumerate(b, 1):
                    current.append(previous[j - 1] + 1 if ca == cb else max(previous[j], current[j - 1]))
                previous = current
            return previous[-1]


        def knapsack(items, capacity):
            """Best value of (weight, value) items within capacity."""
            best = [0] * (capacity + 1)
            for weight, value in items:
                for room in range(capacity, weight - 1, -1):
                    if best[room - weight] + value > best[room]:
                        best[room] = best[room - weight] + value
            return best[capacity]


        def knapsack_brute(items, capacity):
            best = 0
            for size in range(len(items) + 1):
                for chosen in combinations(items, size):
                    if sum(w for w, _ in chosen) <= capacity:
                        best = max(best, sum(v for _, v in chosen))
            return best
    ''',
    "cpulib/matrix.py": '''
        """Dense matrices as lists of rows."""


        class Matrix:
            def __init__(self, rows):
                self.rows = [list(map(float, row)) for row in rows]
                self.n = len(self.rows)

            def __matmul__(self, other):
                columns = list(zip(*other.rows))
                return Matrix([[sum(a * b for a, b in zip(row, column)) for column in columns]
                               for row in self.rows])

            def transpose(self):
                return Matrix(list(map(list, zip(*self.rows))))

            def determinant(self):
                rows = [row[:] for row in self.rows]
                det = 1.0
                for col in range(self.n):
                    pivot = max(range(col, self.n), key=lambda r: abs(rows[r][col]))
                    if rows[pivot][col] == 0:
                        return 0.0
                    if pivot != col:
                        rows[col], rows[pivot] = rows[pivot], rows[col]
                        det = -det
                    det *= rows[col][col]
                    for r in range(col + 1, self.n):
                        factor = rows[r][col] / rows[col][col]
                        for c in range(col, self.n):
                            rows[r][c] -= factor * rows[col][c]
                return det
    ''',
    "cpulib/graphs.py": '''
        """Weighted digraphs: Dijkstra against Bellman-Ford."""
        import heapq


        def random_graph(rng, nodes, edges):
            graph = {n: [] for n in range(nodes)}
            for n in range(1, nodes):  # a spanning chain keeps every node reachable
                graph[n - 1].append((n, rng.randint(1, 50)))
            for _ in range(edges - nodes + 1):
                graph[rng.randint(0, nodes - 1)].append((rng.randint(0, nodes - 1), rng.randint(1, 50)))
            return graph


        def dijkstra(graph, source):
            dist = {source: 0}
            queue = [(0, source)]
            while queue:
                d, node = heapq.heappop(queue)
                if d > dist.get(node, float("inf")):
                    continue
                for target, weight in graph[node]:
                    nd = d + weight
                    if nd < dist.get(target, float("inf")):
                        dist[target] = nd
                        heapq.heappush(queue, (nd, target))
            return dist


        def bellman_ford(graph, source):
            dist = {node: float("inf") for node in graph}
            dist[source] = 0
            for _ in range(len(graph) - 1):
                changed = False
                for node, out in graph.items():
                    if dist[node] == float("inf"):
                        continue
                    for target, weight in out:
                        if dist[node] + weight < dist[target]:
                            dist[target] = dist[node] + weight
                            changed = True
                if not changed:
                    break
            return {node: d for node, d in dist.items() if d != float("inf")}
    ''',
    "cpulib/expr.py": '''
        """A tokenizer and recursive-descent parser for integer arithmetic."""
        import re

        TOKEN = re.compile(r"\\s*(?:(\\d+)|(.))")


        def tokenize(text):
            tokens = []
            for number, op in TOKEN.findall(text):
                tokens.append(int(number) if number else op)
            return tokens


        class Parser:
            def __init__(self, text):
                self.tokens = tokenize(text)
                self.pos = 0

            def peek(self):
                return self.tokens[self.pos] if self.pos < len(self.tokens) else None

            def take(self):
                token = self.peek()
                self.pos += 1
                return token

            def expression(self):
                value = self.term()
                while self.peek() in ("+", "-"):
                    value = value + self.term() if self.take() == "+" else value - self.term()
                return value

            def term(self):
                value = self.factor()
                while self.peek() == "*":
                    self.take()
                    value *= self.factor()
                return value

            def factor(self):
                token = self.take()
                if token == "(":
                    value = self.expression()
                    self.take()
                    return value
                if token == "-":
                    return -self.factor()
                return token


        def evaluate(text):
            return Parser(text).expression()


        def random_expression(rng, depth):
            if depth == 0 or rng.randint(0, 3) == 0:
                return str(rng.randint(0, 99))
            op = "+-*"[rng.randint(0, 2)]
            left, right = random_expression(rng, depth - 1), random_expression(rng, depth - 1)
            return "(" + left + " " + op + " " + right + ")"
    ''',
    "cpulib/life.py": '''
        """Conway's game of life on a torus: a list-of-lists grid against a set of live cells."""


        def step_grid(grid):
            rows, cols = len(grid), len(grid[0])
            out = []
            for r in range(rows):
                line = []
                for c in range(cols):
                    alive = 0
                    for dr in (-1, 0, 1):
                        for dc in (-1, 0, 1):
                            if dr or dc:
                                alive += grid[(r + dr) % rows][(c + dc) % cols]
                    line.append(1 if alive == 3 or (alive == 2 and grid[r][c]) else 0)
                out.append(line)
            return out


        def step_set(cells, rows, cols):
            counts = {}
            for r, c in cells:
                for dr in (-1, 0, 1):
                    for dc in (-1, 0, 1):
                        if dr or dc:
                            key = ((r + dr) % rows, (c + dc) % cols)
                            counts[key] = counts.get(key, 0) + 1
            return {cell for cell, n in counts.items() if n == 3 or (n == 2 and cell in cells)}
    ''',
    "cpulib/codec.py": '''
        """CRC-32, base64 and run-length coding written out in Python."""

        _TABLE = []
        for _n in range(256):
            _c = _n
            for _ in range(8):
                _c = (0xEDB88320 ^ (_c >> 1)) if _c & 1 else _c >> 1
            _TABLE.append(_c)

        _B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


        def crc32(data):
            crc = 0xFFFFFFFF
            for byte in data:
                crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
            return crc ^ 0xFFFFFFFF


        def b64encode(data):
            out = []
            for i in range(0, len(data) - len(data) % 3, 3):
                n = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2]
                out.append(_B64[n >> 18] + _B64[(n >> 12) & 63] + _B64[(n >> 6) & 63] + _B64[n & 63])
            rest = len(data) % 3
            if rest:
                tail = data[len(data) - rest:] + b"\\0" * (3 - rest)
                n = (tail[0] << 16) | (tail[1] << 8) | tail[2]
                chunk = _B64[n >> 18] + _B64[(n >> 12) & 63] + _B64[(n >> 6) & 63] + _B64[n & 63]
                out.append(chunk[: rest + 1] + "=" * (3 - rest))
            return "".join(out)


        def rle_encode(text):
            out, i = [], 0
            while i < len(text):
                j = i
                while j < len(text) and text[j] == text[i]:
                    j += 1
                out.append(str(j - i) + text[i])
                i = j
            return "".join(out)


        def rle_decode(code):
            out, i = [], 0
            while i < len(code):
                count = int(code[i])  # BUG: a run of 10 or more has a multi-digit count
                out.append(code[i + 1] * count)
                i += 2
            return "".join(out)
    ''',
    "tests/__init__.py": "",
    "tests/test_numbers.py": '''
        import pytest

        from cpulib.numbers import collatz_plain, count_primes_trial, longest_collatz, sieve


        @pytest.mark.parametrize("seed", range({N}))
        def test_prime_counts_agree(seed):
            limit = 235000 + 2000 * seed
            assert count_primes_trial(limit) == len(sieve(limit))


        @pytest.mark.parametrize("seed", range({N}))
        def test_longest_collatz(seed):
            start = 1 + 20000 * seed
            best, length = longest_collatz(start, start + 110000)
            assert collatz_plain(best) == length
            assert all(collatz_plain(n) <= length for n in range(start, start + 8000))
    ''',
    "tests/test_sorting.py": '''
        import pytest

        from cpulib.rng import Lcg
        from cpulib.sorting import heap_sort, merge_sort, quick_sort


        @pytest.fixture(params=range({N}))
        def data(request):
            return Lcg(request.param).ints(55000, -10**6, 10**6)


        def test_sorts_agree(data):
            expected = sorted(data)
            assert merge_sort(data) == expected
            assert quick_sort(data) == expected
            assert heap_sort(data) == expected
    ''',
    "tests/test_dynprog.py": '''
        import pytest

        from cpulib.dynprog import edit_distance, knapsack, knapsack_brute, lcs_length
        from cpulib.rng import Lcg


        @pytest.mark.parametrize("seed", range({N}))
        def test_edit_distance_bounds(seed):
            rng = Lcg(seed)
            a, b = rng.text(770), rng.text(710)
            distance = edit_distance(a, b)
            assert distance == edit_distance(b, a)
            assert abs(len(a) - len(b)) <= distance <= max(len(a), len(b))
            assert distance >= max(len(a), len(b)) - lcs_length(a, b)


        @pytest.mark.parametrize("seed", range({N}))
        def test_knapsack_matches_brute_force(seed):
            rng = Lcg(100 + seed)
            items = [(rng.randint(1, 40), rng.randint(1, 100)) for _ in range(17)]
            for capacity in (60, 100, 150, 200):
                assert knapsack(items, capacity) == knapsack_brute(items, capacity)
    ''',
    "tests/test_matrix.py": '''
        import pytest

        from cpulib.matrix import Matrix
        from cpulib.rng import Lcg


        @pytest.mark.parametrize("seed", range({N}))
        def test_determinant_is_multiplicative(seed):
            rng = Lcg(seed)
            n = 112
            a = Matrix([[rng.randint(-9, 9) for _ in range(n)] for _ in range(n)])
            b = Matrix([[rng.randint(-9, 9) for _ in range(n)] for _ in range(n)])
            product = (a @ b).determinant()
            expected = a.determinant() * b.determinant()
            assert product == pytest.approx(expected, rel=1e-6)
            assert (a @ b).transpose().rows == (b.transpose() @ a.transpose()).rows
    ''',
    "tests/test_graphs.py": '''
        import pytest

        from cpulib.graphs import bellman_ford, dijkstra, random_graph
        from cpulib.rng import Lcg


        @pytest.mark.parametrize("seed", range({N}))
        def test_shortest_paths_agree(seed):
            graph = random_graph(Lcg(seed), 800, 4000)
            for source in range(0, 800, 12):
                assert dijkstra(graph, source) == bellman_ford(graph, source)
    ''',
    "tests/test_expr.py": '''
        import pytest

        from cpulib.expr import evaluate, random_expression
        from cpulib.rng import Lcg


        @pytest.mark.parametrize("seed", range({N}))
        def test_parser_matches_python(seed):
            rng = Lcg(seed)
            for _ in range(3200):
                text = random_expression(rng, 6)
                assert evaluate(text) == eval(text)
    ''',
    "tests/test_life.py": '''
        import pytest

        from cpulib.life import step_grid, step_set
        from cpulib.rng import Lcg


        @pytest.mark.parametrize("seed", range({N}))
        def test_grid_and_set_agree(seed):
            rng = Lcg(seed)
            rows = cols = 60
            grid = [[1 if rng.randint(0, 3) == 0 else 0 for _ in range(cols)] for _ in range(rows)]
            cells = {(r, c) for r in range(rows) for c in range(cols) if grid[r][c]}
            for _ in range(73):
                grid, cells = step_grid(grid), step_set(cells, rows, cols)
                assert cells == {(r, c) for r in range(rows) for c in range(cols) if grid[r][c]}
    ''',
    "tests/test_codec.py": '''
        import base64
        import zlib

        import pytest

        from cpulib.codec import b64encode, crc32, rle_decode, rle_encode
        from cpulib.rng import Lcg


        @pytest.mark.parametrize("seed", range({N_CODEC}))
        def test_checksum_and_base64(seed):
            data = Lcg(seed).data(550000 + seed)
            assert crc32(data) == zlib.crc32(data)
            assert b64encode(data) == base64.b64encode(data).decode()


        @pytest.mark.parametrize("run", [9, 14], ids=["long-runs-a", "long-runs-b"])
        def test_rle_roundtrip(run):
            rng = Lcg(run)
            text = "".join(rng.text(1, "abc") * (1 + rng.randint(0, run)) for _ in range(120000))
            assert rle_decode(rle_encode(text)) == text
    ''',
}

TINY_FILES = {
    "tiny/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/test_tiny.py": '''
        from tiny import add


        def test_add():
            assert add(2, 3) == 5


        def test_upper():
            assert "equisa".upper() == "EQUISA"
    ''',
}


def write_project(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> source) under ``root``, with a pytest configuration."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(text).lstrip("\n")
        text = text.replace("{N}", str(CPU_TESTS_PER_KIND)).replace(
            "{N_CODEC}", str(CPU_TESTS_PER_KIND - len(CPU_EXPECTED_FAILURES)))
        path.write_text(text, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n", encoding="utf-8")
    return root


# -------------------------------------------------------------------------------------------------
# Environment and small helpers


def median(values: list[float]) -> float:
    return statistics.median(values)


def loadavg() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def environment(uv: str) -> dict:
    """The tracing benchmark's environment record plus this benchmark's own tools and sources."""
    import docker
    import prefect

    return {
        **tracing_environment(uv),
        "prefect": prefect.__version__,
        "docker_sdk": docker.__version__,
        "bwrap": run_text(["bwrap", "--version"]),
        "unshare": run_text(["unshare", "--version"]),
        "sandbox_sources_sha256": {
            name: hashlib.sha256((REPO / name).read_bytes()).hexdigest()
            for name in ("tasks/sandbox/contract.py", "tasks/sandbox/local_backend.py", "tasks/sandbox/isolation.py",
                         "tasks/sandbox/docker_backend.py", "tasks/sandbox/run_tests.py", "flows/trace.py")
        },
    }


def interpreter_info(python: str) -> dict:
    """Version, pytest version, pytest plugins and whether pytest's bytecode is compiled on disk."""
    script = (
        "import json, sys, pathlib, importlib.metadata as m, pytest, _pytest\n"
        "cache = pathlib.Path(_pytest.__file__).parent / '__pycache__'\n"
        "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'pytest': pytest.__version__,\n"
        "    'pytest_plugins': sorted(e.value for e in m.entry_points(group='pytest11')),\n"
        "    'pytest_bytecode_on_disk': cache.is_dir() and any(cache.glob('*.pyc'))}))\n"
    )
    # Never write bytecode into an interpreter we only look at.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True, env=env)
    return {"executable": python, **json.loads(done.stdout)}


def make_suite_venv(uv: str, venv: Path) -> str:
    """A project venv for the suites: this Python, EQUISA's pytest version, bytecode compiled at
    install (as pip does; the sandbox pins ``PYTHONDONTWRITEBYTECODE=1``, so a venv without
    ``.pyc`` files would compile pytest and its plugins again in every run)."""
    from importlib.metadata import version

    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([uv, "pip", "install", "-q", "--compile-bytecode", "--python", str(python),
                    f"pytest=={version('pytest')}"], check=True)
    return str(python)


def summary_stats(walls: list[float]) -> dict:
    return {"median_wall_s": round(median(walls), 4), "min_wall_s": round(min(walls), 4),
            "max_wall_s": round(max(walls), 4)}


def outcomes(trace) -> dict[str, str]:
    return {t.test_id: t.outcome.value for t in trace.tests}


# -------------------------------------------------------------------------------------------------
# 1. Fan-out: one sandbox against two at once


def cpu_scaling_control(python: str, project: Path) -> dict:
    """Throughput of 2 CPU-bound processes at once relative to 1 (2.0 = perfect), no sandbox."""
    command = [python, "-c", CONTROL_SCRIPT, str(project), str(CONTROL_SIZE)]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    alone = time.perf_counter() - start
    start = time.perf_counter()
    pair = [subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL) for _ in range(2)]
    for process in pair:
        process.wait()
    both = time.perf_counter() - start
    return {"alone_s": round(alone, 3), "two_at_once_s": round(both, 3),
            "scaling": round(2 * alone / both, 3)}


def bench_fanout(workspace, project: Path, python: str, repeats: int, console: Console) -> dict:
    from equisa_core.common.trace_merge import combine, interleave
    from tasks.sandbox.contract import RunRequest
    from tasks.sandbox.isolation import detect_isolation
    from tasks.sandbox.local_backend import LocalSandbox
    from tasks.sandbox.run_tests import execute_request

    detect_isolation.cache_clear()
    isolation = detect_isolation()
    base = RunRequest(workspace=workspace.root, workspace_digest=workspace.digest, interpreter=python,
                      trace=True)

    def one_shard() -> dict:
        start = time.perf_counter()
        trace = execute_request(LocalSandbox(), base)
        return {"wall": time.perf_counter() - start, "trace": trace}

    def part(index: int) -> tuple:
        start = time.perf_counter()
        trace = execute_request(LocalSandbox(), base.model_copy(update={"shard": (index, 2)}))
        return trace, time.perf_counter() - start

    def two_shards() -> dict:
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(part, range(2)))
        parts = [trace for trace, _ in results]
        merged = combine(parts, interleave([p.collected for p in parts]))
        return {"wall": time.perf_counter() - start, "trace": merged,
                "parts": parts, "part_walls": [round(w, 3) for _, w in results]}

    runs = {"1 shard": [], "2 shards": []}
    order_log, load, control = [], [], []
    for i in range(repeats):
        load.append(loadavg())
        control.append(cpu_scaling_control(python, project))
        order = ["1 shard", "2 shards"] if i % 2 == 0 else ["2 shards", "1 shard"]
        order_log.append(order)
        line = []
        for key in order:
            result = one_shard() if key == "1 shard" else two_shards()
            runs[key].append(result)
            line.append(f"{key} {result['wall']:.2f}s")
        console.print(f"  fan-out round {i + 1}/{repeats}: " + ", ".join(line)
                      + f" (machine control: 2 processes {control[-1]['scaling']:.2f}× one)")

    reference = runs["1 shard"][0]["trace"]
    ref_ids = [t.test_id for t in reference.tests]
    ref_outcomes = outcomes(reference)
    failed = sorted(t for t, o in ref_outcomes.items() if o == "failed")
    checks = []
    for run in runs["1 shard"]:
        problems = []
        if outcomes(run["trace"]) != ref_outcomes:
            problems.append("1-shard outcomes differ between rounds")
        checks.append(problems)
    for run in runs["2 shards"]:
        problems = []
        ids = [t.test_id for t in run["trace"].tests]
        duplicated = sorted(t for t, n in Counter(ids).items() if n > 1)
        missing = sorted(set(ref_ids) - set(ids))
        extra = sorted(set(ids) - set(ref_ids))
        if duplicated:
            problems.append(f"{len(duplicated)} tests twice, e.g. {duplicated[:2]}")
        if missing:
            problems.append(f"{len(missing)} tests missing, e.g. {missing[:2]}")
        if extra:
            problems.append(f"{len(extra)} unexpected tests, e.g. {extra[:2]}")
        if not (duplicated or missing or extra) and ids != ref_ids:
            problems.append("merged order differs from the 1-shard order")
        if list(run["trace"].collected) != list(reference.collected):
            problems.append("merged 'collected' differs from the 1-shard run's")
        part_ids = [{t.test_id for t in p.tests} for p in run["parts"]]
        if part_ids[0] & part_ids[1]:
            problems.append(f"shards overlap in {len(part_ids[0] & part_ids[1])} tests")
        if outcomes(run["trace"]) != ref_outcomes:
            changed = sorted(t for t in set(ids) & set(ref_ids)
                             if outcomes(run["trace"]).get(t) != ref_outcomes.get(t))
            problems.append(f"outcomes differ from the 1-shard run for {changed[:3]}")
        if run["trace"].crashed:
            problems.append("merged trace is marked crashed")
        checks.append(problems)
    if len(ref_ids) != len(set(ref_ids)):
        checks.append(["the 1-shard run has duplicate test records"])
    if failed != sorted(CPU_EXPECTED_FAILURES):
        checks.append([f"failed tests {failed}, expected {CPU_EXPECTED_FAILURES}"])
    problems = sorted({p for c in checks for p in c})

    serial_walls = [r["wall"] for r in runs["1 shard"]]
    sharded_walls = [r["wall"] for r in runs["2 shards"]]
    speedup = median(serial_walls) / median(sharded_walls)
    paired = [a / b for a, b in zip(serial_walls, sharded_walls, strict=True)]
    # Where the 2-shard time goes, round by round (each round's 1-shard run as the reference).
    analysis = []
    for serial, sharded in zip(runs["1 shard"], runs["2 shards"], strict=True):
        serial_tests = sum(t.duration for t in serial["trace"].tests)
        part_tests = [sum(t.duration for t in p.tests) for p in sharded["parts"]]
        analysis.append({
            "serial_test_time_s": round(serial_tests, 3),
            "part_test_time_s": [round(t, 3) for t in part_tests],
            "test_time_inflation": round(sum(part_tests) / serial_tests, 3),
            "shard_imbalance": round(max(part_tests) / statistics.mean(part_tests), 3),
            "ceiling_speedup": round(serial["wall"] / (max(part_tests) + serial["wall"] - serial_tests), 3),
        })
    out = {
        "isolation": isolation.model_dump(),
        "tests": len(ref_ids),
        "failed_tests": failed,
        "order_per_round": order_log,
        "loadavg_1min_per_round": load,
        "runs": {},
        "speedup": round(speedup, 4),
        "paired_speedups": [round(p, 4) for p in paired],
        "paired_speedup_median": round(median(paired), 4),
        "speedup_of_mins": round(min(serial_walls) / min(sharded_walls), 4),
        "machine_control_per_round": control,
        "machine_control_scaling_median": round(median([c["scaling"] for c in control]), 3),
        "analysis_per_round": analysis,
        "merge_checks_ok": not problems,
        "merge_check_problems": problems,
        "target": {"min_speedup": TARGET_FANOUT, "cores": os.cpu_count(),
                   "verdict": ("PASS" if speedup >= TARGET_FANOUT else "FAIL")},
        "suite_check": {"min_serial_s": MIN_SERIAL_S, "median_serial_s": round(median(serial_walls), 3),
                        "verdict": "PASS" if median(serial_walls) >= MIN_SERIAL_S else "FAIL"},
    }
    for key, results in runs.items():
        walls = [r["wall"] for r in results]
        tests_s = [sum(t.duration for t in r["trace"].tests) for r in results]
        # Wall time not spent in tests: sandbox, pytest start-up and collection, merging. For 2
        # shards, beyond the slower part's tests.
        critical = tests_s if key == "1 shard" else [
            max(sum(t.duration for t in p.tests) for p in r["parts"]) for r in results]
        entry = {"wall_s": [round(w, 4) for w in walls], **summary_stats(walls),
                 "test_time_s": [round(t, 3) for t in tests_s],
                 "outside_tests_s": [round(w - t, 3) for w, t in zip(walls, critical, strict=True)]}
        if key == "2 shards":
            entry["part_walls_s"] = [r["part_walls"] for r in results]
            entry["part_tests"] = [[len(p.tests) for p in r["parts"]] for r in results]
            entry["part_test_time_s"] = [[round(sum(t.duration for t in p.tests), 3) for p in r["parts"]]
                                         for r in results]
        out["runs"][key] = entry
    return out


# -------------------------------------------------------------------------------------------------
# 2. The trace-suite flow: cold against cached


class SandboxCounter:
    """Counts ``LocalSandbox.run`` calls (wrapped on the class, restored by ``close``)."""

    def __init__(self) -> None:
        import threading

        from tasks.sandbox.local_backend import LocalSandbox

        self.cls = LocalSandbox
        self.original = LocalSandbox.run
        self.count = 0
        lock = threading.Lock()
        original = self.original

        def counted(sandbox, request, on_record=None):
            with lock:
                self.count += 1
            return original(sandbox, request, on_record)

        LocalSandbox.run = counted

    def close(self) -> None:
        self.cls.run = self.original


def run_tests_states(flow_run_id, expected: int, timeout_s: float = 30.0) -> dict:
    """The ``run-tests`` task runs the server has for the flow run, once all ``expected`` are final."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + timeout_s
    waited = time.monotonic()
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            ours = [r for r in runs if r.name.startswith(("run-tests", "rerun "))]
            final = [r for r in ours if r.state is not None and r.state.is_final()]
            if (len(ours) >= expected and len(final) == len(ours)) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
    return {
        "task_runs": len(ours),
        "states": dict(Counter(r.state_name for r in ours)),
        "names": sorted(r.name for r in ours),
        "timeline": sorted(
            ({"name": r.name, "state": r.state_name,
              "start": r.start_time.isoformat() if r.start_time else None,
              "end": r.end_time.isoformat() if r.end_time else None,
              "run_s": round(r.total_run_time.total_seconds(), 3)} for r in ours),
            key=lambda t: t["start"] or ""),
        "waited_s": round(time.monotonic() - waited, 2),
    }


def bench_cache(project: Path, tiny: Path, python: str, repeats: int, console: Console) -> dict:
    from prefect.settings import get_current_settings
    from prefect.testing.utilities import prefect_test_harness

    from flows.trace import trace_suite
    from tasks.run.parameters import TraceParameters

    out: dict = {"shards": os.cpu_count() or 1, "parameters": {}}
    started = time.perf_counter()
    with prefect_test_harness(server_startup_timeout=180):
        out["harness_start_s"] = round(time.perf_counter() - started, 2)
        out["api_url"] = str(get_current_settings().api.url)
        out["local_storage_path"] = str(get_current_settings().results.local_storage_path)
        console.print(f"  Prefect test server up in {out['harness_start_s']} s at {out['api_url']}")
        counter = SandboxCounter()
        try:
            # Untimed warm-up: the first flow run of a process pays for Prefect's own set-up.
            start = time.perf_counter()
            trace_suite(TraceParameters(path=str(tiny), python=python, no_cache=True))
            out["warmup_tiny_flow_s"] = round(time.perf_counter() - start, 2)

            runs = {"cold": [], "cached": []}
            load = []
            for i in range(repeats):
                load.append(loadavg())
                line = []
                for key in ("cold", "cached"):  # cached needs the cold run's fresh cache entry
                    params = TraceParameters(path=str(project), python=python, no_cache=key == "cold")
                    out["parameters"][key] = params.model_dump()
                    before = counter.count
                    start = time.perf_counter()
                    state = trace_suite(params, return_state=True)
                    wall = time.perf_counter() - start
                    report = state.result()
                    sandboxes = counter.count - before
                    expected = out["shards"]  # each shard re-runs its failing tests apart itself
                    states = run_tests_states(state.state_details.flow_run_id, expected)
                    runs[key].append({
                        "wall": wall, "sandbox_runs": sandboxes, "flow_state": state.name,
                        "summary": report.summary.model_dump(), "flaky": sorted(report.flaky),
                        "outcomes": {t.test_id: t.outcome.value for t in report.tests},
                        "top_nodes": [n.fqn for n in report.nodes[:5]],
                        "task_runs": states,
                    })
                    line.append(f"{key} {wall:.2f}s ({sandboxes} sandbox runs, "
                                f"run-tests states {states['states']})")
                console.print(f"  cache round {i + 1}/{repeats}: " + ", ".join(line))
        finally:
            counter.close()

    cold = [r["wall"] for r in runs["cold"]]
    cached = [r["wall"] for r in runs["cached"]]
    ratio = median(cold) / median(cached)
    problems = []
    reference = runs["cold"][0]
    for key, results in runs.items():
        for n, r in enumerate(results, 1):
            if r["outcomes"] != reference["outcomes"]:
                problems.append(f"{key} round {n}: outcomes differ from the first cold run")
            if r["top_nodes"] != reference["top_nodes"]:
                problems.append(f"{key} round {n}: ranking differs from the first cold run")
            if r["flow_state"] != "Completed":
                problems.append(f"{key} round {n}: flow ended {r['flow_state']}")
            states = r["task_runs"]["states"]
            if key == "cached":
                if r["sandbox_runs"]:
                    problems.append(f"cached round {n}: {r['sandbox_runs']} sandbox runs (expected 0)")
                if set(states) != {"Cached"}:
                    problems.append(f"cached round {n}: run-tests task states {states}")
            else:
                if r["sandbox_runs"] == 0:
                    problems.append(f"cold round {n}: no sandbox ran")
                if "Cached" in states:
                    problems.append(f"cold round {n}: run-tests task states {states}")
    paired = [a / b for a, b in zip(cold, cached, strict=True)]
    out.update({
        "loadavg_1min_per_round": load,
        "runs": {key: {"wall_s": [round(r["wall"], 4) for r in results],
                       **summary_stats([r["wall"] for r in results]),
                       "sandbox_runs": [r["sandbox_runs"] for r in results],
                       "run_tests_task_states": [r["task_runs"]["states"] for r in results],
                       "run_tests_task_runs": results[0]["task_runs"]["names"],
                       "summary": results[0]["summary"], "flaky": results[0]["flaky"]}
                 for key, results in runs.items()},
        "ratio": round(ratio, 4),
        "paired_ratios": [round(p, 4) for p in paired],
        "paired_ratio_median": round(median(paired), 4),
        "cache_checks_ok": not problems,
        "cache_check_problems": problems,
        "target": {"min_ratio": TARGET_CACHE, "verdict": "PASS" if ratio >= TARGET_CACHE else "FAIL"},
    })
    return out


# -------------------------------------------------------------------------------------------------
# 3. Start-up overhead on a tiny suite


def start_docker(console: Console) -> tuple[object | None, str]:
    """A Docker engine with the base image, through tests/integration/docker_fixtures.py's helpers."""
    import pytest

    from tasks.sandbox.contract import SandboxInfrastructureError
    from tasks.sandbox.docker_image import DEFAULT_CACHE_DIR, DEFAULT_IMAGE, ensure_base_image
    from tests.integration import docker_fixtures as fx

    started = time.monotonic()
    client, why_not = fx._existing_engine()
    process, folders = None, []
    base_url = os.environ.get("DOCKER_HOST", "")
    if client is None:
        console.print(f"  starting a private dockerd ({why_not})")
        try:
            client, process, folders, base_url = fx._start_dockerd()
        except pytest.skip.Exception as skipped:
            return None, str(skipped.msg)
    engine_s = time.monotonic() - started
    image_started = time.monotonic()
    try:
        ensure_base_image(client, DEFAULT_IMAGE, DEFAULT_CACHE_DIR)
    except SandboxInfrastructureError as error:
        fx.DockerEngine(client, base_url, engine_s, 0.0, process, folders).stop()
        return None, f"no Docker base image: {error.message}"
    engine = fx.DockerEngine(client, base_url, engine_s, time.monotonic() - image_started, process, folders)
    console.print(f"  docker engine ready in {engine.started_s:.2f} s at {base_url}; "
                  f"base image ready in {engine.image_s:.2f} s")
    return engine, ""


def bench_startup(workspace, tiny: Path, python: str, repeats: int, warmup: int, use_docker: bool,
                  workdir: Path, console: Console) -> dict:
    from equisa_core.common.probe_output import parse_probe_output
    from tasks.sandbox.contract import RunRequest, probe_arguments, scrubbed_environment
    from tasks.sandbox.docker_backend import DockerSandbox
    from tasks.sandbox.isolation import detect_isolation
    from tasks.sandbox.local_backend import LocalSandbox

    request = RunRequest(workspace=workspace.root, workspace_digest=workspace.digest, interpreter=python)
    (workdir / "home").mkdir(parents=True, exist_ok=True)
    (workdir / "tmp").mkdir(exist_ok=True)
    env = scrubbed_environment({}, home=str(workdir / "home"), tmp=str(workdir / "tmp"))
    probe_env = dict(env, PYTHONPATH=str(PROBE_FILE.parent))
    skipped: dict[str, str] = {}
    counter = [0]

    def plain() -> dict:
        done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tiny, env=env,
                              capture_output=True, text=True)
        return {"ok": done.returncode == 0, "detail": done.stdout.strip().splitlines()[-1:]}

    def plain_probe() -> dict:
        counter[0] += 1
        out = workdir / f"probe-{counter[0]}"
        out.mkdir()
        done = subprocess.run([python, "-m", "pytest", *probe_arguments(request, str(tiny), str(out))],
                              cwd=tiny, env=probe_env, capture_output=True, text=True)
        trace = parse_probe_output((out / "probe.jsonl").read_text().splitlines())
        shutil.rmtree(out, ignore_errors=True)
        passed = sum(1 for t in trace.tests if t.outcome.value == "passed")
        return {"ok": done.returncode == 0 and passed == 2, "detail": f"{passed} passed"}

    def sandboxed(sandbox, req):
        def run() -> dict:
            result = sandbox.run(req)
            trace = parse_probe_output(result.probe_output.splitlines())
            passed = sum(1 for t in trace.tests if t.outcome.value == "passed")
            return {"ok": result.exit_code == 0 and passed == 2, "detail": f"{passed} passed",
                    "isolation": result.isolation, "duration_s": result.duration_s,
                    "python": trace.python_version}
        return run

    def plain_equisa_venv() -> dict:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tiny,
                              env=env, capture_output=True, text=True)
        return {"ok": done.returncode == 0, "detail": done.stdout.strip().splitlines()[-1:]}

    configs: list[dict] = [
        {"key": "plain", "what": "python -m pytest -q -p no:cacheprovider", "run": plain},
        {"key": "plain + probe", "what": "the same with the probe's arguments (trace on)",
         "run": plain_probe},
    ]
    if os.path.abspath(python) != os.path.abspath(sys.executable):  # venvs share one binary
        configs.append({"key": "plain, EQUISA's venv", "run": plain_equisa_venv,
                        "what": f"plain, with EQUISA's own interpreter {sys.executable} (for comparison)"})
    saved = os.environ.get("EQUISA_LOCAL_ISOLATION")
    for level in ISOLATION_LEVELS:
        os.environ["EQUISA_LOCAL_ISOLATION"] = level
        detect_isolation.cache_clear()
        try:
            chosen = detect_isolation()
        except Exception as error:  # SandboxInfrastructureError: this level does not run here
            skipped[f"local {level}"] = getattr(error, "message", str(error))
            console.print(f"  [yellow]skipping local {level}:[/] {skipped[f'local {level}']}")
            continue
        configs.append({"key": f"local {level}", "what": f"LocalSandbox.run, {chosen.reason}",
                        "level": level, "run": sandboxed(LocalSandbox(), request)})
    engine = None
    if not use_docker:
        skipped["docker"] = "--no-docker"
    else:
        engine, reason = start_docker(console)
        if engine is None:
            skipped["docker"] = reason
            console.print(f"  [yellow]skipping docker:[/] {reason}")
        else:
            docker_request = request.model_copy(update={"interpreter": "python3"})
            configs.append({"key": "docker", "what": "DockerSandbox.run (private dockerd, bind mount)",
                            "run": sandboxed(DockerSandbox(client=engine.client), docker_request)})

    def run_one(config: dict) -> dict:
        if "level" in config:  # outside the timing: pick the level, as a fresh process would
            os.environ["EQUISA_LOCAL_ISOLATION"] = config["level"]
            detect_isolation.cache_clear()
            detect_isolation()
        start, cpu = time.perf_counter(), children_cpu()
        result = config["run"]()
        result["wall"] = time.perf_counter() - start
        result["cpu"] = children_cpu() - cpu
        return result

    results = {c["key"]: [] for c in configs}
    load = []
    try:
        for _ in range(warmup):
            for config in configs:
                run_one(config)
        for i in range(repeats):
            load.append(loadavg())
            shift = i % len(configs)
            for config in configs[shift:] + configs[:shift]:
                results[config["key"]].append(run_one(config))
        console.print(f"  start-up: {repeats} rounds of {len(configs)} runs done")
    finally:
        if saved is None:
            os.environ.pop("EQUISA_LOCAL_ISOLATION", None)
        else:
            os.environ["EQUISA_LOCAL_ISOLATION"] = saved
        detect_isolation.cache_clear()
        engine_info = None
        if engine is not None:
            engine_info = {"base_url": engine.base_url, "engine_start_s": round(engine.started_s, 2),
                           "image_ready_s": round(engine.image_s, 2),
                           "private_dockerd": engine.process is not None}
            try:
                engine_info["server_version"] = engine.client.version().get("Version")
            except Exception as error:
                engine_info["server_version"] = f"unknown: {error}"
            engine.stop()

    plain_median = median([r["wall"] for r in results["plain"]])
    probe_median = median([r["wall"] for r in results["plain + probe"]])
    out_configs = {}
    for config in configs:
        runs = results[config["key"]]
        walls = [r["wall"] for r in runs]
        entry = {
            "what": config["what"],
            "wall_s": [round(w, 4) for w in walls],
            **summary_stats(walls),
            # bwrap's and docker's processes are not reaped by this one: their CPU is not seen.
            "median_cpu_s": (None if config["key"] in ("local bwrap", "docker")
                             else round(median([r["cpu"] for r in runs]), 4)),
            "overhead_ms_vs_plain": round((median(walls) - plain_median) * 1000, 1),
            "overhead_ms_vs_plain_probe": round((median(walls) - probe_median) * 1000, 1),
            "ratio_vs_plain": round(median(walls) / plain_median, 3),
            "all_ok": all(r["ok"] for r in runs),
            "detail": runs[-1].get("detail"),
        }
        if "isolation" in runs[-1]:
            entry["isolation"] = runs[-1]["isolation"]
            entry["median_sandbox_duration_s"] = round(median([r["duration_s"] for r in runs]), 4)
            entry["python_in_sandbox"] = runs[-1]["python"]
        if config["key"] == "docker":
            entry["note"] = "the image's Python and pytest (Debian bookworm's) are not the host's"
        out_configs[config["key"]] = entry
    fallback = None
    if "local bwrap" in results and "local unshare" in results:
        bwrap = median([r["wall"] for r in results["local bwrap"]])
        unshare = median([r["wall"] for r in results["local unshare"]])
        rounds = zip(results["local unshare"], results["local bwrap"], strict=True)
        paired = [u["wall"] / b["wall"] for u, b in rounds]
        fallback = {"ratio_of_medians": round(unshare / bwrap, 3),
                    "paired_ratio_median": round(median(paired), 3),
                    "extra_ms": round((unshare - bwrap) * 1000, 1),
                    "target": f"<= {TARGET_FALLBACK}x bubblewrap's wall time per sandboxed run",
                    "verdict": "PASS" if unshare / bwrap <= TARGET_FALLBACK else "FAIL"}
    return {"tests": 2, "warmup_rounds": warmup, "repeats": repeats, "loadavg_1min_per_round": load,
            "order": "interleaved, the first configuration rotating each round",
            "configs": out_configs, "skipped": skipped, "docker_engine": engine_info,
            "fallback_vs_bwrap": fallback}


# -------------------------------------------------------------------------------------------------
# Report


def verdict(ok: bool) -> str:
    return "[green]PASS[/]" if ok else "[red]FAIL[/]"


def print_table(console: Console, report: dict) -> None:
    table = Table(title="Sandboxed test execution: wall time (median of the rounds, interleaved)")
    for name, justify in [("part", "left"), ("run", "left"), ("median s", "right"), ("min–max s", "right"),
                          ("ratio", "right"), ("overhead ms", "right"),
                          ("target", "right"), ("verdict", "left")]:
        table.add_column(name, justify=justify)
    fan = report.get("fanout")
    if fan:
        for key, run in fan["runs"].items():
            last = key == "2 shards"
            table.add_row(
                f"fan-out ({fan['tests']} tests, local {fan['isolation']['level']}, trace on)"
                if key == "1 shard" else "",
                key, f"{run['median_wall_s']:.2f}", f"{run['min_wall_s']:.2f}–{run['max_wall_s']:.2f}",
                f"{fan['speedup']:.2f}× faster" if last else "1.00", "",
                f"≥ {TARGET_FANOUT}×" if last else f"≥ {MIN_SERIAL_S:.0f} s",
                (verdict(fan["target"]["verdict"] == "PASS") + " "
                 + ("[green]merge ok[/]" if fan["merge_checks_ok"] else "[red]merge BAD[/]")) if last
                else verdict(fan["suite_check"]["verdict"] == "PASS"),
            )
        table.add_section()
    cache = report.get("cache")
    if cache:
        for key, run in cache["runs"].items():
            last = key == "cached"
            table.add_row(
                f"trace_suite flow ({cache['shards']} shards)" if key == "cold" else "",
                f"{key}" + (" (no_cache=True)" if key == "cold" else ""),
                f"{run['median_wall_s']:.2f}", f"{run['min_wall_s']:.2f}–{run['max_wall_s']:.2f}",
                f"{cache['ratio']:.1f}× faster" if last else "1.00", "",
                f"≥ {TARGET_CACHE:.0f}×" if last else "",
                (verdict(cache["target"]["verdict"] == "PASS") + " "
                 + ("[green]cache hit ok[/]" if cache["cache_checks_ok"] else "[red]cache BAD[/]"))
                if last else "",
            )
        table.add_section()
    start = report.get("startup")
    if start:
        fallback = start.get("fallback_vs_bwrap")
        first = True
        for key, c in start["configs"].items():
            table.add_row(
                f"start-up ({start['tests']} trivial tests)" if first else "", key,
                f"{c['median_wall_s']:.3f}", f"{c['min_wall_s']:.2f}–{c['max_wall_s']:.2f}",
                f"{c['ratio_vs_plain']:.2f}", "" if key == "plain" else f"{c['overhead_ms_vs_plain']:+.0f}",
                f"≤ {TARGET_FALLBACK}× bwrap" if key == "local unshare" and fallback else "",
                ("[green]ok[/]" if c["all_ok"] else "[red]BAD[/]") + (
                    " " + verdict(fallback["verdict"] == "PASS")
                    if key == "local unshare" and fallback else ""),
            )
            first = False
    console.print(table)
    if fan:
        console.print(f"fan-out: paired speedup median {fan['paired_speedup_median']:.2f}×, speedup of "
                      f"fastest runs {fan['speedup_of_mins']:.2f}×; machine control (2 plain processes "
                      f"vs 1) {fan['machine_control_scaling_median']:.2f}×; per round: test-time "
                      f"inflation {[a['test_time_inflation'] for a in fan['analysis_per_round']]}, "
                      f"shard imbalance {[a['shard_imbalance'] for a in fan['analysis_per_round']]}, "
                      f"load {fan['loadavg_1min_per_round']}")
        for problem in fan["merge_check_problems"]:
            console.print(f"  [red]fan-out: {problem}[/]")
    if cache:
        runs = cache["runs"]
        console.print(f"cache: paired ratio median {cache['paired_ratio_median']:.1f}×; sandbox runs cold "
                      f"{runs['cold']['sandbox_runs']}, cached {runs['cached']['sandbox_runs']}; "
                      f"run-tests states cached {runs['cached']['run_tests_task_states']}")
        for problem in cache["cache_check_problems"]:
            console.print(f"  [red]cache: {problem}[/]")
    if start:
        if fallback:
            console.print(f"fallback: local unshare / local bwrap {fallback['ratio_of_medians']:.3f}× "
                          f"(paired median {fallback['paired_ratio_median']:.3f}×, "
                          f"{fallback['extra_ms']:+.1f} ms)")
        for key, reason in start["skipped"].items():
            console.print(f"[yellow]start-up {key} skipped:[/] {reason}")
        if start.get("docker_engine"):
            e = start["docker_engine"]
            console.print(f"docker engine {e.get('server_version')}: started in {e['engine_start_s']} s, "
                          f"base image ready in {e['image_ready_s']} s (not in the timings)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed rounds of the fan-out and cache parts (default 3)")
    parser.add_argument("--startup-repeats", type=int, default=10,
                        help="timed rounds of the start-up part (default 10)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed start-up rounds first (default 1)")
    parser.add_argument("--python", default=None,
                        help="interpreter (with pytest) that runs the suites (default: a fresh venv of "
                             "this Python with pytest, bytecode compiled)")
    parser.add_argument("--no-docker", action="store_true", help="skip the Docker sandbox")
    parser.add_argument("--parts", default="fanout,cache,startup",
                        help="comma-separated parts to run (default fanout,cache,startup)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--tmp-dir", default="/var/tmp" if os.path.isdir("/var/tmp") else None,
                        help="where the temporary folder goes (default /var/tmp: the bwrap sandbox "
                             "hides the host's /tmp, so the suites' venv must not be there)")
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}

    console = Console()
    if not console.is_terminal:  # piped or redirected: rich would fall back to 80 columns
        console = Console(width=160)
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    started = time.perf_counter()
    # Not under /tmp: bwrap gives the sandbox a private /tmp, so a venv there would be invisible.
    tmp = Path(tempfile.mkdtemp(prefix="equisa-bench-sandbox-", dir=args.tmp_dir))
    # Before Prefect is imported: its settings, result storage and EQUISA's snapshots stay in tmp.
    private_env = {
        "PREFECT_HOME": str(tmp / "prefect-home"),
        "PREFECT_LOCAL_STORAGE_PATH": str(tmp / "prefect-storage"),
        "EQUISA_WORKSPACES": str(tmp / "workspaces"),
        "PREFECT_LOGGING_LEVEL": "WARNING",
        # The test server's telemetry has no network here and logs a traceback when it fails.
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    os.environ.update(private_env)
    os.environ.pop("EQUISA_LOCAL_ISOLATION", None)

    from tasks.run.workspace import snapshot

    report: dict = {
        "benchmark": "sandbox_execution",
        "schema": 1,
        "environment": environment(uv),
        "settings": {
            "repeats": args.repeats,
            "startup_repeats": args.startup_repeats,
            "startup_warmup_rounds": args.warmup,
            "python": args.python,
            "docker": not args.no_docker,
            "parts": sorted(parts),
            "statistic": "median wall seconds (time.perf_counter) of the call; ratio = median / median",
            "private_env": {k: v.replace(str(tmp), "$TMP") for k, v in private_env.items()},
            "targets": {"fanout_2_shards_speedup_min": TARGET_FANOUT,
                        "cached_flow_speedup_min": TARGET_CACHE,
                        "fanout_suite_serial_s_min": MIN_SERIAL_S},
        },
        "suite": {
            "package": CPU_PACKAGE,
            "modules": sorted(p for p in CPU_FILES if p.startswith(CPU_PACKAGE + "/")),
            "test_files": sorted(p for p in CPU_FILES if p.startswith("tests/test_")),
            "tests": 10 * CPU_TESTS_PER_KIND,
            "expected_failures": CPU_EXPECTED_FAILURES,
            "source_sha256": hashlib.sha256(json.dumps(CPU_FILES, sort_keys=True).encode()).hexdigest(),
        },
    }
    try:
        if args.python is None:
            args.python = make_suite_venv(uv, tmp / "venv")
        report["settings"]["python"] = args.python.replace(str(tmp), "$TMP")
        report["settings"]["interpreters"] = {"suites": interpreter_info(args.python),
                                              "equisa": interpreter_info(sys.executable)}
        project = write_project(tmp / "cpu-project", CPU_FILES)
        tiny = write_project(tmp / "tiny-project", TINY_FILES)
        cpu_ws, tiny_ws = snapshot(project), snapshot(tiny)
        console.print(f"projects in {tmp}; cpulib snapshot {cpu_ws.digest[:12]} ({cpu_ws.files} files)")
        if "fanout" in parts:
            console.print("[bold]1. fan-out[/]: 1 shard vs 2 shards at once, local sandbox, tracing on")
            report["fanout"] = bench_fanout(cpu_ws, project, args.python, args.repeats, console)
        if "cache" in parts:
            console.print("[bold]2. cache[/]: trace_suite flow, cold (no_cache=True) vs cached")
            report["cache"] = bench_cache(project, tiny, args.python, args.repeats, console)
        if "startup" in parts:
            console.print("[bold]3. start-up[/]: tiny suite, plain subprocess vs each sandbox")
            report["startup"] = bench_startup(tiny_ws, tiny, args.python, args.startup_repeats, args.warmup,
                                              not args.no_docker, tmp / "startup", console)
    finally:
        if args.keep:
            console.print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    finish_report(console, report, print_table, args.out, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
