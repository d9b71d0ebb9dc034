"""Records saved in batches: everything is saved once, failures reach every waiter of their
batch, and a cancelled writer never leaves the others waiting."""

from __future__ import annotations

import threading

import anyio
import pytest

from lens.runs.batch_save import BatchSaver


class Disk:
    def __init__(self, fail_on: str | None = None, block: threading.Event | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on
        self.block = block

    def save_many(self, items: list[str]) -> None:
        if self.block is not None:
            self.block.wait(5)
        if self.fail_on in items:
            raise OSError(f"disk full at {self.fail_on}")
        self.batches.append(list(items))


def test_items_finishing_together_share_a_batch() -> None:
    disk = Disk()
    saver: BatchSaver[str] = BatchSaver(disk.save_many)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(saver.save, f"r{i}")

    anyio.run(main)
    saved = [x for b in disk.batches for x in b]
    assert sorted(saved) == sorted(f"r{i}" for i in range(50)) and len(saved) == 50
    # The first goes alone; the rest waited for it and went together.
    assert len(disk.batches) < 5, disk.batches


def test_a_failed_batch_fails_each_of_its_items_and_the_next_batch_still_goes() -> None:
    disk = Disk(fail_on="bad")
    saver: BatchSaver[str] = BatchSaver(disk.save_many)
    outcomes: dict[str, str] = {}

    async def save(item: str) -> None:
        try:
            await saver.save(item)
            outcomes[item] = "saved"
        except OSError as exc:
            outcomes[item] = str(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for item in ("bad", "a", "b"):
                tg.start_soon(save, item)
        await save("later")

    anyio.run(main)
    assert outcomes["bad"] == "disk full at bad"
    assert outcomes["later"] == "saved"
    saved = {x for b in disk.batches for x in b}
    for item in ("a", "b"):
        # Each either went with "bad" (and failed with it) or in a batch of its own.
        assert (outcomes[item] == "saved") == (item in saved)


def test_a_cancelled_writer_hands_over_to_a_waiter() -> None:
    release = threading.Event()
    disk = Disk(block=release)
    saver: BatchSaver[str] = BatchSaver(disk.save_many)

    async def main() -> None:
        with anyio.fail_after(60):  # far bound: a hand-over that never comes
            await run()

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            writer = anyio.CancelScope()

            async def first() -> None:
                with writer:
                    await saver.save("first")

            tg.start_soon(first)
            await anyio.sleep(0.05)  # "first" is writing its batch, blocked on the disk
            tg.start_soon(saver.save, "second")
            await anyio.sleep(0.05)
            writer.cancel()
            release.set()
        # "second" was saved by the waiter that took over; nothing hangs.

    anyio.run(main)
    assert [x for b in disk.batches for x in b] == ["first", "second"]


def test_an_item_saved_alone_is_not_delayed() -> None:
    disk = Disk()
    saver: BatchSaver[str] = BatchSaver(disk.save_many)
    anyio.run(saver.save, "only")
    assert disk.batches == [["only"]]


@pytest.mark.parametrize("n", [1, 7])
def test_every_item_is_saved_exactly_once(n: int) -> None:
    disk = Disk()
    saver: BatchSaver[str] = BatchSaver(disk.save_many)

    async def main() -> None:
        for round_ in range(3):
            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(saver.save, f"{round_}-{i}")

    anyio.run(main)
    saved = [x for b in disk.batches for x in b]
    assert sorted(saved) == sorted(f"{r}-{i}" for r in range(3) for i in range(n))
