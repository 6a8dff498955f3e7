"""Incremental builds equal full builds, over many random edits.

Each round changes a small tree at random (edits, additions, deletions, headings that
collide across files so ids move, titles with quotes, backslashes and non-ASCII, files
without headings or without any text) and checks that the incremental build gives the same
bytes as a full build of the result, and that it parsed only what changed.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import build, cache_files, without_indexed_at, write_tree

from doc_index.foundation.cache_names import MANIFEST_NAME

TITLES = ["Configuration", "Retries", "Install", 'Say "hi"', "Back\\slash", "Über größe",
          "日本語", "Timeouts & limits", "Configuration", "FAQ"]
DIRS = ["", "docs/", "docs/deep/", "zz/"]
STEMS = ["config", "retries", "faq", "guide", "a", "b", "c#", "say\"hi", "über"]


def _page(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.1:
        return ""
    if kind < 0.2:
        return "Just a paragraph without a heading.\n\nAnd " + "words " * rng.randint(1, 400)
    out = []
    if rng.random() < 0.3:
        out.append("Intro text before the first heading.\n")
    for _ in range(rng.randint(1, 4)):
        level = rng.randint(1, 3)
        out.append(f"{'#' * level} {rng.choice(TITLES)}\n\nBody {rng.random():.6f} text.\n")
    return "\n".join(out)


def _rst(rng: random.Random) -> str:
    title = rng.choice(["Configuration", "Retries", "Reference"])
    return f"{title}\n{'=' * len(title)}\n\nText {rng.random():.6f}.\n\nMore\n----\n\nx\n"


def _random_path(rng: random.Random) -> str:
    ext = ".rst" if rng.random() < 0.2 else ".md"
    return f"{rng.choice(DIRS)}{rng.choice(STEMS)}{rng.randint(0, 3)}{ext}"


def _content(rng: random.Random, path: str) -> str:
    return _rst(rng) if path.endswith(".rst") else _page(rng)


def test_random_edits_incremental_equals_full(tmp_path: Path) -> None:
    rng = random.Random(20261122)
    docs = tmp_path / "src"
    files: dict[str, str] = {}
    for _ in range(12):
        path = _random_path(rng)
        files[path] = _content(rng, path)
    write_tree(docs, files)
    root = tmp_path / "inc"
    assert build(docs, root, name="x").full
    for round_no in range(25):
        changed: set[str] = set()
        for _ in range(rng.randint(1, 3)):
            action = rng.random()
            if action < 0.3 and files:  # delete
                path = rng.choice(sorted(files))
                (docs / path).unlink()
                del files[path]
            else:  # edit or add
                path = rng.choice(sorted(files)) if action < 0.7 and files else _random_path(rng)
                files[path] = _content(rng, path)
                write_tree(docs, {path: files[path]})
                changed.add(path)
        report = build(docs, root, name="x")
        assert not report.full, round_no
        assert set(report.parsed) <= changed, round_no
        fresh = tmp_path / f"full-{round_no}"
        build(docs, fresh, name="x", full=True)
        assert without_indexed_at(cache_files(root / "local-x")) == without_indexed_at(
            cache_files(fresh / "local-x")), round_no


def test_incremental_build_after_damage_is_full(tmp_path: Path) -> None:
    """A raw file edited in the cache, or a manifest edited by hand (valid JSON), makes the
    next build a full one that repairs the cache."""
    docs = write_tree(tmp_path / "src", {"a.md": "# A\n\ntext\n", "b.md": "# B\n\nmore\n"})
    root = tmp_path / "root"
    build(docs, root, name="x")
    cache = root / "local-x"
    good = without_indexed_at(cache_files(cache))
    (cache / "b.md").write_text("# B\n\nedited by hand\n")
    write_tree(docs, {"a.md": "# A\n\nnew text\n"})
    report = build(docs, root, name="x")
    assert report.full and report.written
    write_tree(docs, {"a.md": "# A\n\ntext\n"})
    build(docs, root, name="x")
    assert without_indexed_at(cache_files(cache)) == good
    data = (cache / MANIFEST_NAME).read_bytes().replace(b'"title":"B"', b'"title":"C"')
    (cache / MANIFEST_NAME).write_bytes(data)
    report = build(docs, root, name="x")
    assert report.full and report.written
    assert without_indexed_at(cache_files(cache)) == good


def test_warm_worker_parses_what_it_is_sent_and_leaves_nothing(tmp_path: Path) -> None:
    from doc_index.store.parallel import WarmWorker

    staging = tmp_path / "staging"
    staging.mkdir()
    worker = WarmWorker()
    results = worker.take([("docs/a.md", lambda: b"# A\r\n\ntext\n", 12)], staging)
    assert results is not None
    [(path, parsed)] = list(results)
    assert path == "docs/a.md" and not isinstance(parsed, str)
    assert [s.title for s in parsed.sections] == ["A"]
    assert (staging / "docs" / "a.md").read_bytes() == b"# A\n\ntext\n"
    worker.close()  # already handed over: nothing to do

    unused = WarmWorker()
    unused.close()  # killed and reaped
    assert unused.take([], staging) is None

    gone = WarmWorker()  # its build's staging directory was cleaned up meanwhile
    results = gone.take([("deep/b.md", lambda: b"# B\n", 4)], tmp_path / "cleaned")
    assert results is not None
    with pytest.raises(FileNotFoundError):
        list(results)
    assert not (tmp_path / "cleaned").exists()
