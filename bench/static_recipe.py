"""Retrieval quality of the static encoder's recipe, step by step, against the contextual model.

    python -m bench.static_recipe                      # the published LENS scopes beside lens
    python -m bench.static_recipe --datasets DIR --json out.json

Two measures on every scope file in ``--datasets`` (LENS JSON):
- question recall@10: for each question with required evidence, the share of its evidence
  episodes among the 10 episodes (of those before its checkpoint) closest to its prompt. This is
  what a retrieval-only agent can cite;
- sentence top-5: for each episode, its sentence with the most words found in no other episode
  of the scope (at least two, at least six words) is the query; the share of episodes ranked in
  the top 5 of the scope.

Rows: the contextual encoder (256-token window), then the static recipe built up one step at a
time from the plain mean of distilled token vectors to the shipped recipe (whose row is computed
by :class:`lens.adapters.static_embedding.StaticEncoder` itself), then the shipped recipe with one
choice changed. Every token of the vocabulary is distilled first (about half a minute on an idle
2-core machine; the table is kept in ``--cache`` for the next run).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_line
from lens.adapters.embedder import Embedder, default_cache_path
from lens.adapters.embedding import Matrix, shared_encoder
from lens.adapters.static_embedding import (
    CENTER_STRIDE,
    NO_LETTER_WEIGHT,
    StaticEncoder,
    has_letter,
    is_marker,
    sif_weights,
)

ROOT = Path(__file__).resolve().parent.parent
Encode = Callable[[list[str]], Matrix]
_WORD = re.compile(r"[a-z]{3,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")


@dataclass
class Scope:
    name: str
    episodes: list[dict[str, Any]]
    questions: list[dict[str, Any]]


def load_scopes(folder: Path) -> list[Scope]:
    scopes = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "scopes" not in data:
            continue
        for scope in data["scopes"]:
            eps = sorted(scope["episodes"], key=lambda e: e["timestamp"])
            qs = [q for q in data.get("questions", []) if q["scope_id"] == scope["scope_id"]]
            scopes.append(Scope(scope["scope_id"], eps, qs))
    return scopes


def distinctive_sentences(episodes: list[dict[str, Any]]) -> list[tuple[int, str]]:
    df: Counter[str] = Counter()
    for ep in episodes:
        df.update(set(_WORD.findall(ep["text"].lower())))
    out = []
    for i, ep in enumerate(episodes):
        best: tuple[int, int, str] | None = None
        for line in _SENTENCE.split(ep["text"]):
            words = set(_WORD.findall(line.lower()))
            if len(words) >= 6:
                cand = (sum(df[w] == 1 for w in words), -len(line), line.strip())
                best = max(best, cand) if best else cand
        if best and best[0] >= 2:
            out.append((i, best[2]))
    return out


def evaluate(scopes: list[Scope], encode: Encode) -> dict[str, Any]:
    recalls: list[float] = []
    hits: list[bool] = []
    per_scope = {}
    for scope in scopes:
        vecs = encode([e["text"] for e in scope.episodes])
        ids = [e["episode_id"] for e in scope.episodes]
        asked = [q for q in scope.questions if q["ground_truth"]["required_evidence_refs"]]
        qvecs = encode([q["prompt"] for q in asked]) if asked else np.zeros((0, 1))
        scope_recalls = []
        for q, qv in zip(asked, qvecs, strict=True):
            scores = vecs[:q["checkpoint_after"]] @ qv
            top = {ids[i] for i in np.argsort(-scores, kind="stable")[:10]}
            need = set(q["ground_truth"]["required_evidence_refs"])
            scope_recalls.append(len(top & need) / len(need))
        sentences = distinctive_sentences(scope.episodes)
        svecs = encode([s for _, s in sentences]) if sentences else np.zeros((0, 1))
        scope_hits = [int(((vecs @ sv) > (vecs[i] @ sv)).sum()) < 5
                      for (i, _), sv in zip(sentences, svecs, strict=True)]
        recalls += scope_recalls
        hits += scope_hits
        per_scope[scope.name] = {
            "recall10": float(np.mean(scope_recalls)) if scope_recalls else None,
            "top5": float(np.mean(scope_hits)) if scope_hits else None}
    return {"recall10": float(np.mean(recalls)), "questions": len(recalls),
            "top5": float(np.mean(hits)), "sentences": len(hits), "scopes": per_scope}


def variant(enc: StaticEncoder, table: Matrix, center: Matrix | None,
            weights: np.ndarray) -> Encode:
    """The static recipe with its parts swapped: token rows, centre (or none), weights."""

    def encode(texts: list[str]) -> Matrix:
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        for row, e in enumerate(enc.tokenizer.encode_batch(texts, add_special_tokens=False)):
            uniq, counts = np.unique(np.asarray(e.ids, dtype=np.int64), return_counts=True)
            w = counts * weights[uniq]
            if len(uniq) == 0 or w.sum() <= 0:
                continue
            vec = (w @ table[uniq]) / w.sum() - (center if center is not None else 0.0)
            out[row] = vec / max(float(np.linalg.norm(vec)), 1e-12)
        return out

    return encode


def token_position_rows(enc: StaticEncoder, ids: np.ndarray) -> Matrix:
    """The alternative pooling: the teacher's output at the token's own position only."""
    teacher = shared_encoder(enc.name)
    head, tail = enc._frame[:1], enc._frame[1:]
    rows = np.zeros_like(enc.table.vecs)
    for start in range(0, len(ids), 256):
        part = ids[start:start + 256]
        x = np.array([[*head, int(t), *tail] for t in part], dtype=np.int64)
        out = teacher.hidden_states(x, np.ones(x.shape, dtype=np.float32))[:, len(head)]
        rows[part] = out / np.linalg.norm(out, axis=1, keepdims=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", type=Path, default=ROOT.parent / "shared" / "lens-datasets")
    ap.add_argument("--cache", type=Path, default=default_cache_path(),
                    help="embedding cache and token table (default: lens's embedding cache)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    scopes = load_scopes(args.datasets)
    if not scopes:
        sys.exit(f"no LENS scope files in {args.datasets}")
    print(machine_line(), flush=True)
    enc = StaticEncoder(table_path=args.cache)
    start = time.perf_counter()
    enc.distill_vocabulary()
    print(f"vocabulary distilled in {time.perf_counter() - start:.1f} s "
          f"({enc.distilled} tokens computed now)", flush=True)
    table = enc.table.vecs
    shipped = enc.weights
    tokens = [enc.tokenizer.id_to_token(i) or "" for i in range(len(shipped))]
    letters = np.array([has_letter(t) for t in tokens])
    plain = np.array([0.0 if is_marker(t) else 1.0 for t in tokens])
    sif = sif_weights(len(tokens)) * plain
    sample = enc.center()
    vocab_mean = table[enc.all_ids].astype(np.float64).mean(axis=0).astype(np.float32)

    def with_letters(factor: float) -> np.ndarray:
        return np.where(letters, sif, sif * factor)

    contextual = Embedder(cache=str(args.cache))
    rows: list[tuple[str, Encode]] = [
        ("contextual (MiniLM, 256-token window)", contextual.embed),
        ("static: plain mean of token vectors", variant(enc, table, None, plain)),
        ("+ SIF weights from vocabulary rank (a=1e-4)", variant(enc, table, None, sif)),
        (f"+ centred on the mean of one token in {CENTER_STRIDE}",
         variant(enc, table, sample, sif)),
        (f"+ tokens without a letter x{NO_LETTER_WEIGHT} (shipped recipe)", enc.encode),
        ("shipped, centred on the whole vocabulary's mean",
         variant(enc, table, vocab_mean, shipped)),
        ("shipped, tokens without a letter x0.3", variant(enc, table, sample, with_letters(0.3))),
        ("shipped, tokens without a letter x0", variant(enc, table, sample, with_letters(0.0))),
    ]
    used = np.unique(np.concatenate([
        np.asarray(e.ids, dtype=np.int64) for s in scopes for e in enc.tokenizer.encode_batch(
            [x["text"] for x in s.episodes] + [q["prompt"] for q in s.questions],
            add_special_tokens=False)]))
    tok_rows = token_position_rows(enc, used)
    tok_center = tok_rows[enc.center_ids].astype(np.float64).mean(axis=0).astype(np.float32)
    rows.append(("shipped, token-position pooling instead of mean",
                 variant(enc, tok_rows, tok_center, shipped)))

    results = []
    print(f"\n{len(scopes)} scopes\n\n| encoder | question recall@10 | sentence top-5 |\n"
          "| --- | ---: | ---: |", flush=True)
    for name, encode in rows:
        r = evaluate(scopes, encode)
        results.append({"name": name, **r})
        print(f"| {name} | {r['recall10']:.3f} (n={r['questions']}) | "
              f"{r['top5']:.3f} (n={r['sentences']}) |", flush=True)
    print("\nper scope (recall@10 / top-5):")
    for r in results:
        cells = ", ".join(f"{k}: {v['recall10']:.2f}/{v['top5']:.2f}" if v["recall10"] is not None
                          else f"{k}: –/{v['top5']:.2f}" for k, v in r["scopes"].items())
        print(f"- {r['name']}: {cells}")
    contextual.close()
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_line(), "rows": results}, indent=2))


if __name__ == "__main__":
    main()
