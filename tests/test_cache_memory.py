"""What a loaded native cache holds in memory: its sections in columns (no dict per section,
no keyword lists), measured in allocated bytes with tracemalloc (counts, not timings).

As parsed JSON a section cost about 3 KB held and the load peaked at about 6 bytes per
manifest byte; in columns this corpus holds under 0.5 KB a section and peaks at the
manifest's bytes and its text."""

from __future__ import annotations

import gc
import json
import random
import re
import tracemalloc
from pathlib import Path

import pytest
from conftest import build, run_cli, write_tree
from hypothesis import given
from hypothesis import strategies as st

from doc_index.foundation.strict_json import parse_json, parse_json_object_streaming
from doc_index.store.native_cache import load_native_cache
from doc_index.store.section_table import MEMO_BYTES_PER_SECTION, UNREAD_FIELDS

WORDS = [f"{stem}{end}" for stem in ("data", "route", "token", "cache", "model", "query",
                                     "field", "page", "error", "hook")
         for end in ("", "s", "ing", "er", "ed", "able", "ion", "ment")]


def corpus(files: int = 150, sections: int = 12) -> dict[str, str]:
    """Pages of prose with many headings: full keyword lists, summaries, parents."""
    rng = random.Random(7)
    out = {}
    for f in range(files):
        parts = [f"# Page {f}\n\nIntro {' '.join(rng.choices(WORDS, k=40))}.\n"]
        for s in range(sections):
            parts.append(f"\n## {rng.choice(WORDS).title()} {rng.choice(WORDS)} {s}\n\n"
                         f"{' '.join(rng.choices(WORDS, k=80))}.\n")
        out[f"dir{f % 7}/page-{f:03d}.md"] = "".join(parts)
    return out


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("memory")
    build(write_tree(tmp / "src", corpus()), tmp / "root", name="big")
    return tmp / "root" / "local-big"


def test_loaded_sections_are_columns_not_dicts(cache_dir: Path) -> None:
    manifest_bytes = (cache_dir / "manifest.json").stat().st_size
    index_bytes = (cache_dir / "search.idx").stat().st_size
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        cache = load_native_cache(cache_dir)
        gc.collect()
        held, peak = (m - base for m in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    n = len(cache.sections)
    assert n > 1500
    # The search index is kept as its bytes; everything else is per section.
    assert (held - index_bytes) / n < 1000
    # The manifest's bytes and its text are the peak, never all sections as objects.
    assert peak < 3 * manifest_bytes
    # The estimate the warm server budgets with is within a fifth of what is held (and of
    # what resolve adds per section once it has been asked).
    assert 0.8 * held < cache.memory_bytes < 1.25 * held + MEMO_BYTES_PER_SECTION * n
    cache.close()


def test_rows_are_the_manifest_sections_without_unread_fields(cache_dir: Path) -> None:
    entries = json.loads((cache_dir / "manifest.json").read_bytes())["sections"]
    cache = load_native_cache(cache_dir)
    try:
        rows = list(cache.sections)
        assert len(rows) == len(entries)
        for row, entry in zip(rows, entries):
            assert row == {k: v for k, v in entry.items() if k not in UNREAD_FIELDS}
        assert cache.sections[-1] == rows[-1] and cache.sections[1:3] == rows[1:3]
        assert cache.sections.ids == [e["id"] for e in entries]
    finally:
        cache.close()


def test_hand_written_manifest_fields_round_trip(cache_dir: Path, tmp_path: Path) -> None:
    """Fields the store does not write, and unchecked fields left out, are kept as the
    manifest has them; a manifest that lists its sections twice is refused."""
    import shutil

    from doc_index.foundation.errors import ContextError

    copy = tmp_path / "copy"
    shutil.copytree(cache_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_bytes())
    manifest["sections"][0]["extra"] = {"a": [1, 2]}
    del manifest["sections"][1]["title"]
    del manifest["sections"][2]["keywords"]
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2))
    cache = load_native_cache(copy)
    try:
        first = cache.sections[0]
        assert first["extra"] == {"a": [1, 2]} and list(first)[-1] == "extra"
        assert "title" not in cache.sections[1] and "title" in cache.sections[2]
    finally:
        cache.close()
    text = (copy / "manifest.json").read_text()
    (copy / "manifest.json").write_text(text[:-1] + ', "sections": []}')
    with pytest.raises(ContextError, match="manifest is not JSON"):
        load_native_cache(copy)



JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=4),
    max_leaves=20,
)


def _same_as_parse_json(data: bytes) -> None:
    try:
        expected: object = parse_json(data)
    except ValueError:
        expected = ValueError
    items: list[object] = []
    try:
        value, count = parse_json_object_streaming(data, "sections", items.append)
    except ValueError:
        assert expected is ValueError or b'"sections"' in data  # a repeated key is refused
        return
    if count is not None:
        value = {**value, "sections": items}
    assert expected is not ValueError
    assert json.dumps(value, sort_keys=True) == json.dumps(expected, sort_keys=True)


@given(JSON, st.lists(JSON, max_size=4), st.sampled_from([(",", ":"), (", ", ": "), None]),
       st.sampled_from([None, 1, "\t"]))
def test_streaming_parser_is_the_strict_parser(
        head: object, sections: list[object], separators: tuple[str, str] | None,
        indent: int | str | None) -> None:
    """Whatever the layout, the streaming parse of a manifest-shaped document is the one
    strict parse, its sections handed over one by one; damaged bytes are refused alike."""
    document = {"h": head, "sections": sections, "t": head}
    data = json.dumps(document, separators=separators, indent=indent).encode()
    _same_as_parse_json(data)
    _same_as_parse_json(b" \n" + data + b"\r\n")
    for cut in {1, len(data) // 2, len(data) - 1}:
        _same_as_parse_json(data[:cut])
        _same_as_parse_json(data[:cut] + b"}" + data[cut:])
    _same_as_parse_json(json.dumps(sections).encode())  # not an object: parsed whole


# --------------------------------------------------------------------------- unchecked fields
# A hostile manifest's unchecked section fields count towards a warm server's memory
# budget (DOC_INDEX_SERVE_CACHE_MB).


def held_and_estimated(cache_dir: Path) -> tuple[int, int]:
    gc.collect()
    tracemalloc.start()
    try:
        cache = load_native_cache(cache_dir)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    cache.close()
    return held, cache.memory_bytes


def test_unchecked_section_fields_are_counted_in_a_caches_memory(env: Path) -> None:
    docs = write_tree(env / "docs", {f"f{i}.md": "".join(
        f"# Title {i} {j}\n\nbody {j}\n\n" for j in range(20)) for i in range(20)})
    root = env / "root"
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    manifest = root / "n" / "manifest.json"
    count = iter(range(10**6))
    # every section gets 10 KB in a field the store does not write, and a list for a title
    text = re.sub(r'"tokens":\d+\}', lambda m: m.group(0)[:-1] + ',"x":"' + str(next(count))
                  + "x" * 10_000 + '"}', manifest.read_text())
    text = re.sub(r'"title":"[^"]*"', '"title":[' + ",".join(['"t"'] * 200) + "]", text)
    manifest.write_text(text)
    held, estimated = held_and_estimated(root / "n")
    assert held > 4_000_000  # 400 sections x 10 KB
    assert estimated >= held // 2, (estimated, held)
