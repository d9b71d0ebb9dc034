"""The bootstrap's weights held by group (``ReplicateWeights``): the same draws as the whole
matrix, and products summed in one stated order whatever block of replicates is computed."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from lens.stats.resample import (
    ReplicateWeights,
    bootstrap_weights,
    cluster_bootstrap_weights,
    digest_of,
    weight_chunks,
)


def _case(i: int) -> tuple[list[str], list[str] | None, bool | None, int]:
    rng = np.random.default_rng(i)
    k, n = int(rng.integers(1, 30)), int(rng.integers(1, 120))
    clusters = [f"s{int(x)}" for x in rng.integers(0, k, n)]
    units = [f"q{int(x)}" for x in rng.integers(0, max(1, n // 2), n)] if i % 3 == 0 else None
    return clusters, units, [None, True, False][i % 3], int(rng.choice([1, 9, 300]))


def _in_stated_order(w: ReplicateWeights, values: np.ndarray, r: int) -> float:
    """Replicate ``r`` of ``w @ values`` summed in Python, in the order the class states."""
    sums = [0.0] * w.counts.shape[1]
    for i, g in enumerate(w.group):
        sums[g] = sums[g] + float(values[i])
    total = 0.0
    for j, s in enumerate(sums):
        total = total + float(w.counts[r, j]) * s
    return total


@pytest.mark.parametrize("i", range(24))
def test_held_by_group_are_the_same_weights_summed_in_one_order(i: int) -> None:
    clusters, units, within, resamples = _case(i)
    seed = hashlib.sha256(str(i).encode()).digest()
    w = bootstrap_weights(clusters, resamples=resamples, seed=seed, units=units, within=within)
    whole = cluster_bootstrap_weights(clusters, resamples=resamples, seed=seed, units=units,
                                      within=within)
    assert w.shape == whole.shape
    assert np.array_equal(w.dense(), whole)
    assert np.array_equal(w.sum(axis=1), whole.sum(axis=1).astype(float))
    rng = np.random.default_rng(i)
    shape = (len(clusters), 5)
    table = rng.integers(0, 7, size=shape) / rng.integers(1, 7, size=shape)
    product = w @ table
    # Within rounding of the matrix product...
    assert np.allclose(product, whole.astype(float) @ table, rtol=1e-13, atol=0)
    # ...and bit for bit the stated order, a column or the whole table alike...
    for r in range(min(3, resamples)):
        assert product[r, 2] == _in_stated_order(w, table[:, 2], r)
        assert (w @ table[:, 2])[r] == product[r, 2]
    # ...whichever replicates are computed together.
    for lo, hi in ((0, 1), (resamples // 3, resamples // 2 + 1)):
        part = ReplicateWeights(w.counts[lo:hi], w.group) @ table
        assert np.array_equal(part, product[lo:hi])


def test_weights_hold_counts_per_scope_in_a_small_type() -> None:
    clusters = [f"s{i % 400}" for i in range(800)]
    w = bootstrap_weights(clusters, resamples=2000, seed=b"x")
    assert w.counts.shape == (2000, 400)
    assert w.counts.itemsize == 2
    with pytest.raises(ValueError, match="values of 3 items for weights of 800"):
        w @ np.zeros(3)


@pytest.mark.parametrize("i", range(12))
def test_chunks_come_in_blocks_of_the_same_rows(i: int) -> None:
    """The blocks of replicates ``weight_chunks`` yields, put together, are each seeded
    chunk's whole matrix: a block's rows are drawn from the chunk's generator in order."""
    clusters, units, within, _ = _case(i)
    clusters = clusters * 30  # enough items that a chunk comes in several blocks
    units = units * 30 if units else None
    blocks = list(weight_chunks(clusters, seed=b"c", resamples=4100, units=units, within=within))
    got = np.concatenate([b.dense() for b in blocks])
    whole = np.concatenate([
        cluster_bootstrap_weights(clusters, resamples=min(2000, 4100 - start),
                                  seed=digest_of(b"c", start), units=units, within=within)
        for start in range(0, 4100, 2000)])
    assert np.array_equal(got, whole)
    if within is False:  # a block holds at most 65,536 counts
        assert all(b.counts.size <= 1 << 16 for b in blocks)
