from __future__ import annotations

from goldevidence.baselines import predict_ledger
from goldevidence.book import validate_book
from goldevidence.config import preset
from goldevidence.generate import generate

MODES = ["kv", "kv_commentary", "counter", "set", "relational"]


def _book() -> str:
    return generate(preset("smoke", state_mode="kv_commentary", note_rate=0.5), seed=0)[0]["book"]


def test_generated_books_are_valid_in_every_mode() -> None:
    for mode in MODES:
        for r in generate(preset("smoke", state_mode=mode), seed=3)[:1]:
            check = validate_book(r["book"])
            assert check.ok, check.errors


def test_book_has_chapters_glossary_and_ledger_with_notes() -> None:
    book = _book()
    assert "## Chapter 1" in book and "## Glossary (Tags)" in book
    assert " NOTE tag." in book.split("## State Ledger", 1)[1]


def test_validator_rejects_unknown_sections() -> None:
    book = _book().replace("## Chapter 2", "## Secret Orders")
    check = validate_book(book)
    assert not check.ok
    assert any("unknown section '## Secret Orders'" in e for e in check.errors)


def test_validator_rejects_ledger_lines_that_break_the_grammar() -> None:
    book = _book().rstrip("\n") + "\n- [U12345] step=9 SET tag.01 = x\n"
    assert any("ledger line breaks the grammar" in e for e in validate_book(book).errors)
    book2 = _book().rstrip("\n") + "\n- [UABCDEF] step=9 DELETE tag.01\n"
    assert not validate_book(book2).ok


def test_validator_rejects_leaks_and_missing_sections() -> None:
    book = _book()
    leaked = book.replace("## Chapter 1\n", "## Chapter 1\n- [UABCDEF] UPDATE step=1 SET tag.00 "
                                            "= amber-0001\n")
    assert any("leaked" in e for e in validate_book(leaked).errors)
    no_ledger = book.split("## State Ledger", 1)[0]
    assert "missing section: ledger" in validate_book(no_ledger).errors
    assert not validate_book("no title here").ok


def test_closed_book_ledger_baseline_reads_only_the_book() -> None:
    rows = generate(preset("smoke"), seed=1)
    for r in rows:
        pred = predict_ledger({**r, "document": None}, "closed_book")
        assert pred["value"] == r["gold"]["value"]
