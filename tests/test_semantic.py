"""Related words (``search/ranking/related_words.py``): a query word the docs never use is
looked up in the shipped table and its nearest word the cache does use stands in for it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from conftest import SAFETY_TIMEOUT, build, run_cli, write_tree

from doc_index.search.native_selection import select
from doc_index.search.ranking import PARAMS, rank
from doc_index.search.ranking.related_words import related_words
from doc_index.store.native_cache import NativeCache

DOCS = {
    "uploads.md": "# Uploads\n\nUploads are stored on disk before the view sees them.\n",
    "limits.md": "# Large bodies\n\nA large request body is refused with status 413.\n",
    "other.md": "# Templates\n\nTemplates render HTML from a context.\n",
}
QUERY = "huge uploads"  # "huge" occurs nowhere in DOCS; "large" does
OFF = dataclasses.replace(PARAMS, related=0.0)


def ranked_ids(cache: NativeCache, query: str, params=PARAMS) -> list[str]:
    return [entry[1] for entry in rank(cache, query, params)]


def test_a_word_the_docs_lack_is_answered_by_its_related_word(cache: NativeCache) -> None:
    assert related_words("huge")[0] == "larg"  # the shipped table: huge -> large, ...
    assert "limits-large-bodies" not in ranked_ids(cache, QUERY, OFF)
    assert "limits-large-bodies" in ranked_ids(cache, QUERY)
    doc = next(d for d in select(cache, QUERY, 2000)["documents"]
               if d["id"] == "limits-large-bodies")
    # The stand-in is a term scoring used: it is shown and its matches are counted.
    assert "larg" in doc["why"]["query_terms"]
    assert doc["why"]["term_matches"] == 2


def test_words_the_docs_use_are_never_expanded(cache: NativeCache) -> None:
    for query in ("large uploads", "render templates", "uploads"):
        assert rank(cache, query) == rank(cache, query, OFF)
        assert select(cache, query, 2000) == select(cache, query, 2000, OFF)


def test_a_word_with_no_related_word_in_the_cache_changes_nothing(cache: NativeCache) -> None:
    query = "uploads zyzzyvas"  # in neither the table nor the docs
    assert related_words("zyzzyva") == []
    assert rank(cache, query) == rank(cache, query, OFF)


def test_same_answer_bytes_across_two_builds_with_related_words(cache_dir: Path,
                                                                tmp_path: Path) -> None:
    src = write_tree(tmp_path / "again" / "docs", DOCS)
    build(src, tmp_path / "root2", full=True)
    answers = []
    for cache in (cache_dir, tmp_path / "root2" / "local-docs"):
        done = run_cli("resolve", "--cache", str(cache), "--query", QUERY, "--budget", "2000",
                       module="doc_index.server.context_cli")
        assert done.returncode == 0, done.stderr
        answers.append(done.stdout)
    assert answers[0] == answers[1]
    assert "limits-large-bodies" in [d["id"] for d in json.loads(answers[0])["documents"]]


# Run the resolve command with every socket refused: the table must come from the package.
_NO_NETWORK = """
import socket, sys, runpy

def refuse(*args, **kwargs):
    raise OSError("network is blocked in this test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
sys.argv = ["context", *sys.argv[1:]]
runpy.run_module("doc_index.server.context_cli", run_name="__main__", alter_sys=True)
"""


def test_related_words_load_without_network(cache_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK, "resolve", "--cache", str(cache_dir),
         "--query", QUERY, "--budget", "2000"],
        capture_output=True, timeout=SAFETY_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert "limits-large-bodies" in [d["id"] for d in json.loads(done.stdout)["documents"]]
