"""Control characters made visible wherever lens writes or prints text it did not write itself.

Ids, labels, answers and error messages come from datasets, configs, adapters and models. An
ESC or BEL in them would drive the reader's terminal, a newline would start a heading in
report.md or a row in a table, a NUL breaks HTML. Every report writer and command-line printer
passes such text through :func:`visible`.
"""

from __future__ import annotations

# C0 controls and DEL become their Unicode "control pictures" (ESC → ␛, newline → ␊), which
# read as what they stand for; C1 controls (CSI 0x9b acts like ESC [ in some terminals) have
# no pictures and are written as escapes.
_PICTURES = {c: chr(0x2400 + c) for c in range(32)} | {0x7F: "\u2421"}
_C1 = {c: f"\\x{c:02x}" for c in range(0x80, 0xA0)}
# Bidirectional overrides and isolates reorder the text around them on screen, so that what a
# reader sees is not what is there.
_BIDI = {c: f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
_ONE_LINE = str.maketrans(_PICTURES | _C1 | _BIDI)
_MULTI_LINE = str.maketrans({c: v for c, v in (_PICTURES | _C1 | _BIDI).items()
                             if c not in (0x09, 0x0A)})


def visible(text: object, *, multiline: bool = False) -> str:
    """``text`` with control characters shown, not obeyed; with ``multiline``, newlines and
    tabs are kept (for transcripts and other running text)."""
    return str(text).translate(_MULTI_LINE if multiline else _ONE_LINE)
