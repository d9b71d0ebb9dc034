"""lens's event-loop entry point: which loop runs, and the collector tuned only for the run."""

from __future__ import annotations

import asyncio
import gc

import pytest

from lens.core import eventloop


async def _loop_and_threshold() -> tuple[str, int]:
    return type(asyncio.get_running_loop()).__module__, gc.get_threshold()[0]


@pytest.mark.skipif(not eventloop.uvloop_available(), reason="uvloop is not installed")
def test_uvloop_runs_where_installed_and_asyncio_on_request() -> None:
    module, _ = eventloop.run(_loop_and_threshold)
    assert module.startswith("uvloop")
    module, _ = eventloop.run(_loop_and_threshold, loop="asyncio")
    assert module.startswith("asyncio")
    assert eventloop.loop_in_use() == "uvloop" and eventloop.loop_in_use("asyncio") == "asyncio"


def test_collector_threshold_raised_during_the_run_and_restored() -> None:
    before = gc.get_threshold()
    _, inside = eventloop.run(_loop_and_threshold, loop="asyncio")
    assert inside == max(before[0], eventloop.GEN0_THRESHOLD)
    assert gc.get_threshold() == before

    async def fail() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        eventloop.run(fail, loop="asyncio")
    assert gc.get_threshold() == before


def test_run_passes_arguments_and_returns_the_result() -> None:
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    assert eventloop.run(add, 2, 3) == 5


async def _freeze_count() -> int:
    return gc.get_freeze_count()


def test_objects_alive_at_the_start_are_frozen_for_the_run_only() -> None:
    # What exists before the run is left out of its collections, then handed back.
    assert gc.get_freeze_count() == 0
    assert eventloop.run(_freeze_count, loop="asyncio") > 0
    assert gc.get_freeze_count() == 0


def test_a_freeze_made_by_someone_else_is_left_alone() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        # Frozen objects may die meanwhile; none is added, and the freeze outlives the run.
        assert 0 < eventloop.run(_freeze_count, loop="asyncio") <= frozen
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
