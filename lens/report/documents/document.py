"""One model of a report, and its two renderings.

A report is a list of blocks (headings, paragraphs, tables, lists, and pre-rendered pieces such
as plots or a plugin's section). :mod:`lens.report.documents.layout` decides what the blocks are;
:func:`to_markdown` and :func:`to_html` only decide how each kind of block looks, so the two
files always carry the same content. Every text is escaped here, once, for its format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, Literal

from lens.core.visible import visible

Style = Literal["", "na", "pass", "warn", "fail", "meta", "note", "nc"]
Format = Literal["markdown", "html"]
BOTH: frozenset[Format] = frozenset({"markdown", "html"})
STATUS_LABEL = {"na": "N/A", "pass": "PASS", "warn": "WARN", "fail": "FAIL"}

@dataclass(frozen=True)
class Styled:
    """Text with a meaning a format can show: a status badge, a highlighted verdict."""

    text: str
    style: Style = ""
    badge: bool = False


@dataclass(frozen=True)
class Parts:
    """A cell made of several pieces, e.g. a styled verdict followed by its reason."""

    items: tuple[str | Styled, ...]


Cell = str | Styled | Parts


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2
    formats: frozenset[Format] = BOTH


@dataclass(frozen=True)
class Para:
    text: str
    style: Style = ""
    formats: frozenset[Format] = BOTH


@dataclass(frozen=True)
class Table:
    head: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    table_id: str = ""
    formats: frozenset[Format] = BOTH


@dataclass(frozen=True)
class Bullets:
    items: Sequence[str]
    style: Style = ""
    formats: frozenset[Format] = BOTH


@dataclass(frozen=True)
class Raw:
    """Content already rendered for each format (plots, a plugin's section); empty: absent."""

    markdown: str = ""
    html: str = ""
    formats: frozenset[Format] = field(default=BOTH)


Block = Heading | Para | Table | Bullets | Raw


# -- Markdown --------------------------------------------------------------------------------

def md_text(text: object) -> str:
    """Text from datasets, models and adapters, made inert for markdown renderers that pass
    raw HTML through (entities still display as the characters they stand for)."""
    return visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _md_piece(piece: str | Styled) -> str:
    if isinstance(piece, Styled):
        return f"**{md_text(piece.text)}**" if piece.badge else md_text(piece.text)
    return md_text(piece)


def md_cell(cell: Cell | object) -> str:
    if isinstance(cell, Parts):
        text = "".join(_md_piece(p) for p in cell.items)
    elif isinstance(cell, Styled):
        text = _md_piece(cell)
    else:
        text = md_text(cell)
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(head: Sequence[str], rows: Sequence[Sequence[Cell | object]]) -> list[str]:
    out = ["| " + " | ".join(md_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def _md_block(block: Block) -> list[str]:
    if isinstance(block, Heading):
        return ["#" * block.level + " " + md_text(block.text), ""]
    if isinstance(block, Para):
        text = md_text(block.text)
        return [f"**{text}**" if block.style == "nc" else text, ""]
    if isinstance(block, Table):
        return md_table(block.head, block.rows)
    if isinstance(block, Bullets):
        return [*(f"- {md_text(i)}" for i in block.items), ""]
    return [block.markdown.rstrip(), ""] if block.markdown else []


def to_markdown_lines(blocks: Sequence[Block]) -> list[str]:
    return [line for b in blocks if "markdown" in b.formats for line in _md_block(b)]


def to_markdown(blocks: Sequence[Block]) -> str:
    return "\n".join(to_markdown_lines(blocks)).rstrip() + "\n"


# -- HTML ------------------------------------------------------------------------------------

def e(x: Any) -> str:
    # Newlines and tabs stay: transcripts are running text in <pre>. A NUL is a parse error in
    # HTML and an ESC would hide text in a terminal dump, so the rest are shown as pictures.
    return escape(visible("" if x is None else x, multiline=True), quote=True)


def _html_piece(piece: str | Styled) -> str:
    if not isinstance(piece, Styled):
        return e(piece)
    if piece.badge:
        return f'<span class="badge {e(piece.style)}">{e(piece.text)}</span>'
    return f'<span class="{e(piece.style)}">{e(piece.text)}</span>' if piece.style else e(
        piece.text)


def html_cell(cell: Cell | object) -> str:
    if isinstance(cell, Parts):
        return "".join(_html_piece(p) for p in cell.items)
    if isinstance(cell, Styled):
        return _html_piece(cell)
    return e(cell)


def html_table(head: Sequence[str], rows: Sequence[Sequence[Cell | object]],
               table_id: str = "") -> str:
    tid = f' id="{e(table_id)}"' if table_id else ""
    h = "".join(f"<th>{e(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html_cell(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f'<table class="data"{tid}><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def _html_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{e(block.text)}</h{block.level}>"
    if isinstance(block, Para):
        cls = f' class="{block.style}"' if block.style else ""
        return f"<p{cls}>{e(block.text)}</p>"
    if isinstance(block, Table):
        return html_table(block.head, block.rows, block.table_id)
    if isinstance(block, Bullets):
        cls = f' class="{block.style}"' if block.style else ""
        return f"<ul{cls}>" + "".join(f"<li>{e(i)}</li>" for i in block.items) + "</ul>"
    return block.html


def to_html(blocks: Sequence[Block]) -> str:
    return "\n".join(h for b in blocks if "html" in b.formats and (h := _html_block(b)))
