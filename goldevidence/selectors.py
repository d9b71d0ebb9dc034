"""Rerankers that pick one candidate entry, and the small linear (softmax) selector.

The linear selector scores each candidate with ``w · features`` and takes a softmax over the
candidate set; ``python -m goldevidence train-selector`` fits ``w`` on exported candidate sets by
gradient descent on the cross-entropy of the gold candidate (numpy only).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from goldevidence.grammar import Entry

RERANKERS = ("none", "latest_step", "last_occurrence", "prefer_set_latest",
             "prefer_update_latest", "linear")

FEATURES = (
    "bias", "step_norm", "is_latest_step", "is_second_latest_step", "recency_rank_norm",
    "recency_rank_inv", "pos_norm", "is_set", "is_clear", "is_note", "key_in_question",
    "value_in_question",
)


def features(cands: Sequence[Entry], question: str) -> np.ndarray:
    """One row of features per candidate; nothing here looks at gold."""
    n = len(cands)
    steps = [c.step for c in cands]
    hi, lo = max(steps), min(steps)
    distinct = sorted(set(steps), reverse=True)
    second = distinct[1] if len(distinct) > 1 else None
    q = question.lower()
    out = np.zeros((n, len(FEATURES)))
    for i, c in enumerate(cands):
        rank = sum(1 for s in steps if s > c.step)
        out[i] = [
            1.0,
            (c.step - lo) / (hi - lo) if hi > lo else 1.0,
            float(c.step == hi),
            float(second is not None and c.step == second),
            rank / (n - 1) if n > 1 else 0.0,
            1.0 / (1.0 + rank),
            i / (n - 1) if n > 1 else 0.0,
            float(c.op == "SET"),
            float(c.op == "CLEAR"),
            float(c.op == "NOTE"),
            float(c.key.lower() in q),
            float(bool(c.value) and str(c.value).lower() in q),
        ]
    return out


@dataclass
class LinearSelector:
    weights: np.ndarray
    feature_order: tuple[str, ...] = FEATURES

    def scores(self, cands: Sequence[Entry], question: str) -> np.ndarray:
        z = features(cands, question) @ self.weights
        z = z - z.max()
        p = np.exp(z)
        out: np.ndarray = p / p.sum()
        return out

    def pick(self, cands: Sequence[Entry], question: str) -> int:
        return int(np.argmax(self.scores(cands, question)))

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"kind": "goldevidence.linear_selector",
                                    "feature_order": list(self.feature_order),
                                    "weights": [float(w) for w in self.weights]}, indent=2))

    @classmethod
    def load(cls, path: Path) -> LinearSelector:
        data = json.loads(Path(path).read_text())
        order = tuple(data.get("feature_order", ()))
        if order != FEATURES:
            raise ValueError(f"{path}: selector features {order} differ from this version's "
                             f"{FEATURES}; retrain it with train-selector")
        return cls(np.asarray(data["weights"], dtype=float), order)


def train_linear(sets: Sequence[tuple[np.ndarray, int]], *, epochs: int = 300,
                 lr: float = 0.5, l2: float = 1e-3) -> LinearSelector:
    """Fit softmax weights on (features, gold index) sets by full-batch gradient descent."""
    usable = [(x, y) for x, y in sets if 0 <= y < len(x)]
    if not usable:
        raise ValueError("no candidate set contains its gold entry; nothing to train on")
    w = np.zeros(len(FEATURES))
    for _ in range(epochs):
        grad = l2 * w
        for x, y in usable:
            z = x @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            grad += x.T @ p - x[y]
        w -= lr * grad / len(usable)
    return LinearSelector(w)


def rerank(name: str, cands: Sequence[Entry], question: str,
           linear: LinearSelector | None = None) -> int | None:
    """Index of the chosen candidate, or None for ``none`` (the model chooses)."""
    if not cands or name == "none":
        return None
    idx = list(range(len(cands)))
    if name == "latest_step":
        return max(idx, key=lambda i: (cands[i].step, i))
    if name == "last_occurrence":
        return len(cands) - 1
    if name in ("prefer_set_latest", "prefer_update_latest"):
        want = ("SET",) if name == "prefer_set_latest" else ("SET", "CLEAR")
        pool = [i for i in idx if cands[i].op in want] or idx
        return max(pool, key=lambda i: (cands[i].step, i))
    if name == "linear":
        if linear is None:
            raise ValueError("rerank 'linear' needs a trained selector (selector_path)")
        return linear.pick(cands, question)
    raise ValueError(f"unknown reranker {name!r}; known: {', '.join(RERANKERS)}")


class CandidateExport(TypedDict):
    """One candidate set of ``train-selector --export``: its features and the gold's place."""

    id: str
    candidates: list[str]  # the candidates' uids, in the order shown
    features: list[list[float]]  # one row per candidate, columns in ``feature_order``
    gold_index: int  # -1 when the gold line is not among the candidates
    feature_order: list[str]


def export_record(row_id: str, cands: Sequence[Entry], question: str,
                  gold_uid: str | None) -> CandidateExport:
    uids = [c.uid for c in cands]
    return {"id": row_id, "candidates": uids,
            "features": features(cands, question).tolist() if cands else [],
            "gold_index": uids.index(gold_uid) if gold_uid in uids else -1,
            "feature_order": list(FEATURES)}
