"""A deterministic local embedding of test code, and cosine similarity (seed 000 §8, no endpoint).

When no embeddings endpoint is configured, tests are embedded by feature hashing: the code is cut
into identifier and literal tokens (comments, docstrings and the test's own name dropped, so
two tests that do the same thing under different names look the same); each token and each pair
of adjacent tokens adds +1 or -1 (sign from the hash) to one of ``DIMENSIONS`` buckets chosen by
a BLAKE2 hash; the vector is L2-normalised. Similar code gives a cosine close to 1; unrelated
code near 0. It is stable across processes and versions (no Python ``hash``).
"""

from __future__ import annotations

import ast
import hashlib
import io
import math
import tokenize
from collections.abc import Sequence

__all__ = ["DIMENSIONS", "local_embedding", "cosine_similarity", "code_tokens"]

DIMENSIONS = 256


def _is_docstring(statement: object) -> bool:
    """Whether ``statement`` is a bare string (a docstring)."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def code_tokens(source: str) -> list[str]:
    """Names, operators and literals of ``source`` without comments, docstrings and the def name."""
    try:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and _is_docstring(body[0]):
                body.pop(0)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                node.name = "test"
        source = ast.unparse(tree)
    except (SyntaxError, ValueError):
        pass
    tokens = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
                tokens.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = source.split()
    return tokens


def _bucket(feature: str) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    value = int.from_bytes(digest, "big")
    return value % DIMENSIONS, 1.0 if (value >> 63) & 1 else -1.0


def local_embedding(source: str) -> list[float]:
    """The feature-hashed, L2-normalised embedding of ``source`` (module docstring); zeros if empty."""
    vector = [0.0] * DIMENSIONS
    tokens = code_tokens(source)
    features = tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]
    for feature in features:
        index, sign = _bucket(feature)
        vector[index] += sign
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """cos(a, b) = a·b / (|a| |b|); 0.0 when either vector is zero or the lengths differ."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
