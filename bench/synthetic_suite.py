"""A synthetic but realistic Python project and pytest suite, written to a folder for benchmarks.

``write_project(dest)`` lays out::

    dest/pytest.ini
    dest/conftest.py
    dest/minilib/        10 modules: text utilities, numeric algorithms, recursion, geometry
                         classes, an inventory, graphs, an expression parser, bank accounts,
                         a matrix class and an LRU cache
    dest/tests/          10 test files, ~300 tests: plain functions, parametrized tests,
                         fixtures, unittest.TestCase classes and 3 tests that fail on purpose

Per-test work is sized like a real unit test of a small library: a few hundred to a few tens of
thousands of Python-level calls (roughly 1-10 ms on a current CPU), with loops calling small
helpers, recursion, methods and dunder methods, and some stdlib (re, heapq, collections) calls.
The project depends on the standard library only, so it runs on any Python 3.8+.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

PACKAGE = "minilib"
#: Tests written to fail on purpose (a realistic suite under repair has failures).
EXPECTED_FAILURES = 3

FILES: dict[str, str] = {}


def _add(path: str, source: str) -> None:
    FILES[path] = textwrap.dedent(source).lstrip("\n")


_add("pytest.ini", """
    [pytest]
    testpaths = tests
    pythonpath = .
""")

_add("conftest.py", '''
    import pytest

    from minilib.graphs import grid_graph
    from minilib.inventory import Inventory, Item

    SAMPLE_TEXT = (
        "It was the best of times, it was the worst of times, it was the age of wisdom, "
        "it was the age of foolishness, it was the epoch of belief, it was the epoch of "
        "incredulity, it was the season of Light, it was the season of Darkness, it was the "
        "spring of hope, it was the winter of despair, we had everything before us, we had "
        "nothing before us, we were all going direct to Heaven, we were all going direct the "
        "other way. In short, the period was so far like the present period, that some of its "
        "noisiest authorities insisted on its being received, for good or for evil, in the "
        "superlative degree of comparison only. "
    )


    @pytest.fixture
    def sample_text():
        return SAMPLE_TEXT * 3


    @pytest.fixture
    def stocked_inventory():
        inv = Inventory()
        for i in range(200):
            inv.add(Item("item-%03d" % i, price=1.5 + (i % 7) * 2.25, quantity=(i * 13) % 40))
        return inv


    @pytest.fixture(scope="module")
    def grid():
        return grid_graph(20, 20)
''')

_add("minilib/__init__.py", '''
    """minilib: a small library of algorithms and models, used as a benchmark subject."""

    __version__ = "1.0.0"
''')

_add("minilib/textutils.py", '''
    """String processing helpers."""

    import re
    from collections import Counter

    _WORD_RE = re.compile(r"[A-Za-z']+")
    _SENTENCE_RE = re.compile(r"(?<=[.!?])\\s+")
    VOWELS = frozenset("aeiouAEIOU")
    SMALL_WORDS = frozenset(["a", "an", "and", "of", "the", "to", "in", "on", "or", "for"])


    def normalize_whitespace(text):
        return " ".join(text.split())


    def words(text):
        return [w.lower() for w in _WORD_RE.findall(text)]


    def sentences(text):
        return [s for s in _SENTENCE_RE.split(text.strip()) if s]


    def is_vowel(ch):
        return ch in VOWELS


    def count_vowels(text):
        total = 0
        for ch in text:
            if is_vowel(ch):
                total += 1
        return total


    def slugify(text):
        out = []
        for ch in text.lower():
            if ch.isalnum():
                out.append(ch)
            elif out and out[-1] != "-":
                out.append("-")
        return "".join(out).strip("-")


    def word_frequencies(text, top=None):
        return Counter(words(text)).most_common(top)


    def shift_char(ch, k):
        if "a" <= ch <= "z":
            return chr((ord(ch) - 97 + k) % 26 + 97)
        if "A" <= ch <= "Z":
            return chr((ord(ch) - 65 + k) % 26 + 65)
        return ch


    def caesar(text, k):
        return "".join(shift_char(ch, k) for ch in text)


    def is_palindrome(text):
        cleaned = [ch.lower() for ch in text if ch.isalnum()]
        return cleaned == cleaned[::-1]


    def _min3(a, b, c):
        return a if a <= b and a <= c else (b if b <= c else c)


    def levenshtein(a, b):
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                cost = 0 if ca == cb else 1
                current.append(_min3(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
            previous = current
        return previous[-1]


    def wrap(text, width):
        lines, line = [], ""
        for word in text.split():
            if not line:
                line = word
            elif len(line) + 1 + len(word) <= width:
                line += " " + word
            else:
                lines.append(line)
                line = word
        if line:
            lines.append(line)
        return lines


    def title_case(text):
        result = []
        for i, word in enumerate(text.lower().split()):
            if i and word in SMALL_WORDS:
                result.append(word)
            else:
                result.append(word[:1].upper() + word[1:])
        return " ".join(result)


    def rle_encode(text):
        if not text:
            return []
        runs, current, count = [], text[0], 1
        for ch in text[1:]:
            if ch == current:
                count += 1
            else:
                runs.append((current, count))
                current, count = ch, 1
        runs.append((current, count))
        return runs


    def rle_decode(runs):
        return "".join(ch * n for ch, n in runs)


    def syllables(word):
        count, previous_vowel = 0, False
        for ch in word:
            vowel = is_vowel(ch)
            if vowel and not previous_vowel:
                count += 1
            previous_vowel = vowel
        if word.endswith("e") and count > 1:
            count -= 1
        return max(count, 1)


    def readability(text):
        """Flesch reading ease of ``text``."""
        ws = words(text)
        n_sentences = max(len(sentences(text)), 1)
        n_syllables = sum(syllables(w) for w in ws)
        n_words = max(len(ws), 1)
        return 206.835 - 1.015 * (n_words / n_sentences) - 84.6 * (n_syllables / n_words)
''')

_add("minilib/numeric.py", '''
    """Small numeric algorithms."""

    import math


    def gcd(a, b):
        while b:
            a, b = b, a % b
        return abs(a)


    def lcm(a, b):
        return abs(a * b) // gcd(a, b) if a and b else 0


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


    def primes_up_to(limit):
        sieve = bytearray([1]) * (limit + 1)
        sieve[0:2] = b"\\x00\\x00"
        for i in range(2, int(limit ** 0.5) + 1):
            if sieve[i]:
                sieve[i * i::i] = bytearray(len(range(i * i, limit + 1, i)))
        return [i for i, flag in enumerate(sieve) if flag]


    def factorize(n):
        factors, d = [], 2
        while d * d <= n:
            while n % d == 0:
                factors.append(d)
                n //= d
            d += 1
        if n > 1:
            factors.append(n)
        return factors


    def fib(n):
        a, b = 0, 1
        for _ in range(n):
            a, b = b, a + b
        return a


    def newton_sqrt(x, tolerance=1e-12):
        if x == 0:
            return 0.0
        guess = x if x > 1 else 1.0
        while True:
            better = (guess + x / guess) / 2
            if abs(better - guess) < tolerance:
                return better
            guess = better


    def mean(values):
        return sum(values) / len(values)


    def median(values):
        ordered = sorted(values)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


    def variance(values):
        m = mean(values)
        return sum((v - m) ** 2 for v in values) / len(values)


    def stdev(values):
        return math.sqrt(variance(values))


    def moving_average(values, window):
        return [mean(values[i:i + window]) for i in range(len(values) - window + 1)]


    def trapezoid(f, a, b, steps=200):
        h = (b - a) / steps
        total = (f(a) + f(b)) / 2
        for i in range(1, steps):
            total += f(a + i * h)
        return total * h


    def collatz_length(n):
        length = 1
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            length += 1
        return length


    def longest_collatz(limit):
        best, best_len = 1, 1
        for n in range(1, limit):
            length = collatz_length(n)
            if length > best_len:
                best, best_len = n, length
        return best, best_len
''')

_add("minilib/recursion.py", '''
    """Recursive algorithms."""


    def permutations(items):
        if len(items) <= 1:
            return [list(items)]
        result = []
        for i, item in enumerate(items):
            for rest in permutations(items[:i] + items[i + 1:]):
                result.append([item] + rest)
        return result


    def _safe(queens, col):
        row = len(queens)
        for r, c in enumerate(queens):
            if c == col or abs(c - col) == row - r:
                return False
        return True


    def n_queens(n, queens=None):
        queens = [] if queens is None else queens
        if len(queens) == n:
            return 1
        count = 0
        for col in range(n):
            if _safe(queens, col):
                queens.append(col)
                count += n_queens(n, queens)
                queens.pop()
        return count


    def hanoi(n, source="A", target="C", spare="B", moves=None):
        moves = [] if moves is None else moves
        if n:
            hanoi(n - 1, source, spare, target, moves)
            moves.append((source, target))
            hanoi(n - 1, spare, target, source, moves)
        return moves


    def flatten(nested):
        out = []
        for item in nested:
            if isinstance(item, (list, tuple)):
                out.extend(flatten(item))
            else:
                out.append(item)
        return out


    def power_set(items):
        if not items:
            return [[]]
        rest = power_set(items[1:])
        return rest + [[items[0]] + subset for subset in rest]


    def merge(left, right):
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


    def merge_sort(values):
        if len(values) <= 1:
            return list(values)
        mid = len(values) // 2
        return merge(merge_sort(values[:mid]), merge_sort(values[mid:]))


    def quick_sort(values):
        if len(values) <= 1:
            return list(values)
        pivot = values[len(values) // 2]
        return (quick_sort([v for v in values if v < pivot])
                + [v for v in values if v == pivot]
                + quick_sort([v for v in values if v > pivot]))


    def binary_search(values, target, lo=0, hi=None):
        hi = len(values) - 1 if hi is None else hi
        if lo > hi:
            return -1
        mid = (lo + hi) // 2
        if values[mid] == target:
            return mid
        if values[mid] < target:
            return binary_search(values, target, mid + 1, hi)
        return binary_search(values, target, lo, mid - 1)


    def ackermann(m, n):
        if m == 0:
            return n + 1
        if n == 0:
            return ackermann(m - 1, 1)
        return ackermann(m - 1, ackermann(m, n - 1))


    def pseudo_random(seed, count):
        """A linear congruential generator: deterministic data for the tests."""
        values, state = [], seed
        for _ in range(count):
            state = (1103515245 * state + 12345) % 2 ** 31
            values.append(state % 1000)
        return values
''')

_add("minilib/geometry.py", '''
    """Geometry classes."""

    import math


    class Point:
        __slots__ = ("x", "y")

        def __init__(self, x, y):
            self.x = x
            self.y = y

        def __sub__(self, other):
            return Point(self.x - other.x, self.y - other.y)

        def __eq__(self, other):
            return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

        def __hash__(self):
            return hash((self.x, self.y))

        def __lt__(self, other):
            return (self.x, self.y) < (other.x, other.y)

        def cross(self, other):
            return self.x * other.y - self.y * other.x

        def distance(self, other):
            return math.hypot(self.x - other.x, self.y - other.y)

        def __repr__(self):
            return "Point(%r, %r)" % (self.x, self.y)


    class Shape:
        name = "shape"

        def area(self):
            raise NotImplementedError

        def perimeter(self):
            raise NotImplementedError

        def describe(self):
            return "%s area=%.2f perimeter=%.2f" % (self.name, self.area(), self.perimeter())


    class Circle(Shape):
        name = "circle"

        def __init__(self, radius):
            if radius < 0:
                raise ValueError("negative radius")
            self.radius = radius

        def area(self):
            return math.pi * self.radius ** 2

        def perimeter(self):
            return 2 * math.pi * self.radius

        def scaled(self, factor):
            return Circle(self.radius * factor)


    class Rectangle(Shape):
        name = "rectangle"

        def __init__(self, width, height):
            self.width = width
            self.height = height

        def area(self):
            return self.width * self.height

        def perimeter(self):
            return 2 * (self.width + self.height)

        def scaled(self, factor):
            return Rectangle(self.width * factor, self.height * factor)


    class Square(Rectangle):
        name = "square"

        def __init__(self, side):
            super().__init__(side, side)


    class Polygon(Shape):
        name = "polygon"

        def __init__(self, points):
            self.points = [p if isinstance(p, Point) else Point(*p) for p in points]

        def edges(self):
            pts = self.points
            return [(pts[i], pts[(i + 1) % len(pts)]) for i in range(len(pts))]

        def area(self):
            return abs(sum(a.cross(b) for a, b in self.edges())) / 2

        def perimeter(self):
            return sum(a.distance(b) for a, b in self.edges())


    def convex_hull(points):
        pts = sorted(set(p if isinstance(p, Point) else Point(*p) for p in points))
        if len(pts) <= 2:
            return pts

        def half(seq):
            hull = []
            for p in seq:
                while len(hull) >= 2 and (hull[-1] - hull[-2]).cross(p - hull[-2]) <= 0:
                    hull.pop()
                hull.append(p)
            return hull

        lower, upper = half(pts), half(reversed(pts))
        return lower[:-1] + upper[:-1]


    def bounding_box(points):
        xs = [p.x for p in points]
        ys = [p.y for p in points]
        return Rectangle(max(xs) - min(xs), max(ys) - min(ys))


    def total_area(shapes):
        return sum(shape.area() for shape in shapes)
''')

_add("minilib/inventory.py", '''
    """An inventory of items with prices and quantities."""


    class OutOfStock(Exception):
        pass


    class Item:
        def __init__(self, name, price, quantity=0):
            self.name = name
            self.price = price
            self.quantity = quantity

        @property
        def value(self):
            return self.price * self.quantity

        def __repr__(self):
            return "Item(%r, %r, %r)" % (self.name, self.price, self.quantity)


    class Inventory:
        def __init__(self):
            self._items = {}
            self.log = []

        def __len__(self):
            return len(self._items)

        def __contains__(self, name):
            return name in self._items

        def add(self, item):
            existing = self._items.get(item.name)
            if existing is None:
                self._items[item.name] = item
            else:
                existing.quantity += item.quantity
            self.log.append(("add", item.name, item.quantity))

        def remove(self, name, quantity):
            item = self._items.get(name)
            if item is None or item.quantity < quantity:
                raise OutOfStock(name)
            item.quantity -= quantity
            self.log.append(("remove", name, quantity))
            return item

        def get(self, name):
            return self._items[name]

        def total_value(self):
            return sum(item.value for item in self._items.values())

        def find(self, predicate):
            return [item for item in self._items.values() if predicate(item)]

        def low_stock(self, threshold):
            return self.find(lambda item: item.quantity < threshold)

        def restock(self, threshold, amount):
            restocked = []
            for item in self.low_stock(threshold):
                item.quantity += amount
                self.log.append(("restock", item.name, amount))
                restocked.append(item.name)
            return restocked

        def apply_discount(self, percent):
            for item in self._items.values():
                item.price = round(item.price * (100 - percent) / 100, 2)

        def report(self):
            lines = []
            for item in sorted(self._items.values(), key=lambda i: (-i.value, i.name)):
                lines.append("%-12s %6d x %8.2f = %10.2f" % (item.name, item.quantity, item.price,
                                                            item.value))
            return lines
''')

_add("minilib/graphs.py", '''
    """Graphs: traversal, shortest paths, topological order."""

    import heapq
    from collections import deque


    class Graph:
        def __init__(self, directed=False):
            self.directed = directed
            self.adjacency = {}

        def add_node(self, node):
            self.adjacency.setdefault(node, {})

        def add_edge(self, a, b, weight=1):
            self.add_node(a)
            self.add_node(b)
            self.adjacency[a][b] = weight
            if not self.directed:
                self.adjacency[b][a] = weight

        def neighbors(self, node):
            return self.adjacency.get(node, {})

        def nodes(self):
            return list(self.adjacency)

        def bfs(self, start):
            seen, order, queue = {start}, [], deque([start])
            while queue:
                node = queue.popleft()
                order.append(node)
                for nxt in self.neighbors(node):
                    if nxt not in seen:
                        seen.add(nxt)
                        queue.append(nxt)
            return order

        def dfs(self, start, seen=None):
            seen = set() if seen is None else seen
            seen.add(start)
            order = [start]
            for nxt in self.neighbors(start):
                if nxt not in seen:
                    order.extend(self.dfs(nxt, seen))
            return order

        def shortest_path(self, start, goal):
            dist, previous = {start: 0}, {}
            heap = [(0, start)]
            while heap:
                d, node = heapq.heappop(heap)
                if node == goal:
                    break
                if d > dist.get(node, float("inf")):
                    continue
                for nxt, weight in self.neighbors(node).items():
                    nd = d + weight
                    if nd < dist.get(nxt, float("inf")):
                        dist[nxt] = nd
                        previous[nxt] = node
                        heapq.heappush(heap, (nd, nxt))
            if goal not in dist:
                return None, []
            path = [goal]
            while path[-1] != start:
                path.append(previous[path[-1]])
            return dist[goal], path[::-1]

        def topological_order(self):
            indegree = {node: 0 for node in self.adjacency}
            for node in self.adjacency:
                for nxt in self.neighbors(node):
                    indegree[nxt] += 1
            ready = sorted(node for node, deg in indegree.items() if deg == 0)
            order = []
            while ready:
                node = ready.pop(0)
                order.append(node)
                for nxt in sorted(self.neighbors(node)):
                    indegree[nxt] -= 1
                    if indegree[nxt] == 0:
                        ready.append(nxt)
            if len(order) != len(self.adjacency):
                raise ValueError("graph has a cycle")
            return order

        def components(self):
            seen, result = set(), []
            for node in self.adjacency:
                if node not in seen:
                    part = self.bfs(node)
                    seen.update(part)
                    result.append(part)
            return result


    def grid_graph(width, height):
        g = Graph()
        for x in range(width):
            for y in range(height):
                if x + 1 < width:
                    g.add_edge((x, y), (x + 1, y), weight=1 + (x * y) % 3)
                if y + 1 < height:
                    g.add_edge((x, y), (x, y + 1), weight=1 + (x + y) % 4)
        return g


    def chain_dag(n, fan=3):
        g = Graph(directed=True)
        for i in range(n):
            g.add_node(i)
            for k in range(1, fan + 1):
                if i + k < n:
                    g.add_edge(i, i + k)
        return g
''')

_add("minilib/expr.py", '''
    """A tokenizer and recursive-descent evaluator for arithmetic expressions."""

    import operator

    BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "%": operator.mod, "^": operator.pow}


    class ParseError(Exception):
        pass


    class Token:
        __slots__ = ("kind", "text")

        def __init__(self, kind, text):
            self.kind = kind
            self.text = text

        def __repr__(self):
            return "Token(%s, %r)" % (self.kind, self.text)


    def tokenize(source):
        tokens, i = [], 0
        while i < len(source):
            ch = source[i]
            if ch.isspace():
                i += 1
            elif ch.isdigit() or ch == ".":
                j = i
                while j < len(source) and (source[j].isdigit() or source[j] == "."):
                    j += 1
                tokens.append(Token("num", source[i:j]))
                i = j
            elif ch.isalpha():
                j = i
                while j < len(source) and source[j].isalnum():
                    j += 1
                tokens.append(Token("name", source[i:j]))
                i = j
            elif ch in BINARY or ch in "()":
                tokens.append(Token("op", ch))
                i += 1
            else:
                raise ParseError("unexpected %r" % ch)
        return tokens


    class Parser:
        def __init__(self, tokens, env=None):
            self.tokens = tokens
            self.pos = 0
            self.env = env or {}

        def peek(self):
            return self.tokens[self.pos] if self.pos < len(self.tokens) else None

        def take(self, text=None):
            token = self.peek()
            if token is None or (text is not None and token.text != text):
                raise ParseError("expected %r" % (text or "token"))
            self.pos += 1
            return token

        def expression(self):
            value = self.term()
            while self.peek() is not None and self.peek().text in "+-":
                op = self.take().text
                value = BINARY[op](value, self.term())
            return value

        def term(self):
            value = self.power()
            while self.peek() is not None and self.peek().text in "*/%":
                op = self.take().text
                value = BINARY[op](value, self.power())
            return value

        def power(self):
            base = self.factor()
            if self.peek() is not None and self.peek().text == "^":
                self.take()
                return BINARY["^"](base, self.power())
            return base

        def factor(self):
            token = self.take()
            if token.text == "-":
                return -self.factor()
            if token.text == "(":
                value = self.expression()
                self.take(")")
                return value
            if token.kind == "num":
                return float(token.text) if "." in token.text else int(token.text)
            if token.kind == "name":
                if token.text not in self.env:
                    raise ParseError("unknown name %r" % token.text)
                return self.env[token.text]
            raise ParseError("unexpected %r" % token.text)


    def evaluate(source, env=None):
        parser = Parser(tokenize(source), env)
        value = parser.expression()
        if parser.peek() is not None:
            raise ParseError("trailing input")
        return value


    def build_sum(terms):
        return " + ".join("(%d * x - %d)" % (i, i % 5) for i in range(1, terms + 1))
''')

_add("minilib/bank.py", '''
    """Bank accounts with transactions and interest."""


    class InsufficientFunds(Exception):
        pass


    class Transaction:
        __slots__ = ("kind", "amount", "balance")

        def __init__(self, kind, amount, balance):
            self.kind = kind
            self.amount = amount
            self.balance = balance


    class Account:
        def __init__(self, owner, balance=0.0, rate=0.0):
            self.owner = owner
            self.balance = balance
            self.rate = rate
            self.history = []

        def _record(self, kind, amount):
            self.history.append(Transaction(kind, amount, self.balance))

        def deposit(self, amount):
            if amount <= 0:
                raise ValueError("deposit must be positive")
            self.balance += amount
            self._record("deposit", amount)

        def withdraw(self, amount):
            if amount > self.balance:
                raise InsufficientFunds("%s has %.2f, needs %.2f" % (self.owner, self.balance, amount))
            self.balance -= amount
            self._record("withdraw", amount)

        def add_interest(self, months=1):
            for _ in range(months):
                interest = round(self.balance * self.rate / 12, 2)
                self.balance += interest
                self._record("interest", interest)

        def statement(self):
            return ["%-9s %10.2f %12.2f" % (t.kind, t.amount, t.balance) for t in self.history]


    class Bank:
        def __init__(self):
            self.accounts = {}

        def open(self, owner, balance=0.0, rate=0.0):
            account = self.accounts[owner] = Account(owner, balance, rate)
            return account

        def transfer(self, source, target, amount):
            self.accounts[source].withdraw(amount)
            self.accounts[target].deposit(amount)

        def total_deposits(self):
            return round(sum(a.balance for a in self.accounts.values()), 2)

        def richest(self):
            return max(self.accounts.values(), key=lambda a: a.balance).owner


    def simulate(n_accounts, n_transfers, seed=7):
        bank = Bank()
        for i in range(n_accounts):
            bank.open("acct%d" % i, balance=1000.0, rate=0.03)
        state = seed
        for _ in range(n_transfers):
            state = (state * 1103515245 + 12345) % 2 ** 31
            a, b = state % n_accounts, (state // 7) % n_accounts
            if a != b:
                try:
                    bank.transfer("acct%d" % a, "acct%d" % b, float(1 + state % 300))
                except InsufficientFunds:
                    pass
        return bank
''')

_add("minilib/matrix.py", '''
    """A small dense matrix class."""


    class Matrix:
        def __init__(self, rows):
            self.rows = [list(r) for r in rows]
            self.n = len(self.rows)
            self.m = len(self.rows[0]) if self.rows else 0

        @classmethod
        def identity(cls, n):
            return cls([[1 if i == j else 0 for j in range(n)] for i in range(n)])

        @classmethod
        def filled(cls, n, m, fn):
            return cls([[fn(i, j) for j in range(m)] for i in range(n)])

        def __eq__(self, other):
            return isinstance(other, Matrix) and self.rows == other.rows

        def __getitem__(self, index):
            i, j = index
            return self.rows[i][j]

        def __add__(self, other):
            return Matrix([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(self.rows, other.rows)])

        def __mul__(self, other):
            if isinstance(other, Matrix):
                cols = other.transpose().rows
                return Matrix([[_dot(r, c) for c in cols] for r in self.rows])
            return Matrix([[a * other for a in r] for r in self.rows])

        def transpose(self):
            return Matrix([list(col) for col in zip(*self.rows)])

        def minor(self, i, j):
            return Matrix([r[:j] + r[j + 1:] for k, r in enumerate(self.rows) if k != i])

        def determinant(self):
            if self.n == 1:
                return self.rows[0][0]
            if self.n == 2:
                (a, b), (c, d) = self.rows
                return a * d - b * c
            return sum((-1) ** j * self.rows[0][j] * self.minor(0, j).determinant()
                       for j in range(self.n))

        def power(self, k):
            result, base = Matrix.identity(self.n), self
            while k:
                if k & 1:
                    result = result * base
                base = base * base
                k >>= 1
            return result

        def trace(self):
            return sum(self.rows[i][i] for i in range(self.n))


    def _dot(a, b):
        return sum(x * y for x, y in zip(a, b))
''')

_add("minilib/cache.py", '''
    """An LRU cache and a memoizing decorator built on it."""

    from collections import OrderedDict
    from functools import wraps


    class LRUCache:
        def __init__(self, capacity):
            self.capacity = capacity
            self.data = OrderedDict()
            self.hits = 0
            self.misses = 0

        def get(self, key, default=None):
            if key in self.data:
                self.data.move_to_end(key)
                self.hits += 1
                return self.data[key]
            self.misses += 1
            return default

        def put(self, key, value):
            self.data[key] = value
            self.data.move_to_end(key)
            if len(self.data) > self.capacity:
                self.data.popitem(last=False)

        def __len__(self):
            return len(self.data)


    _MISSING = object()


    def memoize(capacity=128):
        def decorate(fn):
            cache = LRUCache(capacity)

            @wraps(fn)
            def wrapper(*args):
                value = cache.get(args, _MISSING)
                if value is _MISSING:
                    value = fn(*args)
                    cache.put(args, value)
                return value

            wrapper.cache = cache
            return wrapper

        return decorate


    def make_fib(capacity):
        @memoize(capacity)
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)

        return fib


    def edit_distance_memo(a, b):
        @memoize(4096)
        def d(i, j):
            if i == 0 or j == 0:
                return i + j
            return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

        return d(len(a), len(b))
''')

# -------------------------------------------------------------------------------------------------
# Tests

_add("tests/test_textutils.py", '''
    import pytest

    from minilib import textutils as t

    PAIRS = [
        ("kitten sitting on the mat", "sitting kitten on a mat"),
        ("the quick brown fox jumps", "the quack brown fix jumped"),
        ("levenshtein distance here", "levenstein distancing there"),
        ("abcdefghijklmnopqrstuvwxy", "zyxwvutsrqponmlkjihgfedcba"),
        ("pytest parametrize works", "pytest parameterise worked"),
        ("a fairly long sentence of words", "a fairly short sentence of birds"),
    ]


    @pytest.mark.parametrize("a,b", PAIRS)
    def test_levenshtein_symmetric(a, b):
        assert t.levenshtein(a * 2, b * 2) == t.levenshtein(b * 2, a * 2)


    @pytest.mark.parametrize("a,b", PAIRS)
    def test_levenshtein_bounds(a, b):
        d = t.levenshtein(a * 3, b * 3)
        assert 3 * abs(len(a) - len(b)) <= d <= 3 * max(len(a), len(b))


    @pytest.mark.parametrize("k", range(0, 26, 2))
    def test_caesar_roundtrip(sample_text, k):
        text = sample_text * 3
        assert t.caesar(t.caesar(text, k), 26 - k) == text


    @pytest.mark.parametrize("width", [20, 30, 40, 50, 60, 72, 80, 100])
    def test_wrap_respects_width(sample_text, width):
        text = t.title_case(sample_text * 6)
        lines = t.wrap(text, width)
        assert all(len(line) <= width for line in lines)
        assert " ".join(lines) == t.normalize_whitespace(text)


    def test_word_frequencies(sample_text):
        top = t.word_frequencies(sample_text * 4, 3)
        assert top[0][0] in ("it", "the", "was")
        assert sum(t.syllables(word) for word, _ in t.word_frequencies(sample_text)) > 0


    def test_count_vowels(sample_text):
        assert t.count_vowels(sample_text) == sum(t.is_vowel(c) for c in sample_text)


    @pytest.mark.parametrize("text", ["A man, a plan, a canal: Panama", "Was it a car or a cat I saw",
                                      "No lemon, no melon", "Step on no pets"])
    def test_palindromes(text):
        for k in range(3):
            assert t.is_palindrome(t.caesar(text * 25, k))


    def test_slugify(sample_text):
        slug = t.slugify(sample_text * 2)
        assert "--" not in slug and slug == slug.lower()


    def test_title_case(sample_text):
        titled = [t.title_case(s) for s in t.sentences(sample_text * 4)]
        assert all(line.split()[0] in ("It", "In") for line in titled)
        assert t.count_vowels(" ".join(titled)) == t.count_vowels(sample_text * 4)


    @pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
    def test_rle_roundtrip(sample_text, n):
        text = "".join(ch * n for ch in sample_text * 2)
        assert t.rle_decode(t.rle_encode(text)) == text


    def test_readability(sample_text):
        score = t.readability(sample_text)
        assert 0 < score < 120


    def test_sentences(sample_text):
        parts = t.sentences(sample_text)
        assert len(parts) == 6
        assert all(t.syllables(w) >= 1 for part in parts for w in t.words(part))


    def test_levenshtein_known_bug():
        """Fails on purpose: a wrong expectation, like a suite under repair has."""
        assert t.levenshtein("flaw", "lawn") == 3
''')

_add("tests/test_numeric.py", '''
    import math

    import pytest

    from minilib import numeric as n


    @pytest.mark.parametrize("limit", [1000, 2000, 4000, 6000, 8000, 10000])
    def test_sieve_matches_trial_division(limit):
        primes = n.primes_up_to(limit)
        assert primes == [k for k in range(limit + 1) if n.is_prime(k)]


    @pytest.mark.parametrize("value", [360, 1001, 9973, 65536, 123456, 999999, 1234567, 7919 * 13])
    def test_factorize(value):
        for k in range(300):
            factors = n.factorize(value + k)
            assert math.prod(factors) == value + k
            assert all(n.is_prime(f) for f in factors)


    @pytest.mark.parametrize("a", range(10, 400, 40))
    def test_gcd_lcm(a):
        for b in range(1, 1500):
            assert n.gcd(a, b) * n.lcm(a, b) == a * b


    @pytest.mark.parametrize("x", [0.5, 2.0, 10.0, 1234.5, 1e6])
    def test_newton_sqrt(x):
        for k in range(1000):
            assert math.isclose(n.newton_sqrt(x + k), math.sqrt(x + k), rel_tol=1e-9)


    @pytest.mark.parametrize("window", [2, 3, 5, 10])
    def test_moving_average(window):
        values = [math.sin(i / 7) * 100 for i in range(3000)]
        averages = n.moving_average(values, window)
        assert len(averages) == len(values) - window + 1


    def test_statistics():
        values = [((i * 37) % 101) / 3 for i in range(5000)]
        assert min(values) <= n.median(values) <= max(values)
        assert n.stdev(values) > 0


    @pytest.mark.parametrize("steps", [4000, 8000, 12000, 16000])
    def test_trapezoid(steps):
        assert abs(n.trapezoid(math.sin, 0, math.pi, steps) - 2) < 1e-3


    @pytest.mark.parametrize("limit", [300, 600, 1000])
    def test_longest_collatz(limit):
        best, length = n.longest_collatz(limit)
        assert n.collatz_length(best) == length


    @pytest.mark.parametrize("k", range(0, 200, 20))
    def test_fib_identity(k):
        for j in range(k, k + 120):
            assert n.fib(2 * j) == n.fib(j) * (2 * n.fib(j + 1) - n.fib(j))
''')

_add("tests/test_recursion.py", '''
    import pytest

    from minilib import recursion as r

    DATA = r.pseudo_random(42, 4000)


    @pytest.mark.parametrize("size", [5, 6, 7])
    def test_permutations_count(size):
        perms = r.permutations(list(range(size)))
        assert len(perms) == [1, 1, 2, 6, 24, 120, 720, 5040][size]


    @pytest.mark.parametrize("n,expected", [(4, 2), (5, 10), (6, 4), (7, 40)])
    def test_n_queens(n, expected):
        assert r.n_queens(n) == expected


    @pytest.mark.parametrize("disks", range(9, 15))
    def test_hanoi_moves(disks):
        assert len(r.hanoi(disks)) == 2 ** disks - 1


    @pytest.mark.parametrize("seed", range(8))
    def test_merge_sort(seed):
        data = r.pseudo_random(seed, 2000)
        assert r.merge_sort(data) == sorted(data)


    @pytest.mark.parametrize("seed", range(8))
    def test_quick_sort(seed):
        data = r.pseudo_random(seed + 100, 3000)
        assert r.quick_sort(data) == sorted(data)


    @pytest.mark.parametrize("target", range(0, 1000, 50))
    def test_binary_search(target):
        ordered = sorted(DATA)
        for value in ordered[::2]:
            assert ordered[r.binary_search(ordered, value)] == value


    def test_flatten():
        nested = [[i, [i + 1, (i + 2, [i + 3])]] for i in range(400)]
        assert len(r.flatten(nested)) == 1600


    @pytest.mark.parametrize("size", [8, 10, 12])
    def test_power_set(size):
        assert len(r.power_set(list(range(size)))) == 2 ** size


    @pytest.mark.parametrize("n", [2, 3, 4, 5])
    def test_ackermann(n):
        assert r.ackermann(2, n * 12) == 2 * (n * 12) + 3
''')

_add("tests/test_geometry.py", '''
    import math
    import unittest

    from minilib import geometry as g
    from minilib.recursion import pseudo_random


    def cloud(seed, count):
        xs = pseudo_random(seed, count)
        ys = pseudo_random(seed + 1, count)
        return [g.Point(x, y) for x, y in zip(xs, ys)]


    class ShapeTests(unittest.TestCase):
        def setUp(self):
            self.shapes = []
            for i in range(1, 300):
                self.shapes.append(g.Circle(i / 10))
                self.shapes.append(g.Rectangle(i, i + 1))
                self.shapes.append(g.Square(i / 3))

        def test_total_area_positive(self):
            self.assertGreater(g.total_area(self.shapes), 0)

        def test_scaling_quadruples_area(self):
            for shape in self.shapes[::2]:
                if hasattr(shape, "scaled"):
                    self.assertAlmostEqual(shape.scaled(2).area(), 4 * shape.area(), places=6)

        def test_describe(self):
            lines = [s.describe() for s in self.shapes]
            self.assertEqual(len(lines), len(self.shapes))

        def test_square_is_rectangle(self):
            for i in range(1, 200):
                sq = g.Square(i)
                self.assertEqual(sq.area(), g.Rectangle(i, i).area())

        def test_negative_radius(self):
            with self.assertRaises(ValueError):
                g.Circle(-1)

        def test_perimeters(self):
            for s in self.shapes:
                self.assertGreater(s.perimeter(), 0)


    class PolygonTests(unittest.TestCase):
        def test_regular_polygon_area_approaches_circle(self):
            for sides in range(6, 200, 6):
                pts = [(math.cos(2 * math.pi * k / sides), math.sin(2 * math.pi * k / sides))
                       for k in range(sides)]
                self.assertLess(g.Polygon(pts).area(), math.pi)

        def test_square_polygon(self):
            for size in range(1, 150):
                poly = g.Polygon([(0, 0), (size, 0), (size, size), (0, size)])
                self.assertEqual(poly.area(), size * size)
                self.assertEqual(poly.perimeter(), 4 * size)


    class HullTests(unittest.TestCase):
        def _check_hull(self, seed):
            pts = cloud(seed, 500)
            hull = g.convex_hull(pts)
            hull_area = g.Polygon(hull).area()
            box = g.bounding_box(pts)
            self.assertLessEqual(hull_area, box.area())
            self.assertGreater(len(hull), 3)

        def test_hull_0(self):
            self._check_hull(0)

        def test_hull_1(self):
            self._check_hull(1)

        def test_hull_2(self):
            self._check_hull(2)

        def test_hull_3(self):
            self._check_hull(3)

        def test_hull_4(self):
            self._check_hull(4)

        def test_hull_5(self):
            self._check_hull(5)

        def test_hull_6(self):
            self._check_hull(6)

        def test_hull_7(self):
            self._check_hull(7)

        def test_hull_of_square_grid(self):
            pts = [(x, y) for x in range(25) for y in range(25)]
            self.assertEqual(len(g.convex_hull(pts)), 4)

        def test_distance_triangle_inequality(self):
            pts = cloud(9, 120)
            for a, b, c in zip(pts, pts[1:], pts[2:]):
                self.assertLessEqual(a.distance(c), a.distance(b) + b.distance(c) + 1e-9)
''')

_add("tests/test_inventory.py", '''
    import pytest

    from minilib.inventory import Inventory, Item, OutOfStock


    def test_total_value(stocked_inventory):
        expected = sum(stocked_inventory.get("item-%03d" % i).value for i in range(len(stocked_inventory)))
        assert stocked_inventory.total_value() == pytest.approx(expected)


    @pytest.mark.parametrize("threshold", [5, 10, 20, 30, 40])
    def test_restock(stocked_inventory, threshold):
        restocked = stocked_inventory.restock(threshold, 25)
        assert all(stocked_inventory.get(name).quantity >= 25 for name in restocked)


    @pytest.mark.parametrize("percent", [0, 5, 10, 25, 50])
    def test_discount(stocked_inventory, percent):
        before = stocked_inventory.total_value()
        for _ in range(20):
            stocked_inventory.apply_discount(percent)
        assert stocked_inventory.total_value() <= before


    @pytest.mark.parametrize("rounds", [1, 5, 10, 20])
    def test_remove_and_report(stocked_inventory, rounds):
        for r in range(rounds):
            for i in range(200):
                name = "item-%03d" % i
                try:
                    stocked_inventory.remove(name, 1 + r % 3)
                except OutOfStock:
                    pass
        report = stocked_inventory.report()
        assert len(report) == len(stocked_inventory) == 200


    def test_add_merges():
        inv = Inventory()
        for i in range(5000):
            inv.add(Item("w%d" % (i % 50), 2.0, 1))
        assert len(inv) == 50
        assert all(item.quantity == 100 for item in inv.find(lambda item: True))


    def test_out_of_stock():
        inv = Inventory()
        inv.add(Item("x", 1.0, 1))
        with pytest.raises(OutOfStock):
            inv.remove("x", 2)


    def test_report_sorted_by_value(stocked_inventory):
        stocked_inventory.restock(15, 3)
        values = [float(line.split("=")[1]) for line in stocked_inventory.report()]
        assert values == sorted(values, reverse=True)


    def test_inventory_known_bug(stocked_inventory):
        """Fails on purpose: the low-stock threshold is exclusive, the test expects inclusive."""
        assert len(stocked_inventory.low_stock(0)) == 2
''')

_add("tests/test_graphs.py", '''
    import pytest

    from minilib.graphs import Graph, chain_dag, grid_graph


    @pytest.mark.parametrize("corner", [(0, 0), (19, 0), (0, 19), (19, 19), (5, 6), (10, 10)])
    def test_bfs_reaches_all(grid, corner):
        for _ in range(3):
            assert len(grid.bfs(corner)) == 400
            assert len(grid.components()) == 1


    @pytest.mark.parametrize("corner", [(0, 0), (19, 19), (3, 8)])
    def test_dfs_reaches_all(grid, corner):
        assert sorted(grid.dfs(corner)) == sorted(grid.nodes())


    GOALS = [(19, 19), (0, 19), (19, 0), (10, 10), (4, 15), (15, 4), (12, 17), (17, 12)]


    @pytest.mark.parametrize("goal", GOALS)
    def test_shortest_path(grid, goal):
        for start in [(0, 0), (0, 1), (1, 0)]:
            cost, path = grid.shortest_path(start, goal)
            assert path[0] == start and path[-1] == goal
            assert cost >= abs(goal[0] - start[0]) + abs(goal[1] - start[1])


    @pytest.mark.parametrize("size", [200, 400, 600, 800])
    def test_topological_order(size):
        dag = chain_dag(size)
        order = dag.topological_order()
        position = {node: i for i, node in enumerate(order)}
        for node in dag.nodes():
            for nxt in dag.neighbors(node):
                assert position[node] < position[nxt]


    def test_cycle_detected():
        g = Graph(directed=True)
        for i in range(30):
            g.add_edge(i, (i + 1) % 30)
        with pytest.raises(ValueError):
            g.topological_order()


    @pytest.mark.parametrize("parts", [2, 4, 8])
    def test_components(parts):
        g = Graph()
        for p in range(parts):
            for i in range(150):
                g.add_edge((p, i), (p, (i + 1) % 150))
        assert len(g.components()) == parts


    @pytest.mark.parametrize("w,h", [(10, 10), (20, 15), (30, 30)])
    def test_grid_build(w, h):
        g = grid_graph(w, h)
        assert len(g.nodes()) == w * h
''')

_add("tests/test_expr.py", '''
    import pytest

    from minilib.expr import ParseError, build_sum, evaluate, tokenize

    CASES = [
        ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("2 ^ 3 ^ 2", 512), ("-4 + 10 / 4", -1.5),
        ("7 % 4 + 2 * (3 - 1)", 7), ("((((1))))", 1), ("2 * x + y", 13), ("x ^ 2 - y ^ 2", 16),
        ("1.5 * 4 - 0.5", 5.5), ("-(3 - 5) * -2", -4), ("10 - 2 - 3", 5), ("100 / 10 / 5", 2),
    ]


    @pytest.mark.parametrize("source,expected", CASES)
    def test_evaluate(source, expected):
        env = {"x": 5, "y": 3}
        for _ in range(300):
            assert evaluate(source, env) == pytest.approx(expected)


    @pytest.mark.parametrize("terms", [10, 20, 40, 60, 80])
    def test_long_sum(terms):
        source = build_sum(terms)
        for x in range(8):
            expected = sum(i * x - i % 5 for i in range(1, terms + 1))
            assert evaluate(source, {"x": x}) == expected


    @pytest.mark.parametrize("bad", ["1 +", "(1 + 2", "2 $ 3", "1 2", "z + 1", ")"])
    def test_errors(bad):
        for _ in range(120):
            with pytest.raises(ParseError):
                evaluate(bad)


    def test_tokenize_counts():
        source = build_sum(100)
        assert len(tokenize(source)) == 100 * 8 - 1


    def test_expr_known_bug():
        """Fails on purpose: unary minus binds tighter than ^ in this grammar."""
        assert evaluate("-2 ^ 2") == -4
''')

_add("tests/test_bank.py", '''
    import unittest

    import pytest

    from minilib.bank import Account, Bank, InsufficientFunds, simulate


    class AccountTests(unittest.TestCase):
        def setUp(self):
            self.account = Account("ann", 100.0, rate=0.05)

        def test_deposits(self):
            for i in range(1, 1200):
                self.account.deposit(i)
            self.assertEqual(self.account.balance, 100.0 + 1199 * 1200 / 2)

        def test_withdrawals(self):
            for _ in range(600):
                self.account.deposit(10)
                self.account.withdraw(9)
            self.assertAlmostEqual(self.account.balance, 700.0)

        def test_overdraft(self):
            with self.assertRaises(InsufficientFunds):
                self.account.withdraw(1000)

        def test_negative_deposit(self):
            with self.assertRaises(ValueError):
                self.account.deposit(-5)

        def test_interest_compounds(self):
            self.account.add_interest(240)
            self.assertGreater(self.account.balance, 100.0 * 2.5)

        def test_statement(self):
            for i in range(800):
                self.account.deposit(i + 1)
            self.account.add_interest(12)
            self.assertEqual(len(self.account.statement()), 812)


    class BankTests(unittest.TestCase):
        def test_transfers_conserve_money(self):
            bank = simulate(20, 1500)
            self.assertAlmostEqual(bank.total_deposits(), 20 * 1000.0)

        def test_richest(self):
            bank = simulate(10, 800)
            owner = bank.richest()
            self.assertEqual(bank.accounts[owner].balance,
                             max(a.balance for a in bank.accounts.values()))

        def test_interest_for_all(self):
            bank = simulate(15, 400)
            for account in bank.accounts.values():
                account.add_interest(24)
            self.assertGreater(bank.total_deposits(), 15 * 1000.0)


    @pytest.mark.parametrize("n_accounts,n_transfers", [(5, 200), (10, 500), (20, 1000), (40, 2000),
                                                        (3, 900), (8, 1500)])
    def test_simulation_conserves(n_accounts, n_transfers):
        bank = simulate(n_accounts, n_transfers, seed=n_accounts)
        assert bank.total_deposits() == pytest.approx(n_accounts * 1000.0)


    def test_transfer_unknown_account():
        bank = Bank()
        bank.open("a", 10)
        with pytest.raises(KeyError):
            bank.transfer("a", "nobody", 5)
''')

_add("tests/test_matrix.py", '''
    import pytest

    from minilib.matrix import Matrix


    def make(n, seed):
        return Matrix.filled(n, n, lambda i, j: (i * 7 + j * 3 + seed) % 11 - 5)


    @pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
    def test_determinant_of_product(n):
        a, b = make(n, 1), make(n, 2)
        assert (a * b).determinant() == a.determinant() * b.determinant()


    @pytest.mark.parametrize("n", range(12, 22))
    def test_identity_is_neutral(n):
        a = make(n, n)
        assert a * Matrix.identity(n) == a
        assert Matrix.identity(n) * a == a


    @pytest.mark.parametrize("n", range(12, 22))
    def test_transpose_of_product(n):
        a, b = make(n, 3), make(n, 4)
        assert (a * b).transpose() == b.transpose() * a.transpose()


    @pytest.mark.parametrize("k", [1, 2, 5, 10, 20, 40])
    def test_fibonacci_by_matrix_power(k):
        for j in range(k, k + 30):
            q = Matrix([[1, 1], [1, 0]]).power(j)
            a, b = 0, 1
            for _ in range(j):
                a, b = b, a + b
            assert q[0, 1] == a


    @pytest.mark.parametrize("n", [8, 12, 16, 20])
    def test_addition_and_scaling(n):
        a = make(n, 5)
        assert (a + a) == a * 2
        assert (a * 3).trace() == 3 * a.trace()
''')

_add("tests/test_cache.py", '''
    import unittest

    import pytest

    from minilib.cache import LRUCache, edit_distance_memo, make_fib, memoize
    from minilib.textutils import levenshtein


    @pytest.mark.parametrize("capacity", [2, 8, 32, 128, 512])
    def test_lru_capacity(capacity):
        cache = LRUCache(capacity)
        for i in range(6000):
            cache.put(i % (capacity * 2), i)
            cache.get((i * 7) % (capacity * 2))
        assert len(cache) <= capacity


    @pytest.mark.parametrize("n", [50, 100, 200, 300])
    def test_memo_fib(n):
        for capacity in (8, 64, 1024):
            fib = make_fib(capacity)
            a, b = 0, 1
            for _ in range(n):
                a, b = b, a + b
            assert fib(n) == a


    @pytest.mark.parametrize("a,b", [("kitten", "sitting"), ("flaw", "lawn"), ("intention", "execution"),
                                     ("pytest", "unittest"), ("abcdefghij", "jihgfedcba")])
    def test_memo_edit_distance(a, b):
        assert edit_distance_memo(a * 2, b * 2) == levenshtein(a * 2, b * 2)


    class MemoizeTests(unittest.TestCase):
        def test_hits_counted(self):
            @memoize(64)
            def square(x):
                return x * x

            for _ in range(20):
                for i in range(50):
                    square(i)
            self.assertEqual(square.cache.misses, 50)
            self.assertEqual(square.cache.hits, 950)

        def test_eviction(self):
            calls = []

            @memoize(10)
            def ident(x):
                calls.append(x)
                return x

            for i in range(100):
                ident(i % 20)
            self.assertEqual(len(calls), 100)

        def test_default(self):
            cache = LRUCache(4)
            self.assertIsNone(cache.get("missing"))
            self.assertEqual(cache.misses, 1)
''')


def write_project(dest: Path) -> Path:
    """Write the project into ``dest`` (created if needed) and return it."""
    dest = Path(dest)
    for rel, source in FILES.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return dest


if __name__ == "__main__":  # pragma: no cover - manual use: python bench/synthetic_suite.py DEST
    import sys

    print(write_project(Path(sys.argv[1] if len(sys.argv) > 1 else "synthetic_project")))
