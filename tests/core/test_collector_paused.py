"""``collector_paused``: no automatic collection inside; after, the collector as it was.

What was made inside joins the oldest generation (a later young pass does not
traverse it again), unless the process keeps frozen objects apart, which stay
frozen. Checked through ``gc``'s own view of its generations, not by time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from _collector import collector_passes

from ragflow_config._gc import collector_paused


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    yield
    gc.unfreeze()
    gc.enable()


def oldest(thing: object) -> bool:
    return any(item is thing for item in gc.get_objects(generation=2))


def test_no_pass_runs_inside_and_the_collector_runs_after() -> None:
    with collector_passes() as passes, collector_paused():
        made = [[index] for index in range(50_000)]  # 70 young passes' worth of objects
        assert not gc.isenabled()
    assert passes == []
    assert gc.isenabled()
    assert oldest(made[0]) and oldest(made)


def test_a_caller_s_pause_is_kept() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_frozen_objects_stay_frozen_and_what_was_made_stays_young() -> None:
    kept = [object()]
    gc.freeze()
    frozen = gc.get_freeze_count()
    with collector_paused():
        made = [object()]
    assert gc.get_freeze_count() == frozen
    assert not oldest(made)
    assert not oldest(kept)  # in the permanent generation still
