"""The vector store of tests (seed 000 §8): DuckDB, embeddings in ``FLOAT[]`` columns.

One DuckDB file per testgen run (in its output folder), written by that run alone (DuckDB allows
one writing process per file; nothing else opens it while the run lasts). Table ``tests``: id,
origin ('existing' or 'generated'), name, code, the embedding (``FLOAT[]``) and its dimension.
Similarity is computed in DuckDB with ``array_cosine_similarity`` on the embedding cast to a
fixed-size ``FLOAT[n]`` array (the function is defined on arrays, the column is a list so any
model's dimension fits).

Embeddings: in LLM mode from the endpoint's embeddings API (``EQUISA_EMBEDDING_MODEL``, default
``text-embedding-3-small``); without an endpoint, or when that call fails (the reason is
returned), ``equisa_core.testgen.embedding.local_embedding``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import duckdb

from equisa_core.testgen.embedding import local_embedding
from tasks.llm import LLMConfig

__all__ = ["TestStore", "embed_texts", "DEFAULT_EMBEDDING_MODEL"]

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"


def embed_texts(texts: Sequence[str], config: LLMConfig | None) -> tuple[list[list[float]], str, str | None]:
    """(vectors, what made them, why the endpoint was not used or None)."""
    if not texts:
        return [], "none", None
    if config is None:
        return [local_embedding(t) for t in texts], "local", None
    import openai

    model = os.environ.get("EQUISA_EMBEDDING_MODEL", "").strip() or DEFAULT_EMBEDDING_MODEL
    try:
        with openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key.get_secret_value() or "EMPTY",
            timeout=config.timeout_s,
            max_retries=2,
        ) as client:
            answer = client.embeddings.create(model=model, input=list(texts))
        vectors = [list(map(float, item.embedding)) for item in sorted(answer.data, key=lambda d: d.index)]
        if len(vectors) != len(texts) or not vectors or len({len(v) for v in vectors}) != 1:
            raise ValueError("the endpoint returned the wrong number or shape of embeddings")
        return vectors, f"endpoint:{model}", None
    except (openai.OpenAIError, ValueError) as error:
        reason = (f"embeddings from the endpoint failed ({type(error).__name__}: {str(error)[:200]}); "
                  "used local ones")
        return [local_embedding(t) for t in texts], "local", reason


class TestStore:
    """Tests and their embeddings in one DuckDB file."""

    __test__ = False  # not a pytest class

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = duckdb.connect(str(path))
        self.db.execute("""CREATE TABLE IF NOT EXISTS tests (
            id INTEGER PRIMARY KEY, origin VARCHAR, name VARCHAR, code VARCHAR,
            embedding FLOAT[], dim INTEGER)""")

    def close(self) -> None:
        """Close the file."""
        self.db.close()

    def __enter__(self) -> TestStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _aggregate(self, query: str) -> int:
        """The integer an aggregate query gives (such a query always returns one row)."""
        row = self.db.execute(query).fetchone()
        assert row is not None, f"no row from {query!r}"
        return int(row[0])

    def count(self) -> int:
        """Tests stored."""
        return self._aggregate("SELECT count(*) FROM tests")

    def add(self, origin: str, items: Sequence[tuple[str, str]], vectors: Sequence[Sequence[float]]) -> None:
        """Store (name, code) items with their embeddings."""
        start = self._aggregate("SELECT coalesce(max(id), 0) FROM tests")
        rows = [
            (start + i + 1, origin, name, code, list(vector), len(vector))
            for i, ((name, code), vector) in enumerate(zip(items, vectors, strict=True))
        ]
        if rows:
            self.db.executemany("INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?)", rows)

    def most_similar(self, vector: Sequence[float], limit: int = 3) -> list[tuple[str, str, float]]:
        """(name, code, cosine similarity) of the closest stored tests, best first."""
        dim = len(vector)
        if not dim:
            return []
        rows = self.db.execute(
            f"""SELECT name, code, array_cosine_similarity(embedding::FLOAT[{dim}], ?::FLOAT[{dim}]) AS s
                FROM tests WHERE dim = ? ORDER BY s DESC NULLS LAST, id LIMIT ?""",
            [list(vector), dim, limit],
        ).fetchall()
        return [(name, code, float(s) if s is not None else 0.0) for name, code, s in rows]
