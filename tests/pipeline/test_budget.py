"""The byte budget that bounds the files a run holds at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.pipeline._budget import ByteBudget

from .test_run import GOOD, actions, documents, make_project


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def holder(
    budget: ByteBudget, size: int, name: str, log: list[str], go: asyncio.Event
) -> None:
    async with budget.hold(size):
        log.append(f"+{name}")
        await go.wait()
    log.append(f"-{name}")


async def test_files_that_fit_go_together_and_the_next_waits_for_room() -> None:
    budget = ByteBudget(10)
    log: list[str] = []
    go_a, go_b = asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(holder(budget, 4, "a", log, go_a))
    b = asyncio.create_task(holder(budget, 6, "b", log, go_b))
    c = asyncio.create_task(holder(budget, 5, "c", log, asyncio.Event()))
    await settle()
    assert log == ["+a", "+b"] and budget.free == 0
    go_b.set()
    await settle()
    assert log == ["+a", "+b", "-b", "+c"] and budget.free == 1
    go_a.set()
    c.cancel()
    await asyncio.gather(a, b, c, return_exceptions=True)
    assert budget.free == 10


async def test_a_waiting_large_file_is_not_passed_over_by_smaller_ones() -> None:
    budget = ByteBudget(10)
    log: list[str] = []
    go = {name: asyncio.Event() for name in ("small", "large", "later")}
    tasks = [asyncio.create_task(holder(budget, 3, "small", log, go["small"]))]
    await settle()
    tasks.append(asyncio.create_task(holder(budget, 9, "large", log, go["large"])))
    await settle()
    # 7 bytes are free, enough for "later", but it arrived after "large".
    tasks.append(asyncio.create_task(holder(budget, 2, "later", log, go["later"])))
    await settle()
    assert log == ["+small"]
    go["small"].set()
    await settle()
    assert log == ["+small", "-small", "+large"]
    go["large"].set()
    go["later"].set()
    await asyncio.gather(*tasks)
    assert log[3:5] == ["-large", "+later"] and budget.free == 10


async def test_a_file_larger_than_the_budget_goes_alone() -> None:
    budget = ByteBudget(10)
    log: list[str] = []
    go_small, go_huge = asyncio.Event(), asyncio.Event()
    small = asyncio.create_task(holder(budget, 1, "small", log, go_small))
    huge = asyncio.create_task(holder(budget, 10_000, "huge", log, go_huge))
    await settle()
    assert log == ["+small"]
    go_small.set()
    await settle()
    assert log == ["+small", "-small", "+huge"] and budget.free == 0
    go_huge.set()
    await asyncio.gather(small, huge)
    assert budget.free == 10


async def test_a_cancelled_waiter_gives_its_place_to_the_ones_behind_it() -> None:
    budget = ByteBudget(10)
    log: list[str] = []
    go_first, go_last = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(holder(budget, 5, "first", log, go_first))
    await settle()
    blocked = asyncio.create_task(holder(budget, 8, "blocked", log, asyncio.Event()))
    await settle()
    last = asyncio.create_task(holder(budget, 5, "last", log, go_last))
    await settle()
    assert log == ["+first"]
    blocked.cancel()
    await settle()
    assert log == ["+first", "+last"] and budget.free == 0
    go_first.set()
    go_last.set()
    await asyncio.gather(first, last)
    assert blocked.cancelled() and budget.free == 10


def test_a_budget_must_hold_something() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ByteBudget(0)


@pytest.mark.parametrize("workers", [0, 2])
async def test_a_run_whose_budget_is_smaller_than_every_file_still_indexes_them_all(
    tmp_path: Path, workers: int
) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    report = await pipeline.run(options=RunOptions(workers=workers, max_bytes_in_flight=1))
    assert set(actions(report).items()) >= {(path, "add") for path in GOOD}
    assert set(await documents(pipeline)) == set(GOOD)
