"""Static sentence embeddings distilled from the packaged MiniLM (the model2vec recipe, offline).

The contextual encoder runs a transformer over every text, about 6 GFLOP for a 256-token
episode, which bounds it to a few episodes per second on a small CPU. A static encoder gives
every WordPiece token one fixed vector and embeds a text as a weighted mean of its tokens'
vectors: no forward pass per text, and the whole text is read (no 256-token window). The price
is word order and context: a token means the same wherever it stands.

The recipe (``RECIPE``). Each step was measured with ``python -m bench.static_recipe`` on the
five published LENS scopes (evidence recall@10 of 92 questions; ``bench/RESULTS.md``):

- a token's vector is the teacher's own sentence embedding of that token alone: the packaged
  MiniLM over ``[CLS] token [SEP]``, mean-pooled over the three positions and L2-normalised,
  exactly as sentence-transformers pools this model. Taking the token position's output alone
  did about as well (0.355 against 0.377); mean pooling is kept because a table row is then
  exactly a vector the teacher itself produces, which a test can check;
- the vectors share a large common component (each carries the [CLS] and [SEP] outputs) that
  swamps what tells them apart. The mean vector of one real token in 32 of the vocabulary is
  subtracted: recall 0.13 to 0.28, and the sample does as well as the whole vocabulary's mean
  at a thirtieth of the distillation;
- weights follow model2vec's SIF over a Zipf estimate of token frequency from vocabulary rank
  (BERT's WordPiece vocabulary lists words roughly from most to least frequent):
  ``w = a / (a + p(rank))`` with ``a = 1e-4``. Tokens without a letter (digits, punctuation,
  symbols) get a tenth of that: the teacher's vector of a bare number says little about meaning,
  and in metric-heavy logs such tokens are half the text and pull every report together
  (recall 0.28 to 0.38). A tenth rather than nothing, so a text of numbers alone still has a
  direction;
- a text's vector is the weighted mean of its tokens' centred vectors (marker tokens such as
  ``[UNK]`` left out), L2-normalised. A text with no token at all gets the zero vector.

Token vectors are distilled lazily: the first time a token id is met, in batches, and kept in a
:class:`~lens.adapters.token_table.TokenTable` (the embedding cache's SQLite file by default)
keyed by the model files' content hash and ``DISTILL_VERSION``, so a machine pays for each token
once. Lazy beats distilling the whole vocabulary up front because a corpus meets a fraction of
it: the first 1,000 benchmark episodes needed 2,033 token vectors (about 3 s on 2 cores) where
the whole vocabulary takes about 36 s, and a token's vector is the same either way
(``distill_vocabulary`` does it all at once, for a machine that should never distil during a
run).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from lens.adapters.embedding import DEFAULT_MODEL, Matrix, model_dir, shared_encoder
from lens.adapters.token_table import TokenTable
from lens.core.distribution import install_hint
from lens.core.errors import ConfigError

# Bump DISTILL_VERSION when a token's vector changes (it keys the token table), RECIPE when
# anything else that shapes a text's vector does (it keys the sentence embeddings' cache).
DISTILL_VERSION = 1
RECIPE = f"static-v1.d{DISTILL_VERSION}"
SIF_A = 1e-4
NO_LETTER_WEIGHT = 0.1
CENTER_STRIDE = 32
DISTILL_BATCH = 256
_MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
_LETTER = re.compile(r"[^\W\d_]")

_fingerprints: dict[tuple[object, ...], str] = {}
_fingerprints_lock = threading.Lock()


def model_fingerprint(folder: Path) -> str:
    """SHA-256 over the files that make a token's vector (weights, tokenizer, config).

    Hashing 90 MB takes a fraction of a second; it is done once per process per folder (and
    again if a file's size or modification time changes).
    """
    stats = tuple((name, (folder / name).stat().st_size, (folder / name).stat().st_mtime_ns)
                  for name in _MODEL_FILES if (folder / name).is_file())
    memo_key = (str(folder.resolve()), stats)
    with _fingerprints_lock:
        found = _fingerprints.get(memo_key)
        if found is not None:
            return found
        digest = hashlib.sha256()
        for name, size, _ in stats:
            digest.update(f"{name}\0{size}\0".encode())
            with (folder / name).open("rb") as fh:
                for block in iter(functools.partial(fh.read, 1 << 20), b""):
                    digest.update(block)
        _fingerprints[memo_key] = found = digest.hexdigest()
        return found


def is_marker(token: str) -> bool:
    """``[CLS]``, ``[UNK]``, ``[unused7]``…: tokens that never stand for text."""
    return token.startswith("[") and token.endswith("]")


def has_letter(token: str) -> bool:
    return bool(_LETTER.search(token))


def sif_weights(vocab_size: int) -> NDArray[np.float64]:
    """SIF weights ``a / (a + p)`` with ``p`` a Zipf estimate of frequency from vocabulary rank."""
    zipf = 1.0 / np.arange(1, vocab_size + 1, dtype=np.float64)
    weights: NDArray[np.float64] = SIF_A / (SIF_A + zipf / zipf.sum())
    return weights


def token_weights(tokens: Sequence[str]) -> NDArray[np.float64]:
    """The recipe's weight of every token id: SIF, a tenth of it for tokens with no letter,
    zero for marker tokens."""
    weights = sif_weights(len(tokens))
    weights *= np.array([1.0 if has_letter(t) else NO_LETTER_WEIGHT for t in tokens])
    weights[[i for i, t in enumerate(tokens) if is_marker(t)]] = 0.0
    return weights


class StaticEncoder:
    """Static token-vector sentence encoder; thread-safe, shared per (model, table file)."""

    def __init__(self, model: str = DEFAULT_MODEL, table_path: Path | None = None) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(f"the static encoder needs {exc.name!r}: install the vector "
                              f"extra (`{install_hint('vector')}`)") from None
        folder = model_dir(model)
        self.name = model
        self.dim = int(json.loads((folder / "config.json").read_text())["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # The whole text counts: a static vector costs the same per token at any length.
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        vocab = self.tokenizer.get_vocab_size()
        tokens = [self.tokenizer.id_to_token(i) or "" for i in range(vocab)]
        self.weights = token_weights(tokens)
        real = [i for i, t in enumerate(tokens) if t and not is_marker(t)]
        self.center_ids = np.asarray(real[::CENTER_STRIDE], dtype=np.int64)
        self.all_ids = np.asarray(real, dtype=np.int64)
        # [CLS] and [SEP] (or whatever this tokenizer puts around a single text).
        self._frame = list(self.tokenizer.encode("").ids)
        self.fingerprint = model_fingerprint(folder)
        self.key = f"{model}+{RECIPE}@{self.fingerprint[:16]}"
        self.table = TokenTable(table_path, f"{model}:d{DISTILL_VERSION}:{self.fingerprint}",
                                vocab, self.dim)
        self.distilled = 0  # token vectors this instance computed with the teacher
        self.distill_seconds = 0.0
        self._center: Matrix | None = None
        self._lock = threading.Lock()

    def _ensure(self, ids: NDArray[np.int64]) -> None:
        """Distil every token of ``ids`` (unique) that neither memory nor the file holds."""
        with self._lock:
            missing = self.table.missing(ids)
            if len(missing) == 0:
                return
            start = time.perf_counter()
            teacher = shared_encoder(self.name)
            head, tail = self._frame[:1], self._frame[1:]
            rows = [[*head, int(t), *tail] for t in missing]
            self.table.add(missing, teacher.encode_ids(rows, batch_size=DISTILL_BATCH))
            self.distilled += len(missing)
            self.distill_seconds += time.perf_counter() - start

    def center(self) -> Matrix:
        if self._center is None:
            self._ensure(self.center_ids)
            mean = self.table.vecs[self.center_ids].astype(np.float64).mean(axis=0)
            self._center = mean.astype(np.float32)
        return self._center

    def distill_vocabulary(self) -> int:
        """Distil every real token of the vocabulary now; returns how many were computed."""
        before = self.distilled
        self._ensure(self.all_ids)
        return self.distilled - before

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Matrix:
        """Unit-length embeddings, one row per text, in input order (``batch_size`` is
        accepted for the contextual encoder's signature; a static text needs no batching)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # The fast variant skips computing character offsets (same ids, about 30% quicker);
        # tokenizers before 0.21 lack it.
        batch = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        encs = batch(list(texts), add_special_tokens=False)
        id_lists = [np.asarray(e.ids, dtype=np.int64) for e in encs]
        center = self.center()
        self._ensure(np.unique(np.concatenate(id_lists)))
        vecs, weights = self.table.vecs, self.weights
        for row, ids in enumerate(id_lists):
            if len(ids) == 0:
                continue
            uniq, counts = np.unique(ids, return_counts=True)
            w = counts * weights[uniq]
            total = w.sum()
            if total <= 0:
                continue
            # sum_i w_i (v_i - c) / sum_i w_i, up to the norm taken next
            vec = (w @ vecs[uniq]) / total - center
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                out[row] = vec / norm
        return out

    def close(self) -> None:
        self.table.close()


_encoders: dict[tuple[str, str | None], StaticEncoder] = {}
_encoders_lock = threading.Lock()


def shared_static_encoder(model: str = DEFAULT_MODEL,
                          table_path: Path | None = None) -> StaticEncoder:
    """One static encoder per (model, table file) per process: every adapter instance of a
    run reads the same in-memory table."""
    key = (model, str(table_path) if table_path else None)
    with _encoders_lock:
        enc = _encoders.get(key)
        if enc is None:
            enc = _encoders[key] = StaticEncoder(model, table_path)
        return enc
