"""Plugin discovery (lens.core.plugins), scenario hooks (lens.scenarios), plugin prompt templates,
and the one token estimate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lens.core import plugins
from lens.core.tokens import estimate_tokens
from lens.data.prompts import plugin_templates, prompts_hash
from lens.memory.scenarios import after_scoring

CALLS: list[str] = []


class _Recorder:
    def applies(self, manifest: dict[str, Any]) -> bool:
        return manifest.get("mine", False)

    def after_scoring(self, run_dir: Path) -> None:
        CALLS.append(str(run_dir))


class _Broken:
    def applies(self, manifest: dict[str, Any]) -> bool:
        return True

    def after_scoring(self, run_dir: Path) -> None:
        raise ValueError("grader exploded")


RECORDER = _Recorder()
BROKEN = _Broken()
NOT_A_SCENARIO = object()
TEMPLATES = {"test.plugin_template": "Answer in one word."}
NOT_A_MAPPING = ["no"]


def test_added_declarations_are_read_like_installed_ones_and_go_away() -> None:
    with plugins.entry_points_added({"lens.test_group": {"x": "lens.core.tokens:estimate_tokens"}}):
        assert plugins.targets("lens.test_group") == {"x": "lens.core.tokens:estimate_tokens"}
        assert plugins.load_target("lens.core.tokens:estimate_tokens") is estimate_tokens
    assert plugins.targets("lens.test_group") == {}


def test_scenario_hooks_run_only_for_their_runs(tmp_path: Path) -> None:
    CALLS.clear()
    with plugins.entry_points_added({plugins.SCENARIOS: {"rec": f"{__name__}:RECORDER"}}):
        assert after_scoring(tmp_path, {"mine": False}) == []
        assert after_scoring(tmp_path, {"mine": True}) == ["rec"]
    assert [str(tmp_path)] == CALLS


def test_a_failing_or_malformed_scenario_is_a_warning_not_a_stop(tmp_path: Path) -> None:
    declared = {plugins.SCENARIOS: {"broken": f"{__name__}:BROKEN",
                                    "shapeless": f"{__name__}:NOT_A_SCENARIO",
                                    "missing": "no_such_package.mod:X",
                                    "rec": f"{__name__}:RECORDER"}}
    with plugins.entry_points_added(declared), pytest.warns(RuntimeWarning) as warned:
        ran = after_scoring(tmp_path, {"mine": True})
    assert ran == ["rec"]
    text = " ".join(str(w.message) for w in warned)
    assert "grader exploded" in text and "shapeless" in text and "missing" in text


def test_plugin_templates_enter_the_prompts_hash() -> None:
    before = prompts_hash()
    with plugins.entry_points_added({plugins.PROMPT_TEMPLATES: {"t": f"{__name__}:TEMPLATES"}}):
        assert plugin_templates()["test.plugin_template"] == "Answer in one word."
        assert prompts_hash() != before
    assert prompts_hash() == before


def test_a_template_plugin_that_gives_no_mapping_is_named() -> None:
    declared = {plugins.PROMPT_TEMPLATES: {"bad": f"{__name__}:NOT_A_MAPPING"}}
    with plugins.entry_points_added(declared), pytest.raises(RuntimeError, match=r"'bad'.*mapping"):
        plugin_templates()


def test_token_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1  # any text costs something
    assert estimate_tokens("x" * 40) == 10
