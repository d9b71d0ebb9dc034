"""Agreement between two raters on the same items: raw agreement and Cohen's kappa."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Agreement:
    n: int
    agree: int
    # Share of items both raters put in the same category; None without items.
    rate: float | None
    # Cohen's kappa, (p_o − p_e) / (1 − p_e): agreement beyond what the raters' own category
    # frequencies give by chance. None when undefined: no items, or both raters used one and
    # the same category throughout (p_e = 1), where chance explains everything.
    kappa: float | None


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    if len(a) != len(b):
        raise ValueError(f"two raters must rate the same items ({len(a)} vs {len(b)})")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in ca.keys() | cb.keys()) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def agreement(a: Sequence[str], b: Sequence[str]) -> Agreement:
    n = len(a)
    agree = sum(x == y for x, y in zip(a, b, strict=True))
    return Agreement(n=n, agree=agree, rate=agree / n if n else None, kappa=cohen_kappa(a, b))
