"""Many arms at once: Friedman's rank test across scopes, and Kendall's W (do the scopes agree
on the order of the arms?)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Friedman:
    blocks: int  # scopes
    arms: int
    statistic: float  # chi-square, corrected for ties
    df: int
    p_value: float
    kendall_w: float  # 0: no agreement between scopes, 1: every scope ranks the arms alike


def friedman(table: np.ndarray) -> Friedman | None:
    """Friedman's test on a (scopes, arms) table of scope-level values; None with fewer than
    two scopes or three arms, or when every scope ties every arm (nothing to rank)."""
    from scipy import stats as sps  # here, not at import: see lens.stats.intervals.t_for

    data = np.asarray(table, dtype=float)
    if data.ndim != 2 or data.shape[0] < 2 or data.shape[1] < 3 or not np.isfinite(data).all():
        return None
    n, k = data.shape
    ranks = np.apply_along_axis(sps.rankdata, 1, data)
    ties = 0.0
    for row in data:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts ** 3 - counts))
    correction = 1 - ties / (n * k * (k * k - 1))
    if correction <= 0:
        return None
    sums = ranks.sum(axis=0)
    chi2 = (12 / (n * k * (k + 1)) * float(np.sum(sums ** 2)) - 3 * n * (k + 1)) / correction
    return Friedman(blocks=n, arms=k, statistic=chi2, df=k - 1,
                    p_value=float(sps.chi2.sf(chi2, k - 1)),
                    kendall_w=chi2 / (n * (k - 1)))
