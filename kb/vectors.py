"""Index backends: where a segment's scoring side (BM25 over two token fields, dense vectors)
lives, and how a chain of segments is searched. The rest of kb — article metadata, the
signature, the evidence and the verdict — is the same over either.

- `local` (default, zero servers): the segment directory's BM25 postings and a FAISS file.
- `qdrant`: one Qdrant collection per segment (`<prefix>_<segment name>`), one point per
  chunk with named vectors: sparse `lex` and `bridge` and dense `dense`, payload `article_id`.
  The document side of a sparse vector is BM25's saturated, length-normalised term frequency;
  the query side is IDF from kb's own df (the segments' postings, tombstones taken out), so the
  scores equal the local backend's and never depend on a shard's local statistics. Article
  results come from `query_points_groups(group_by="article_id")`; tombstoned articles are
  filtered out. Segments are immutable, so a collection is written once and dropped when no
  kept snapshot lists its segment; the snapshot swap stays the data dir's one pointer flip.

Both answer the searcher through `ChainIndex`: BM25 per global row for each field, and the
top dense rows.
"""

from __future__ import annotations

import atexit
import hashlib
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import faiss
import numpy as np

from .errors import KbError
from .lexical import LexicalIndex, length_norm

if TYPE_CHECKING:  # only for annotations: kb/segment.py imports nothing from here
    from .config import Settings
    from .segment import Segment

BACKENDS = ("local", "qdrant")
FIELDS = ("lexical", "bridge")
QDRANT_VECTOR = {"lexical": "lex", "bridge": "bridge"}
GROUPS = 200
"""Articles asked of Qdrant per field and segment: the searcher's pool takes the best 30 of each
signal, and an article outside a field's top 200 scores too little there to matter."""
UPSERT_BATCH = 256


class ChainIndex:
    """The scoring side of a chain of segments, rows numbered in chain order (`positions`, with
    -1 for a tombstoned row), served from the segments' own files."""

    def __init__(self, segments: list["Segment"], positions: list[np.ndarray]):
        self.segments = segments
        self.positions = positions
        self.lexical_index = LexicalIndex([seg.lexical for seg in segments], positions)
        self.bridge_index = LexicalIndex([seg.bridge for seg in segments], positions)
        self.n_rows = self.lexical_index.n_rows
        self.df = self.lexical_index.df
        """token -> live chunks holding it: IDF, and what the corpus knows, for every backend."""
        self._dead_rows = [int((pos < 0).sum()) for pos in positions]  # asked for on every dense search

    def field(self, name: str) -> LexicalIndex:
        """BM25 over one token field ("lexical" or "bridge") of the live rows."""
        return self.lexical_index if name == "lexical" else self.bridge_index

    def scores(self, field: str, tokens: list[str]) -> np.ndarray:
        """BM25 of every live row for these tokens, in `field` ("lexical" or "bridge")."""
        return self.field(field).scores(tokens)

    def dense_hits(self, qvec: np.ndarray, k: int) -> list[tuple[float, int]]:
        """The `k` rows most similar to the query vector: (inner product, row), over every segment.
        Each segment is asked for `k` plus its tombstoned rows, so the live top `k` is exact."""
        hits: list[tuple[float, int]] = []
        for seg, pos, dead in zip(self.segments, self.positions, self._dead_rows):
            n = seg.dense.ntotal if seg.dense is not None else 0
            if not n:
                continue
            sims, rows = seg.dense.search(qvec, min(n, k + dead))
            hits += [(float(sim), int(pos[row])) for sim, row in zip(sims[0], rows[0]) if row >= 0 and pos[row] >= 0]
        hits.sort(key=lambda h: -h[0])
        return hits[:k]


class LocalBackend:
    """Vectors in the segment directory (FAISS); BM25 from its postings."""

    name = "local"
    FLAT_LIMIT = 20_000
    """Above this many chunks, HNSW: a flat scan of 60k x 384 floats costs ~30 ms a query on 2 busy cores."""

    def write(self, segment: str, files, rows: Iterable[tuple[int, str, str, str]], vectors: Iterable[np.ndarray],
              n_rows: int, dim: int, avgdl: dict[str, float]) -> None:
        """The segment's vectors (batches in row order) into its FAISS file."""
        index = faiss.IndexFlatIP(dim) if n_rows <= self.FLAT_LIMIT else _hnsw(dim)
        for batch in vectors:
            index.add(batch)
        faiss.write_index(index, str(files.dense))

    def open(self, segments: list["Segment"], positions: list[np.ndarray], tombstoned: list[frozenset[str]]) -> ChainIndex:
        return ChainIndex(segments, positions)

    def prune(self, keep: set[str]) -> None:
        """Nothing lives outside the segment directories."""


def _hnsw(dim: int):
    index = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = 128
    return index


def token_id(token: str) -> int:
    """A token's sparse-vector index: 32 bits of its hash, the same on every writer and replica
    with no vocabulary to share (two tokens colliding merely add their weights)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "little")


def sparse(weights: dict[str, float]):
    """{token: weight} as a Qdrant sparse vector (colliding token ids summed)."""
    from qdrant_client import models

    merged: dict[int, float] = {}
    for token, w in weights.items():
        i = token_id(token)
        merged[i] = merged.get(i, 0.0) + float(w)
    return models.SparseVector(indices=list(merged), values=list(merged.values()))


def bm25_document(tokens: list[str], avgdl: float) -> dict[str, float]:
    """A chunk's document side of BM25 (kb/lexical.py): tf / (tf + length_norm)."""
    norm = length_norm(len(tokens), avgdl)
    return {t: tf / (norm + tf) for t, tf in Counter(tokens).items()}


_clients: dict[tuple[str, str], tuple[object, threading.Lock | None]] = {}
_clients_lock = threading.Lock()


@atexit.register
def _close_clients() -> None:
    """Close clients while the interpreter can still run their clean-up (the embedded store
    flushes and unlocks its folder)."""
    with _clients_lock:
        for client, _ in _clients.values():
            client.close()
        _clients.clear()


class QdrantBackend:
    """Each segment's vectors in a Qdrant collection; a server or cluster (`url`) or
    qdrant-client's embedded local mode (`path`, one process at a time)."""

    name = "qdrant"

    def __init__(self, url: str | None = None, path: Path | None = None, prefix: str = "kb",
                 replication_factor: int = 1):
        if not url and not path:
            raise KbError("the qdrant index backend needs KB_QDRANT_URL (a server) or KB_QDRANT_PATH "
                          "(an embedded local store): set one, or KB_INDEX_BACKEND=local")
        self.url, self.path, self.prefix = url, Path(path) if path and not url else None, prefix
        self.replication_factor = replication_factor  # shards: Qdrant's default, one per node
        key = ("url", url) if url else ("path", str(self.path.resolve()))
        with _clients_lock:  # the embedded store allows one client per process: share it
            if key not in _clients:
                try:
                    from qdrant_client import QdrantClient
                except ImportError:
                    raise KbError("KB_INDEX_BACKEND=qdrant needs qdrant-client: pip install 'kb[scale]'") from None
                if url:
                    _clients[key] = (QdrantClient(url=url, timeout=30), None)
                else:
                    self.path.mkdir(parents=True, exist_ok=True)
                    try:
                        client = QdrantClient(path=str(self.path))
                    except RuntimeError as exc:  # its folder lock: another process has it open
                        raise KbError(
                            f"the embedded Qdrant store {self.path} is open in another process (a running `kb serve`?): "
                            "it serves one process at a time. Write through that server's API, or run a Qdrant "
                            f"server and set KB_QDRANT_URL ({exc})") from None
                    # the embedded store is plain Python structures: one call at a time
                    _clients[key] = (client, threading.Lock())
            self.client, self._lock = _clients[key]

    def _call(self, method: str, *args, **kwargs):
        if self._lock is None:
            return getattr(self.client, method)(*args, **kwargs)
        with self._lock:
            return getattr(self.client, method)(*args, **kwargs)

    def collection(self, segment: str) -> str:
        return f"{self.prefix}_{segment}"

    def write(self, segment: str, files, rows: Iterable[tuple[int, str, str, str]], vectors: Iterable[np.ndarray],
              n_rows: int, dim: int, avgdl: dict[str, float]) -> None:
        """One point per chunk. `rows`: (chunk id, article id, tokens, bridge tokens) in row order,
        `vectors` their dense vectors in batches of the same order; `avgdl`: each field's average
        chunk length over the live chain this segment joins."""
        from qdrant_client import models

        name = self.collection(segment)
        if self._call("collection_exists", name):  # left by a writer that crashed before publishing
            self._call("delete_collection", name)
        self._call(
            "create_collection", name,
            vectors_config={"dense": models.VectorParams(size=dim, distance=models.Distance.DOT)},
            sparse_vectors_config={v: models.SparseVectorParams() for v in QDRANT_VECTOR.values()},
            replication_factor=self.replication_factor,
        )
        if self.url:  # a server filters and groups by it; the embedded store ignores payload indexes
            self._call("create_payload_index", name, "article_id", models.PayloadSchemaType.KEYWORD)
        batch = []
        dense = (v for block in vectors for v in block)
        for (chunk_id, article_id, tokens, bridge_tokens), v in zip(rows, dense):
            vector = {"dense": v.tolist()}
            for field, text in (("lexical", tokens), ("bridge", bridge_tokens)):
                words = text.split()
                if words:
                    vector[QDRANT_VECTOR[field]] = sparse(bm25_document(words, avgdl[field]))
            batch.append(models.PointStruct(id=int(chunk_id), vector=vector, payload={"article_id": article_id}))
            if len(batch) >= UPSERT_BATCH:
                self._call("upsert", name, batch, wait=True)
                batch = []
        if batch:
            self._call("upsert", name, batch, wait=True)

    def open(self, segments: list["Segment"], positions: list[np.ndarray], tombstoned: list[frozenset[str]]) -> ChainIndex:
        return QdrantChain(self, segments, positions, tombstoned)

    def prune(self, keep: set[str]) -> None:
        """Drop the collections of segments no kept snapshot lists (and of writers that died)."""
        start = f"{self.prefix}_"
        for c in self._call("get_collections").collections:
            if c.name.startswith(start) and c.name[len(start):] not in keep:
                self._call("delete_collection", c.name)


class QdrantChain(ChainIndex):
    """A chain whose BM25 and dense scores come from Qdrant; df still from kb's own postings."""

    def __init__(self, backend: QdrantBackend, segments: list["Segment"], positions: list[np.ndarray],
                 tombstoned: list[frozenset[str]]):
        super().__init__(segments, positions)
        self.backend = backend
        self._filters = [_excluding(dead) for dead in tombstoned]

    def _row(self, si: int, chunk_id: int) -> int:
        seg = self.segments[si]
        local = int(np.searchsorted(seg.chunk_ids, chunk_id))
        return int(self.positions[si][local])

    def scores(self, field: str, tokens: list[str]) -> np.ndarray:
        out = np.zeros(self.n_rows, dtype=np.float32)
        stats = self.field(field)  # IDF from kb's own df of that field, never a shard's
        weights = {t: stats.idf(t) for t in dict.fromkeys(tokens) if t in stats.df}
        if not weights:
            return out
        query = sparse(weights)
        for si, seg in enumerate(self.segments):
            found = self.backend._call(
                "query_points_groups", self.backend.collection(seg.path.name), query=query,
                using=QDRANT_VECTOR[field], group_by="article_id", limit=GROUPS, group_size=1,
                query_filter=self._filters[si], with_payload=False)
            for group in found.groups:
                hit = group.hits[0]
                row = self._row(si, int(hit.id))
                if row >= 0:
                    out[row] = hit.score
        return out

    def dense_hits(self, qvec: np.ndarray, k: int) -> list[tuple[float, int]]:
        hits: list[tuple[float, int]] = []
        for si, seg in enumerate(self.segments):
            found = self.backend._call(
                "query_points", self.backend.collection(seg.path.name), query=qvec[0].tolist(), using="dense",
                limit=k, query_filter=self._filters[si], with_payload=False)
            for p in found.points:
                row = self._row(si, int(p.id))
                if row >= 0:
                    hits.append((float(p.score), row))
        hits.sort(key=lambda h: -h[0])
        return hits[:k]


def _excluding(article_ids: frozenset[str]):
    if not article_ids:
        return None
    from qdrant_client import models

    return models.Filter(must_not=[models.FieldCondition(key="article_id", match=models.MatchAny(any=sorted(article_ids)))])


def open_backend(settings: "Settings", name: str):
    """The backend called `name`, configured from the settings."""
    if name == "local":
        return LocalBackend()
    if name == "qdrant":
        return QdrantBackend(url=settings.qdrant_url, path=settings.qdrant_path, prefix=settings.qdrant_prefix,
                             replication_factor=settings.qdrant_replication_factor)
    raise KbError(f"unknown index backend {name!r}: KB_INDEX_BACKEND is one of {', '.join(BACKENDS)}")
