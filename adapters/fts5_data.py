"""Reading what an FTS5 table already knows: each row's length in tokens, and a term's postings.

An in-memory BM25 index built from these numbers agrees with FTS5's own ``bm25()`` by
construction, and costs no re-tokenization of the stored text.
"""

from __future__ import annotations

import sqlite3

import numpy as np


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (big-endian groups of 7 bits, high bit = more)."""
    value = 0
    for i, byte in enumerate(blob):
        if i == 8:  # the ninth byte carries 8 bits
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    raise ValueError(f"truncated varint {blob!r}")


def row_lengths(db: sqlite3.Connection, fts_table: str) -> tuple[np.ndarray, np.ndarray]:
    """(rowids ascending, lengths in tokens) of every row of a one-column FTS5 table.

    FTS5 keeps each row's size in the shadow table ``<table>_docsize`` as one varint per column;
    its ``bm25()`` reads the same numbers.
    """
    rowids: list[int] = []
    lengths: list[int] = []
    for rowid, blob in db.execute(f"SELECT id, sz FROM {fts_table}_docsize ORDER BY id"):
        rowids.append(rowid)
        lengths.append(_varint(blob))
    return np.array(rowids, dtype=np.int64), np.array(lengths, dtype=np.int64)


def postings(db: sqlite3.Connection, instance_vocab: str,
             term: str) -> tuple[np.ndarray, np.ndarray]:
    """(rowids ascending, occurrences in each) of ``term``, read through an ``fts5vocab`` table
    of type 'instance' (one row per occurrence, in rowid order)."""
    # One comma-separated string parsed by numpy: half the time of a Python row per occurrence
    # (common words occur hundreds of thousands of times in a large store).
    (listed,) = db.execute(f"SELECT group_concat(doc) FROM {instance_vocab} WHERE term = ?",
                           (term,)).fetchone()
    if not listed:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    docs = np.fromstring(listed, dtype=np.int64, sep=",")
    if np.any(docs[1:] < docs[:-1]):  # documented order, but cheap to make sure of
        docs.sort(kind="stable")
    starts = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]])
    counts = np.diff(np.r_[starts, docs.size])
    return docs[starts], counts
