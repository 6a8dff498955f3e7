"""kill -9 of a real ``doc-index build`` at random moments never damages the cache."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    SAMPLE_REPOS,
    build,
    cache_files,
    manifest,
    store_leftovers,
    without_indexed_at,
)

from doc_index.store.native_cache import load_native_cache


def _make_source(path: Path, copies: int) -> None:
    for i in range(copies):
        shutil.copytree(SAMPLE_REPOS / "mdkit-docs", path / f"md{i}")
        shutil.copytree(SAMPLE_REPOS / "rstkit-docs", path / f"rst{i}")


def _flip(source: Path, state: int) -> None:
    """Two source states that differ in several files."""
    for i in range(0, 4):
        target = source / f"md{i}" / "docs" / "faq.md"
        base = (SAMPLE_REPOS / "mdkit-docs" / "docs" / "faq.md").read_text()
        target.write_text(base + (f"\n## State {state}\n\nflip {state}\n" if state else ""))


def _check_valid(cache_dir: Path, allowed: set[str]) -> str:
    cache = load_native_cache(cache_dir)
    try:
        assert cache.cache_version in allowed
        for i in range(len(cache.sections)):
            cache.section_text(i)  # every section's bytes match its version
        return cache.cache_version
    finally:
        cache.close()


def _kill_loop(tmp_path: Path, iterations: int, seed: int) -> dict[str, int]:
    source = tmp_path / "src"
    _make_source(source, copies=4)
    root = tmp_path / "root"
    versions = {}
    for state in (1, 0):
        _flip(source, state)
        ref_root = tmp_path / f"ref{state}"
        build(source, ref_root, name="src", full=True)
        versions[state] = manifest(ref_root / "local-src")["cache_version"]
    build(source, root, name="src")  # state 0 is live
    started = time.perf_counter()
    build(source, tmp_path / "timing", name="src", full=True)
    duration = time.perf_counter() - started + 0.3  # + interpreter start-up
    rng = random.Random(seed)
    counts = {"killed": 0, "finished": 0}
    state = 0
    for _ in range(iterations):
        state = 1 - state
        _flip(source, state)
        proc = subprocess.Popen(
            [sys.executable, "-m", "doc_index.cli", "build", str(source), "--root", str(root),
             "--name", "local-src", "--full"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.0, duration * 1.3))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            counts["killed"] += 1
        else:
            counts["finished"] += 1
        proc.wait()
        _check_valid(root / "local-src", {versions[0], versions[1]})
    # The next build completes and equals a clean build of the current state.
    build(source, root, name="src")
    clean = tmp_path / "clean"
    build(source, clean, name="src", full=True)
    assert without_indexed_at(cache_files(root / "local-src")) == without_indexed_at(
        cache_files(clean / "local-src"))
    assert store_leftovers(root) == []
    return counts


@pytest.mark.slow
def test_kill_minus_9_short(tmp_path: Path) -> None:
    counts = _kill_loop(tmp_path, iterations=6, seed=7)
    assert counts["killed"] + counts["finished"] == 6


@pytest.mark.slow
def test_kill_minus_9_long(tmp_path: Path) -> None:
    counts = _kill_loop(tmp_path, iterations=150, seed=20261122)
    print(f"kill -9 loop: {counts}")
    assert counts["killed"] >= 50
