"""``lens adapters`` and ``lens adapters check`` from the command line."""

from __future__ import annotations

import json

import pytest

from lens.commands.cli import main
from lens.core.distribution import install_hint


def test_list_shows_every_builtin_with_capabilities(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["adapters", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name in ("null", "sqlite_fts", "sqlite_fts_chunked", "vector", "vector_chunked",
                 "hybrid", "hybrid_chunked", "full_context", "recency", "mem0", "postgres"):
        assert name in rows, name
        assert rows[name]["source"] == "built-in"
    fts = rows["sqlite_fts"]
    assert fts["available"] and fts["capabilities"]["filter_fields"] == ["start_date", "end_date"]
    assert rows["recency"]["capabilities"]["search_modes"] == ["recency"]


def test_list_text_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["adapters"]) == 0
    out = capsys.readouterr().out
    assert "sqlite_fts  [built-in]" in out
    assert "search: keyword; filters: start_date,end_date; max_results: 10" in out


def test_check_passes_a_good_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["adapters", "check", "sqlite_fts"]) == 0
    out = capsys.readouterr().out
    assert "12 passed, 0 failed, 1 skipped" in out  # no standing context


def test_check_by_module_path_and_failure_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    # recency with n=2 cannot find older episodes: an honest failure, exit 1.
    code = main(["adapters", "check", "lens.adapters.in_context:RecencyAdapter",
                 "--options", '{"n": 2}', "--only", "exact_phrase_found"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  exact_phrase_found" in out and "0 passed, 1 failed" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["adapters", "check", "nope"], "unknown adapter 'nope'"),
    (["adapters", "check", "sqlite_fts", "--options", "{bad"], "--options: not valid JSON"),
    (["adapters", "check", "sqlite_fts", "--options", "[1]"], "must be a JSON object"),
    (["adapters", "check", "sqlite_fts", "--options", '{"max_results": 0}'],
     "--options.max_results"),
    (["adapters", "check", "sqlite_fts", "--only", "bogus"], "unknown check(s) 'bogus'"),
])
def test_check_user_errors_exit_2(argv: list[str], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_list_names_the_gateway_adapters_as_needing_a_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    """An adapter whose memory system calls models through the gateway has no capabilities
    before a run gives it one: listed, with that said (or unavailable, naming the extra)."""
    assert main(["adapters", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name in ("langmem", "graphiti", "letta", "cognee"):
        row = rows[name]
        if row["available"]:
            assert row["capabilities"] is None and "model gateway" in row["note"]
        else:
            assert install_hint(name) in row["reason"]
