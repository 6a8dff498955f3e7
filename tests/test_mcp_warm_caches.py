"""WarmCaches: reuse while the cache is unchanged, reload after a rebuild, never cache errors."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from doc_index.foundation.errors import CacheInvalid, ContextError
from doc_index.search.warm_caches import WarmCaches, cache_stamp


def make_cache(path: Path, content: str) -> None:
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(content)


def read_manifest(path: Path) -> str:
    return (path / "manifest.json").read_text()


def swap_in(root: Path, name: str, content: str) -> None:
    """Publish a rebuilt cache the way the store does: build aside, rename over."""
    fresh = root / f".{name}.new"
    make_cache(fresh, content)
    old = root / f".{name}.old"
    os.rename(root / name, old)
    os.rename(fresh, root / name)
    shutil.rmtree(old)


def test_unchanged_cache_is_loaded_once(tmp_path: Path) -> None:
    make_cache(tmp_path / "c", "v1")
    warm = WarmCaches()
    assert [warm.get(tmp_path / "c", "m", read_manifest) for _ in range(3)] == ["v1"] * 3
    assert (warm.loads, warm.hits) == (1, 2)


def test_directory_swap_is_noticed(tmp_path: Path) -> None:
    make_cache(tmp_path / "c", "v1")
    warm = WarmCaches()
    assert warm.get(tmp_path / "c", "m", read_manifest) == "v1"
    swap_in(tmp_path, "c", "v1")  # same bytes, new directory: still reloaded
    assert warm.get(tmp_path / "c", "m", read_manifest) == "v1"
    swap_in(tmp_path, "c", "v2")
    assert warm.get(tmp_path / "c", "m", read_manifest) == "v2"
    assert warm.loads == 3


def test_manifest_replaced_in_place_is_noticed(tmp_path: Path) -> None:
    make_cache(tmp_path / "c", "v1")
    warm = WarmCaches()
    assert warm.get(tmp_path / "c", "m", read_manifest) == "v1"
    tmp = tmp_path / "c" / "manifest.json.tmp"
    tmp.write_text("v2")
    os.replace(tmp, tmp_path / "c" / "manifest.json")
    assert warm.get(tmp_path / "c", "m", read_manifest) == "v2"


def test_kinds_are_separate(tmp_path: Path) -> None:
    make_cache(tmp_path / "c", "v1")
    warm = WarmCaches()
    assert warm.get(tmp_path / "c", "a", lambda p: "A") == "A"
    assert warm.get(tmp_path / "c", "b", lambda p: "B") == "B"


def test_errors_are_not_cached(tmp_path: Path) -> None:
    make_cache(tmp_path / "c", "broken")
    warm = WarmCaches()

    def load(path: Path) -> str:
        text = read_manifest(path)
        if text == "broken":
            raise CacheInvalid()
        return text

    with pytest.raises(ContextError):
        warm.get(tmp_path / "c", "m", load)
    swap_in(tmp_path, "c", "fixed")
    assert warm.get(tmp_path / "c", "m", load) == "fixed"


def test_a_rebuild_during_the_load_is_not_cached_under_the_old_stamp(tmp_path: Path) -> None:
    make_cache(tmp_path / "c", "v1")
    warm = WarmCaches()

    def load_while_rebuilt(path: Path) -> str:
        text = read_manifest(path)
        swap_in(tmp_path, "c", "v2")
        return text

    assert warm.get(tmp_path / "c", "m", load_while_rebuilt) == "v1"
    assert len(warm) == 0
    assert warm.get(tmp_path / "c", "m", read_manifest) == "v2"


def test_missing_manifest_is_never_cached(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    assert cache_stamp(tmp_path / "c") is None
    warm = WarmCaches()
    warm.get(tmp_path / "c", "m", lambda p: "x")
    warm.get(tmp_path / "c", "m", lambda p: "x")
    assert warm.loads == 2 and len(warm) == 0


def test_entries_are_bounded(tmp_path: Path) -> None:
    warm = WarmCaches(max_entries=2)
    for name in "abc":
        make_cache(tmp_path / name, name)
        warm.get(tmp_path / name, "m", read_manifest)
    assert len(warm) == 2
    warm.get(tmp_path / "a", "m", read_manifest)
    assert warm.loads == 4  # "a" was evicted first


def test_a_stale_generation_is_let_go_before_the_new_one_loads(tmp_path: Path) -> None:
    """After a rebuild the old generation's value is no longer held when the new one
    loads (the server's memory holds one generation of a cache, not two)."""
    import gc
    import weakref

    class Loaded:
        def __init__(self, text: str) -> None:
            self.text = text

    make_cache(tmp_path / "c", "v1")
    warm = WarmCaches()
    old = weakref.ref(warm.get(tmp_path / "c", "m", lambda d: Loaded(read_manifest(d))))
    swap_in(tmp_path, "c", "v2")
    alive_during_load = []

    def load(d: Path) -> Loaded:
        gc.collect()
        alive_during_load.append(old() is not None)
        return Loaded(read_manifest(d))

    assert warm.get(tmp_path / "c", "m", load).text == "v2"
    assert alive_during_load == [False]
    assert len(warm) == 1 and warm.bytes == 0
