"""FTS5's ``unicode61`` tokenizer in Python: the tokens an FTS5 table holds for a text.

An index kept beside an FTS5 table (``adapters.bm25_index``) must split text exactly as FTS5 does,
or its BM25 scores would drift from FTS5's. ``unicode61`` works one character at a time: a token
starts at a token character (by default ASCII letters and digits and, beyond ASCII, Unicode
letters, numbers and private-use characters), continues through token characters and combining
diacritics, and ends at any other character. Every character of a token is case-folded and, by
default, stripped of its diacritic; a token longer than 32,768 bytes is cut to that length.

Which character is a letter, and what it folds to, comes from Unicode tables compiled into
SQLite. They differ from Python's ``unicodedata`` (SQLite treats unassigned code points as
token characters, for one) and between SQLite versions, so this module does not copy them: the
first time it meets a character it asks the SQLite library it runs with, by tokenizing a probe
text in a scratch FTS5 table, and remembers the answer. Texts are then split with
``str.translate`` and ``str.split``, which run in C.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterable

TOKENIZE = "unicode61"
MAX_TOKEN_BYTES = 32768  # FTS5_MAX_TOKEN_SIZE: longer tokens are cut, in the index and in queries

SEPARATOR, TOKEN_CHAR, DIACRITIC = 0, 1, 2
_SURROGATES = range(0xD800, 0xE000)


class Unicode61:
    """Tokenizes like an FTS5 table declared with ``tokenize='<spec>'``.

    Any ``unicode61`` spec works (options such as ``remove_diacritics 2`` or ``tokenchars``
    included): they all decide token boundaries and folding one character at a time, which is
    what the probes learn. Thread-safe.
    """

    def __init__(self, spec: str = TOKENIZE) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._kind: dict[str, int] = {}
        self._fold: dict[str, str] = {}
        # str.translate table: separators become a space, token characters their folded form.
        # Diacritics are left in place and handled after the split (see ``_strip_diacritics``).
        self._table: dict[int, str] = {}
        self._diacritics: set[str] = set()
        # Characters whose folded form would fool translate-and-split (empty, several
        # characters, whitespace, or a diacritic): texts holding one take the exact slow path.
        self._awkward: set[str] = set()
        self._learn([chr(c) for c in range(128)])

    # --- public -----------------------------------------------------------------------------

    def tokens(self, text: str) -> list[str]:
        """The tokens FTS5 indexes for ``text``, in order (duplicates kept)."""
        diacritics = False
        if not text.isascii():
            chars = set(text)
            unknown = [c for c in chars if c not in self._kind]
            if unknown:
                self._learn(unknown)
            if not self._awkward.isdisjoint(chars):
                return self._cut(self._tokens_slowly(text))
            diacritics = not self._diacritics.isdisjoint(chars)
        parts = text.translate(self._table).split()
        if diacritics:
            parts = [p for p in map(self._strip_diacritics, parts) if p]
        # A token can pass 32,768 bytes only in a text of more than 8,192 characters.
        return parts if len(text) <= MAX_TOKEN_BYTES // 4 else self._cut(parts)

    # --- splitting --------------------------------------------------------------------------

    def _strip_diacritics(self, part: str) -> str:
        # A diacritic only continues a token: at the start of one it separates (so it is
        # dropped), inside one it is replaced by its folded form (nothing, by default).
        i = 0
        while i < len(part) and part[i] in self._diacritics:
            i += 1
        part = part[i:]
        if any(c in self._diacritics for c in part):
            part = "".join(self._fold[c] if c in self._diacritics else c for c in part)
        return part

    def _tokens_slowly(self, text: str) -> list[str]:
        """The tokenizer's loop, one character at a time."""
        out: list[str] = []
        current: list[str] | None = None
        kind, fold = self._kind, self._fold
        for c in text:
            k = kind[c]
            if current is None:
                if k == TOKEN_CHAR:
                    current = [fold[c]]
            elif k == SEPARATOR:
                out.append("".join(current))
                current = None
            else:
                current.append(fold[c])
        if current is not None:
            out.append("".join(current))
        return out

    @staticmethod
    def _cut(parts: list[str]) -> list[str]:
        # A token of at most 8,192 characters is at most 32,768 UTF-8 bytes.
        if not parts or max(map(len, parts)) <= MAX_TOKEN_BYTES // 4:
            return parts
        out = []
        for p in parts:
            raw = p.encode("utf-8", "surrogatepass")
            if len(raw) > MAX_TOKEN_BYTES:
                # FTS5 may cut inside a character; surrogateescape keeps such a term distinct.
                p = raw[:MAX_TOKEN_BYTES].decode("utf-8", "surrogateescape")
            out.append(p)
        return out

    # --- learning characters from SQLite ----------------------------------------------------

    def _learn(self, chars: Iterable[str]) -> None:
        with self._lock:
            todo = [c for c in dict.fromkeys(chars) if c not in self._kind]
            if not todo:
                return
            for c, (k, f) in zip(todo, self._probe(todo), strict=True):
                self._fold[c] = f
                if k == SEPARATOR:
                    self._table[ord(c)] = " "
                elif k == DIACRITIC:
                    self._diacritics.add(c)
                    if f:
                        self._awkward.add(c)
                    self._awkward.update(t for t, tf in self._fold.items() if tf == c)
                else:
                    if f != c:
                        self._table[ord(c)] = f
                    if len(f) != 1 or f.isspace() or f in self._diacritics:
                        self._awkward.add(c)
                # Published last: readers that see the kind see the rest of the entry.
                self._kind[c] = k

    def _probe(self, chars: list[str]) -> list[tuple[int, str]]:
        """(kind, folded form) of each character, as this SQLite's FTS5 tokenizes it.

        Each character ``c`` is probed with the text ``"c 0c0"``: a separator gives the tokens
        "0" and "0"; a token character gives its folded form, then "0<fold>0" at position 1; a
        diacritic cannot start a token, so only "0<fold>0" at position 0 remains.
        """
        db = self._probe_db()
        db.execute("DELETE FROM probe")
        # SQLite cannot store an unpaired surrogate; FTS5 reads an encoded one as U+FFFD.
        texts = ["\ufffd" if ord(c) in _SURROGATES else c for c in chars]
        db.executemany("INSERT INTO probe(rowid, t) VALUES(?, ?)",
                       [(i, f"{c} 0{c}0") for i, c in enumerate(texts)])
        seen: dict[int, dict[int, str]] = defaultdict(dict)
        for doc, offset, term in db.execute("SELECT doc, offset, term FROM probe_terms"):
            seen[doc][offset] = term
        out = []
        for i, c in enumerate(chars):
            found = seen.get(i, {})
            if found.get(1) == "0":
                out.append((SEPARATOR, ""))
            elif 1 in found:
                out.append((TOKEN_CHAR, found[1][1:-1]))
            elif 0 in found:
                out.append((DIACRITIC, found[0][1:-1]))
            else:
                raise RuntimeError(f"FTS5 tokenizer {self.spec!r} gave no token for the probe "
                                   f"of {c!r}: it is not a unicode61 tokenizer")
        return out

    def _probe_db(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(":memory:", check_same_thread=False)
            spec = "'" + self.spec.replace("'", "''") + "'"
            db.execute(f"CREATE VIRTUAL TABLE probe USING fts5(t, tokenize={spec})")
            db.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, 'instance')")
            self._db = db
        return self._db


_shared: Unicode61 | None = None
_shared_lock = threading.Lock()


def shared_tokenizer() -> Unicode61:
    """One tokenizer per process for the default spec: what it learns serves every adapter."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Unicode61()
        return _shared
