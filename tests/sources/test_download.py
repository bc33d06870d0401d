"""The download area: bodies on disk within a byte bound, and the folder gone afterwards,
whether the source is done with it, fails, or is dropped."""

from __future__ import annotations

import errno
import gc
from collections.abc import Iterator

import pytest

from ragflow_config.sources._download import DownloadArea


def test_a_body_within_its_limit_is_kept_and_one_past_it_is_removed() -> None:
    area = DownloadArea(max_bytes=100)
    kept = area.store([b"abc", b"def"], limit=6)
    assert kept is not None and kept.read_bytes() == b"abcdef"
    assert area.store([b"abc", b"defg"], limit=6) is None
    assert sorted(area.path.iterdir()) == [kept] and area.used == 6
    area.close()
    assert not area.path.exists() and area.closed


def test_the_area_bound_stops_a_body_and_frees_what_it_had_written() -> None:
    area = DownloadArea(max_bytes=10)
    assert area.store([b"12345678"], limit=100) is not None
    with pytest.raises(OSError) as raised:
        area.store([b"12", b"34"], limit=100)
    assert raised.value.errno == errno.ENOSPC
    assert area.used == 8 and len(list(area.path.iterdir())) == 1
    area.close()


def test_a_failing_download_leaves_nothing_behind() -> None:
    def broken() -> Iterator[bytes]:
        yield b"half a page"
        raise ConnectionResetError("the server went away")

    area = DownloadArea(max_bytes=100)
    with pytest.raises(ConnectionResetError):
        area.store(broken(), limit=100)
    assert list(area.path.iterdir()) == [] and area.used == 0
    area.close()


def test_the_folder_goes_when_the_area_is_dropped() -> None:
    area = DownloadArea(max_bytes=100)
    area.store([b"page"], limit=10)
    folder = area.path
    del area
    gc.collect()
    assert not folder.exists()
