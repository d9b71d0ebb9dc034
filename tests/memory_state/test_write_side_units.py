"""The write-side measures on hand-built listings: how an update is held, which items state a
figure no episode states, and the superseded figure read from a generated scope."""

from __future__ import annotations

from pathlib import Path

from lens.data.datagen.updates import Update, updates_of
from lens.data.dataset import Scope
from lens.data.dataset_load import load_dataset
from lens.memory.listing import MemoryItem, MemoryListing
from lens.scoring.measures.write_side import false_items, update_kind

ROOT = Path(__file__).resolve().parents[2]
UPDATE = Update(subject="auth p99 latency", date="2024-03-20", current="274 ms", stale="828 ms",
                stale_episode="a", correcting_episode="b", at=3)


def listing(*texts: str) -> MemoryListing:
    return MemoryListing(items=[MemoryItem(item_id=str(i), text=t) for i, t in enumerate(texts)])


def test_each_way_of_holding_an_update() -> None:
    assert update_kind(UPDATE, listing("auth p99 latency on 2024-03-20: 274 ms")) == "current"
    # The stale report kept beside the correction that names both: the memory says which holds.
    assert update_kind(UPDATE, listing("auth p99 828 ms",
                                       "auth p99 latency was 274 ms, not 828 ms")) == "current"
    assert update_kind(UPDATE, listing("auth p99 828 ms", "auth p99 274 ms")) == "both"
    assert update_kind(UPDATE, listing("auth p99 828 ms")) == "stale"
    assert update_kind(UPDATE, listing("auth p99 231 ms")) == "neither"
    assert update_kind(UPDATE, MemoryListing()) == "neither"


def test_a_figure_no_episode_states_is_a_false_memory() -> None:
    said = "checkout p99 410 ms on 2024-05-01; 1,204 orders"
    found = false_items(listing("checkout p99 410 ms", "about 1,204 orders",
                                "checkout p99 peaked at 980 ms", "no figures here"), said)
    assert found == ["2"]


def test_every_shipped_generated_scope_records_its_correction() -> None:
    ds = load_dataset(ROOT / "datasets" / "standard.json")
    for scope in ds.scopes:
        (update,) = updates_of(scope)
        ordered = scope.ordered_episodes()
        assert ordered[update.at].episode_id == update.correcting_episode
        assert update.stale in next(e.text for e in ordered
                                    if e.episode_id == update.stale_episode)
    bare = Scope(scope_id="x", episodes=ds.scopes[0].episodes[:3])
    assert updates_of(bare) == []


def test_a_record_line_holds_a_fact_under_its_short_label() -> None:
    from lens.scoring.measures.write_side import held_facts

    facts = ["notifications p99 latency: 215 ms", "auth p99: 273 ms",
             "DEP-5266: 2024-09-30", "checkout p99 latency: 215 ms"]
    record = listing("### Dependencies\n- auth: p99 287 ms\n- notifications: p99 215 ms\n"
                     "- DEP-5266 rolled out on 2024-09-30")
    # The figure beside the subject's words; another subject's figure, or another figure of
    # this subject, is not held.
    assert held_facts(facts, record) == [True, False, True, False]


def test_a_distractors_figure_under_the_targets_name_is_a_false_memory() -> None:
    from lens.scoring.measures.write_side import FactReader, misattributed_items

    episodes = ["- auth: p99 287 ms\n- notifications: p99 215 ms",
                "- auth: p99 291 ms\n- notifications: p99 230 ms"]
    memory = listing("notifications p99 latency rose from 215 ms to 230 ms",
                     "notifications p99 latency was 291 ms",  # auth's figure, misfiled
                     "auth p99 latency was 291 ms")
    assert misattributed_items(memory, episodes, "notifications p99 latency",
                               FactReader()) == ["1"]
