"""Red-team regression: a hostile manifest's unchecked section fields count towards the
memory budget of a warm server (DOC_INDEX_SERVE_CACHE_MB)."""

from __future__ import annotations

import gc
import re
import tracemalloc
from pathlib import Path

from conftest import run_cli, write_tree
from doc_index.store.native_cache import load_native_cache


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
