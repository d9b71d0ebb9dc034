"""Exact BM25 top-k in memory, with FTS5's formula and arithmetic.

FTS5 computes ``bm25()`` for every row a query matches and has no early termination, so a query
made of common words costs time linear in the store (about 1 µs per matching row). This index
answers the same question with the same scores (identical to the last bit in the tests, on
x86-64) by touching far fewer rows:

- postings (unit, occurrences) per term, loaded from FTS5 on first use and extended as units
  arrive; per unit its length in tokens, its timestamp and whether it is still live;
- per term, valid until the next write: each unit's contribution ``idf * tf-part`` computed with
  the operations of FTS5's ``fts5Bm25Function`` in the same order (k1 = 1.2, b = 0.75,
  ``idf = log((N - n + 0.5) / (n + 0.5))`` raised to 1e-6 when not positive), its largest values;
- a search first bounds the k-th best score from below: the units holding some query term's
  largest contributions are scored in full, and the k-th best of them is the bound. Terms whose
  maxima together stay under it cannot lift a unit into the top k on their own, so only units
  holding one of the other terms are candidates (the MaxScore idea). A candidate's partial sum
  is a lower bound of its score, the partial sum plus the remaining terms' maxima an upper
  bound; candidates whose upper bound falls under the k-th best lower bound are dropped, term
  after term, until a few hundred are left. Those are scored exactly, adding the terms'
  contributions in query order as FTS5 does. Ties are broken by rowid, ascending.

Contributions are positive, so a float sum of them never falls below any of its parts; the
bounds carry a relative margin of 1e-9, far above rounding error, so pruning never drops a unit
that belongs in the top k.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
MAX_K = 100
_MARGIN = 1e-9
_FEW = 256  # candidates few enough to score exactly, term by term

PostingsLoader = Callable[[str], tuple[np.ndarray, np.ndarray]]
"""term -> (rowids ascending, occurrences in each), for every unit holding the term."""


class _Column:
    """A numpy array that grows by doubling, for appends one at a time."""

    def __init__(self, dtype: type, data: np.ndarray | None = None) -> None:
        self.data = np.zeros(16, dtype=dtype) if data is None else np.ascontiguousarray(
            data, dtype=dtype)
        self.size = 0 if data is None else len(data)

    def append(self, value: float | int | bool) -> None:
        self.extend(np.array([value]))

    def extend(self, values: np.ndarray) -> None:
        if self.data.dtype.kind == "u" and len(values) and (
                values.max() > np.iinfo(self.data.dtype).max):
            self.data = self.data.astype(np.int64)
        end = self.size + len(values)
        if end > len(self.data):
            grown = np.zeros(max(16, 2 * len(self.data), end), dtype=self.data.dtype)
            grown[:self.size] = self.data[:self.size]
            self.data = grown
        self.data[self.size:end] = values
        self.size = end

    @property
    def view(self) -> np.ndarray:
        return self.data[:self.size]


@dataclass
class _Postings:
    slots: _Column
    tfs: _Column


@dataclass(frozen=True)
class _Weights:
    slots: np.ndarray      # live units holding the term, ascending
    contrib: np.ndarray    # the term's BM25 contribution in each
    best: np.ndarray       # positions of the largest contributions, largest first (<= MAX_K)


@dataclass(frozen=True)
class _Term:
    slots: np.ndarray
    contrib: np.ndarray
    top: float             # the largest contribution
    kth: float             # the k-th largest contribution, 0 when fewer than k units
    best: np.ndarray       # the slots of the k largest contributions


class Bm25Index:
    """Units are numbered by slot in arrival order; each keeps the rowid FTS5 knows it by."""

    def __init__(self, loader: PostingsLoader) -> None:
        self._loader = loader
        self._rowid = _Column(np.int64)
        self._length = _Column(np.int64)
        self._live = _Column(np.bool_)
        # Timestamps as UTF-8 bytes (ISO strings compare as the SQL path compares them): those
        # bulk-loaded in one array, later ones in a list, joined when a filter needs them.
        self._ts_loaded = np.zeros(0, dtype="S1")
        self._ts_added: list[bytes] = []
        self._ts_array: np.ndarray | None = None
        self._slot_of = np.full(16, -1, dtype=np.int64)  # rowid -> slot, -1 when none
        self._n_live = 0
        self._tokens = 0
        self._postings: dict[str, _Postings] = {}
        self._weights: dict[str, _Weights] = {}
        self.terms_loaded = 0

    # --- contents ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n_live

    def load(self, rowids: np.ndarray, lengths: np.ndarray, timestamps: Sequence[str]) -> None:
        """Add many units at once (before any term is loaded), rowids ascending."""
        if self._rowid.size:
            raise RuntimeError("bulk load into an index that is not empty")
        if not len(rowids) == len(lengths) == len(timestamps):
            raise ValueError("rowids, lengths and timestamps differ in length")
        if len(rowids) == 0:
            return
        if np.any(np.diff(rowids) <= 0):
            raise ValueError("rowids must be unique and ascending")
        self._rowid = _Column(np.int64, rowids)
        self._length = _Column(np.int64, lengths)
        self._live = _Column(np.bool_, np.ones(len(rowids), dtype=np.bool_))
        self._ts_loaded = np.array([t.encode() for t in timestamps])
        self._slot_of = np.full(int(rowids[-1]) + 1, -1, dtype=np.int64)
        self._slot_of[rowids] = np.arange(len(rowids))
        self._n_live = len(rowids)
        self._tokens = int(lengths.sum())
        self._changed()

    def add(self, units: Iterable[tuple[int, str, list[str]]]) -> None:
        """New units: (rowid, timestamp, the tokens FTS5 indexed for it), rowids ascending."""
        found: dict[str, tuple[list[int], list[int]]] = {}
        for rowid, timestamp, tokens in units:
            slot = self._add_unit(rowid, len(tokens), timestamp)
            if self._postings:
                counts = Counter(tokens)
                for term in self._postings.keys() & counts.keys():
                    slots, tfs = found.setdefault(term, ([], []))
                    slots.append(slot)
                    tfs.append(counts[term])
        for term, (slots, tfs) in found.items():
            p = self._postings[term]
            p.slots.extend(np.array(slots))
            p.tfs.extend(np.array(tfs))

    def remove(self, rowid: int) -> bool:
        """Forget the unit with this rowid; False when the index does not hold it."""
        slot = int(self._slot_of[rowid]) if rowid < len(self._slot_of) else -1
        if slot < 0:
            return False
        self._slot_of[rowid] = -1
        self._live.data[slot] = False
        self._n_live -= 1
        self._tokens -= int(self._length.data[slot])
        self._changed()
        return True

    def _add_unit(self, rowid: int, length: int, ts: str) -> int:
        if rowid >= len(self._slot_of):
            grown = np.full(max(2 * len(self._slot_of), rowid + 1), -1, dtype=np.int64)
            grown[:len(self._slot_of)] = self._slot_of
            self._slot_of = grown
        elif self._slot_of[rowid] >= 0:
            raise RuntimeError(f"rowid {rowid} is already indexed")
        slot = self._rowid.size
        self._rowid.append(rowid)
        self._length.append(length)
        self._live.append(True)
        self._ts_added.append(ts.encode())
        self._slot_of[rowid] = slot
        self._n_live += 1
        self._tokens += length
        self._changed()
        return slot

    def _changed(self) -> None:
        # N and the average length change with every write, so every weight does.
        self._weights.clear()
        self._ts_array = None

    def memory_bytes(self) -> int:
        """Bytes held by the index's arrays (per unit, postings and cached weights)."""
        arrays = [self._rowid.data, self._length.data, self._live.data, self._slot_of]
        arrays.append(self._ts_loaded)
        if self._ts_array is not None:
            arrays.append(self._ts_array)
        for p in self._postings.values():
            arrays += [p.slots.data, p.tfs.data]
        for w in self._weights.values():
            arrays += [w.slots, w.contrib, w.best]
        timestamps = sys.getsizeof(self._ts_added) + sum(map(sys.getsizeof, self._ts_added))
        return sum(a.nbytes for a in arrays) + timestamps

    # --- statistics -------------------------------------------------------------------------

    def doc_freq(self, term: str) -> int:
        """Live units holding ``term`` (loads its postings)."""
        return len(self._weights_of(term).slots)

    def _postings_of(self, term: str) -> _Postings:
        p = self._postings.get(term)
        if p is None:
            rowids, tfs = self._loader(term)
            inside = rowids < len(self._slot_of)
            slots = np.where(inside, self._slot_of[np.where(inside, rowids, 0)], -1)
            if np.any(slots < 0):
                raise RuntimeError(f"FTS5 holds units for {term!r} this index does not know: "
                                   "it is out of step with the table")
            if np.any(np.diff(slots) <= 0):  # slots follow rowids; kept sorted whatever happens
                order = np.argsort(slots, kind="stable")
                slots, tfs = slots[order], tfs[order]
            p = _Postings(_Column(np.int32, slots), _Column(_count_type(tfs), tfs))
            self._postings[term] = p
            self.terms_loaded += 1
        return p

    def _weights_of(self, term: str) -> _Weights:
        w = self._weights.get(term)
        if w is not None:
            return w
        p = self._postings_of(term)
        slots, tfs = p.slots.view, p.tfs.view
        live = self._live.data[slots]
        if not live.all():  # drop units removed since: the postings shrink for good
            p.slots = _Column(np.int32, slots[live])
            p.tfs = _Column(tfs.dtype.type, tfs[live])
            slots, tfs = p.slots.view, p.tfs.view
        n, total = len(slots), self._n_live
        idf = math.log((total - n + 0.5) / (n + 0.5))
        if idf <= 0.0:
            idf = IDF_FLOOR
        avgdl = float(self._tokens) / float(total) if total else 1.0
        tf = tfs.astype(np.float64)
        length = self._length.data[slots].astype(np.float64)
        # fts5Bm25Function: idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))).
        contrib = idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * length / avgdl)))
        # ``slots`` is a view of the postings: later appends land beyond its end or in a new
        # buffer, and clear this cache anyway.
        w = _Weights(slots, contrib, _largest(contrib, MAX_K))
        self._weights[term] = w
        return w

    def _admitted(self, start: str | None, end: str | None) -> np.ndarray:
        """Per slot: is its timestamp inside [start, end]? Compared as ISO strings, as the
        SQL path compares them."""
        if self._ts_array is None:
            self._ts_array = (np.concatenate([self._ts_loaded, np.array(self._ts_added)])
                              if self._ts_added else self._ts_loaded)
        mask = np.ones(len(self._ts_array), dtype=bool)
        if start is not None:
            mask &= self._ts_array >= start.encode()
        if end is not None:
            mask &= self._ts_array <= end.encode()
        return mask

    # --- search -----------------------------------------------------------------------------

    def search(self, terms: Sequence[str], k: int, start: str | None = None,
               end: str | None = None) -> list[tuple[int, float]]:
        """The ``k`` best (rowid, score) for a query OR-ing single-token ``terms`` (a term
        given twice counts twice, as a phrase repeated in an FTS5 query does), best first."""
        if k <= 0 or not terms or self._n_live == 0:
            return []
        filtered = start is not None or end is not None
        admit = self._admitted(start, end) if filtered else None
        query: list[_Term] = []
        for term in terms:
            w = self._weights_of(term)
            slots, contrib = w.slots, w.contrib
            if admit is not None:
                keep = admit[slots]
                slots, contrib = slots[keep], contrib[keep]
                best = _largest(contrib, k)
            else:
                best = w.best[:k]
            if len(slots):
                query.append(_Term(slots, contrib, float(contrib[best[0]]),
                                   float(contrib[best[k - 1]]) if len(best) >= k else 0.0,
                                   slots[best]))
        if not query:
            return []
        survivors = self._candidates(query, k)
        # Exact scores, adding each term's contribution (or 0.0) in query order, as FTS5 does.
        scores = np.zeros(len(survivors))
        for t in query:
            scores += _contributions(t, survivors)
        rowids = self._rowid.data[survivors]
        best = np.lexsort((rowids, -scores))[:k]
        return list(zip(rowids[best].tolist(), scores[best].tolist(), strict=True))

    def _candidates(self, query: list[_Term], k: int) -> np.ndarray:
        """Slots that may belong in the top ``k``, ascending: a superset of the true top k,
        usually little more than it."""
        # A lower bound of the k-th best score: every unit among one term's k largest
        # contributions scores at least that much; better, the k-th best score of the units
        # found that way, scored in full.
        floor = max(t.kth for t in query)
        seeds = np.unique(np.concatenate([t.best for t in query]))
        if len(seeds) >= k:
            scores = sum((_contributions(t, seeds) for t in query), np.zeros(len(seeds)))
            floor = max(floor, float(np.partition(scores, len(seeds) - k)[len(seeds) - k])
                        * (1 - _MARGIN))
        terms = sorted(query, key=lambda t: t.top, reverse=True)
        # beyond[i]: the most that terms[i:] can add to any unit's score.
        beyond = [0.0] * (len(terms) + 1)
        for i in range(len(terms) - 1, -1, -1):
            beyond[i] = beyond[i + 1] + terms[i].top
        # Sum the terms that can lift a unit to ``floor`` over the units they hold; a unit none
        # of them holds scores below ``floor`` and is out.
        done = 0
        while done < len(terms) and beyond[done] * (1 + _MARGIN) >= floor:
            done += 1
        spread: np.ndarray | None = None  # one term's contributions by slot, when that pays
        if done == 1:
            slots, partial = terms[0].slots, terms[0].contrib
        else:
            sums = np.zeros(self._rowid.size)
            for t in terms[:done]:
                sums[t.slots] += t.contrib
            slots = np.flatnonzero(sums)
            partial = sums[slots]
        # A partial sum is a lower bound of a unit's score, the partial sum plus what the other
        # terms may add an upper bound: drop the units whose upper bound is under the k-th best
        # lower bound, add the next term's contributions to the rest, and again, while there
        # are many.
        while True:
            if len(slots) > k:
                kth = np.partition(partial, len(partial) - k)[len(partial) - k]
                bar = max(float(kth) * (1 - _MARGIN), floor)
                keep = (partial + beyond[done]) * (1 + _MARGIN) >= bar
                slots, partial = slots[keep], partial[keep]
            if len(slots) <= _FEW or done == len(terms):
                return slots
            t = terms[done]
            done += 1
            # Looking each unit up in the term's postings costs a binary search per unit;
            # adding the whole postings to a dense array costs one pass over them.
            if len(slots) * 8 < len(t.slots):
                partial = partial + _contributions(t, slots)
            else:
                if spread is None:
                    spread = np.zeros(self._rowid.size)
                spread[t.slots] = t.contrib
                partial = partial + spread[slots]
                spread[t.slots] = 0.0


def _contributions(term: _Term, slots: np.ndarray) -> np.ndarray:
    """``term``'s contribution to each of ``slots`` (ascending), 0.0 where it does not occur."""
    at = np.searchsorted(term.slots, slots)
    at[at == len(term.slots)] = 0
    return np.where(term.slots[at] == slots, term.contrib[at], 0.0)


def _count_type(counts: np.ndarray) -> type:
    """The narrowest unsigned type holding ``counts`` (occurrences rarely pass 255)."""
    top = int(counts.max()) if len(counts) else 0
    for kind in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(kind).max:
            return kind
    return np.int64


def _largest(values: np.ndarray, n: int) -> np.ndarray:
    """Positions of the ``n`` largest of ``values``, largest first."""
    at = np.argpartition(values, len(values) - n)[len(values) - n:] if len(values) > n else (
        np.arange(len(values)))
    return at[np.argsort(values[at], kind="stable")[::-1]]
