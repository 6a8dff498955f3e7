"""context.resolve on native caches: the rules of DESIGN.md, on small fixtures built here.

Determinism (same bytes twice and across builds), order (score desc, id asc), the floor,
no-match sections never selected, stopword-only and invalid queries, score range, the
``why`` fields, greedy budget, and the ranking principles of ``search.ranking``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from conftest import build, write_tree

from doc_index.foundation import detmath
from doc_index.foundation.errors import ContextError
from doc_index.foundation.strict_json import dumps
from doc_index.indexer.analysis import WORD, query_concepts, term_counts
from doc_index.search.native_selection import select
from doc_index.search.packing import doc_charge, frame_charge
from doc_index.search.ranking import PARAMS, analyze_query, rank
from doc_index.store.native_cache import NativeCache, load_native_cache

DOCS = {
    "guide/install.md": (
        "# Installation\n\nInstall the package with pip. Python 3.10 or newer is needed.\n\n"
        "## Configuration\n\nSet `DATABASE_URL` in the environment before the first start.\n"
        "The configuration file is read once at startup.\n\n"
        "## Upgrading\n\nRead the changelog before you upgrade between major versions.\n"
    ),
    "guide/tasks.md": (
        "# Background Tasks\n\nUse `BackgroundTasks` to run work after returning a response,"
        " so the client does not wait.\n\n"
        "## Using BackgroundTasks\n\nDeclare a parameter of type `BackgroundTasks` and call"
        " `add_task` with the function to run after the response is sent.\n\n"
        "## Caveats\n\nHeavy jobs belong in a real task queue such as Celery.\n"
    ),
    "guide/websockets.md": (
        "# WebSockets\n\nYou can use WebSockets with the framework.\n\n"
        "## Create a websocket\n\nCreate a websocket endpoint with the websocket decorator.\n\n"
        "## Disconnections\n\nWhen the client closes the connection an exception is raised.\n"
    ),
    "guide/security.md": (
        "# Security\n\nThe docs can be disabled in production by setting the docs URL to None.\n"
        "\n## Passwords\n\nNever store plain passwords; hash them with a slow hash.\n"
    ),
    "CHANGELOG.md": (
        "# Changelog\n\n## 2.0.0\n\nBackground tasks run after the response is sent.\n"
        "Upgrading is easy.\n"
    ),
    "empty.md": "# Background\n\n## Tasks\n",
    "copy-a.md": "# Shared Notes\n\nIdentical note about caching responses.\n",
    "copy-b.md": "# Shared Notes\n\nIdentical note about caching responses.\n",
    "tie-a.md": "# Tie Alpha\n\nzebra kiwi plum fig lime\n",
    "tie-b.md": "# Tie Bravo\n\nzebra kiwi pear fig lime\n",
    "big.md": "# Giant Section\n\n" + ("gadget overview words " * 400) + "\n",
    "small.md": "# Tiny Gadget Note\n\nThe gadget fits here, with a short note about its size.\n",
}


def ids(result: dict) -> list[str]:
    return [d["id"] for d in result["documents"]]


def section_of(cache: NativeCache, section_id: str) -> int:
    return next(i for i, s in enumerate(cache.sections) if s["id"] == section_id)


# -- determinism ----------------------------------------------------------------------------

QUERIES = [
    "how do I run something after the response is sent",
    "create a WebSocket endpoint",
    "configuration DATABASE_URL environment",
    "turn off the docs in production",
    "zebra",
    "gadget",
    "how to",
]


def test_same_bytes_twice_and_across_builds(cache_dir: Path, tmp_path: Path) -> None:
    src = write_tree(tmp_path / "again" / "docs", DOCS)
    build(src, tmp_path / "root2", full=True)
    other = load_native_cache(tmp_path / "root2" / "local-docs")
    first = load_native_cache(cache_dir)
    try:
        for query in QUERIES:
            for budget in (0, 50, 2000, 10_000_000):
                one = dumps(select(first, query, budget))
                assert one == dumps(select(first, query, budget))
                assert one == dumps(select(other, query, budget)), (query, budget)
    finally:
        other.close()
        first.close()


def test_detmath_ln_is_close_to_libm_and_exact_on_powers_of_two() -> None:
    for x in (1.0, 2.0, 0.5, 1.5, 3.7, 10.0, 1234.5, 1e-6, 1e12):
        assert detmath.ln(x) == pytest.approx(math.log(x), rel=1e-14, abs=1e-15)
    assert detmath.ln(1.0) == 0.0
    assert detmath.ln(8.0) == 3 * detmath.ln(2.0)
    with pytest.raises(ValueError):
        detmath.ln(0.0)


# -- output rules -------------------------------------------------------------------------

@pytest.mark.parametrize("query", QUERIES)
def test_order_range_counts_and_why(cache: NativeCache, query: str) -> None:
    result = select(cache, query, 10_000_000)
    docs = result["documents"]
    sel = result["selection"]
    scores = [d["score"] for d in docs]
    assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)
    if docs:
        assert scores[0] == 1.0
    keys = [(-d["score"], d["id"]) for d in docs]
    assert keys == sorted(keys)
    assert sel["documents_considered"] == len(cache.sections) == cache.document_count
    assert sel["documents_selected"] == len(docs)
    assert sel["documents_selected"] + sel["documents_excluded_by_budget"] <= \
        sel["documents_considered"]
    assert sel["tokens_used"] == sum(d["tokens"] for d in docs) <= sel["budget"]
    assert sel["query"] == query
    terms = analyze_query(query)
    for d in docs:
        why = d["why"]
        # The query's terms that occur in the document, and their occurrences there.
        counts = term_counts(d["content"])
        assert why["query_terms"] == [t for t in terms if counts.get(t)]
        assert why["term_matches"] == sum(counts[t] for t in why["query_terms"]) > 0
        i = section_of(cache, d["id"])
        assert d["content"] == cache.section_text(i)
        assert d["version"] == cache.sections[i]["version"]
        assert d["tokens"] == cache.sections[i]["tokens"]
        assert why["total_words"] == len(WORD.findall(d["content"]))
        assert list(d) == ["id", "version", "content", "score", "tokens", "why", "source"]
        assert list(why) == ["query_terms", "term_matches", "total_words"]


def test_ties_are_ordered_by_id(cache: NativeCache) -> None:
    result = select(cache, "zebra kiwi", 10_000)
    tied = [d for d in result["documents"] if d["id"].startswith("tie-")]
    assert [d["id"] for d in tied] == ["tie-a-tie-alpha", "tie-b-tie-bravo"]
    assert tied[0]["score"] == tied[1]["score"] == 1.0


def test_no_match_is_never_selected(cache: NativeCache) -> None:
    result = select(cache, "websocket", 10_000_000)
    assert result["documents"]
    for d in result["documents"]:
        assert d["why"]["term_matches"] > 0
    # "Disconnections" sits under the "WebSockets" page: the heading path alone ranks but
    # does not select it, its own text must hold a query term.
    assert "websockets-disconnections" not in ids(result)
    no_floor = dataclasses.replace(PARAMS, floor=0.0)
    assert all(score > 0.0 for score, _, _ in rank(cache, "websocket", no_floor))
    assert "websockets-disconnections" not in [sid for _, sid, _ in
                                               rank(cache, "websocket", no_floor)]
    # A term that occurs nowhere selects nothing, whatever the budget.
    nothing = select(cache, "xylophone", 10_000_000)
    assert nothing["documents"] == []
    assert nothing["selection"]["documents_excluded_by_budget"] == 0


def test_term_matches_count_occurrences(cache: NativeCache) -> None:
    result = select(cache, "websocket", 10_000)
    by_id = {d["id"]: d for d in result["documents"]}
    create = by_id["websockets-create-a-websocket"]
    # "websocket" occurs 4 times in the section: heading and three in the body.
    assert create["why"]["term_matches"] == create["content"].lower().count("websocket")


def test_floor_keeps_weak_matches_out(cache: NativeCache) -> None:
    query = "background tasks response sent upgrade"
    ranked = rank(cache, query)
    floored = rank(cache, query, dataclasses.replace(PARAMS, floor=0.0))
    assert len(floored) > len(ranked)
    assert all(score >= PARAMS.floor for score, _, _ in ranked)
    kept = {sid for _, sid, _ in ranked}
    assert any(score < PARAMS.floor and sid not in kept for score, sid, _ in floored)
    # What the floor drops is not "excluded by budget" either.
    result = select(cache, query, 10_000_000)
    assert result["selection"]["documents_excluded_by_budget"] == 0
    assert ids(result) == [sid for _, sid, _ in ranked]


def test_budget_is_greedy_and_skips_what_does_not_fit(cache: NativeCache) -> None:
    full = select(cache, "gadget", 10_000_000)
    assert ids(full)[:2] == ["small-tiny-gadget-note", "big-giant-section"] or \
        ids(full)[:2] == ["big-giant-section", "small-tiny-gadget-note"]
    small = next(d for d in full["documents"] if d["id"] == "small-tiny-gadget-note")
    # The whole answer is charged (search.packing): the selection object and each
    # document's JSON. Room for the small one only; the big one is a single line, so no
    # excerpt of it can be cut.
    budget = frame_charge("gadget", 10_000, cache.document_count) + doc_charge(small)
    result = select(cache, "gadget", budget)
    assert ids(result) == ["small-tiny-gadget-note"]
    assert result["selection"]["documents_excluded_by_budget"] == 1
    zero = select(cache, "gadget", 0)
    assert zero["documents"] == []
    assert zero["selection"]["documents_excluded_by_budget"] == 2
    assert zero["selection"]["tokens_used"] == 0


def test_stopword_only_query_is_answered(cache: NativeCache) -> None:
    result = select(cache, "how to do it", 2000)
    assert result["selection"]["query"] == "how to do it"
    assert result["documents"] == []
    assert result["selection"]["documents_considered"] == len(cache.sections)


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "?!.,;:", "--- ... ***", "x" * 4097,
                                   "é" * 2049])
def test_invalid_queries(cache: NativeCache, query: str) -> None:
    with pytest.raises(ContextError) as err:
        select(cache, query, 2000)
    assert err.value.code == "invalid_query"


def test_query_of_exactly_4096_bytes_is_valid(cache: NativeCache) -> None:
    query = ("websocket " * 410)[:4096]
    assert len(query.encode()) == 4096
    assert select(cache, query, 2000)["documents"]


def test_json_output_is_compact_and_repr_floats(cache: NativeCache) -> None:
    text = dumps(select(cache, "background tasks after the response", 2000))
    data = json.loads(text)
    for d in data["documents"]:
        assert f'"score":{d["score"]!r}' in text


# -- ranking principles -------------------------------------------------------------------

def test_identifier_parts_and_whole(cache: NativeCache) -> None:
    terms = analyze_query("BackgroundTasks url_for")
    assert terms[:3] == ["backgroundtasks", "background", "task"]
    assert "url_for" in terms and "url" in terms
    top = ids(select(cache, "BackgroundTasks", 2000))[:2]
    assert "tasks-using-backgroundtasks" in top


def test_query_word_forms_count_once() -> None:
    concepts = query_concepts("How do I turn off the WebSocket config? It's sent")
    assert [c.main for c in concepts] == ["turn", "websocket", "config", "send"]
    assert concepts[0].alts == ("disabl",)  # "turn off" also looks for "disable"
    assert concepts[1].parts == ("web", "socket")
    assert "configur" in concepts[2].alts
    # contraction fragments and filler words are not terms
    assert query_concepts("it's something I want, isn't it") == []


def test_paraphrase_finds_the_section(cache: NativeCache) -> None:
    top = ids(select(cache, "how do I run something after the response is sent", 2000))
    assert top[0] in ("tasks-background-tasks", "tasks-using-backgroundtasks")


def test_heading_match_wins(cache: NativeCache) -> None:
    assert ids(select(cache, "How do I create a WebSocket endpoint?", 2000))[0] == \
        "websockets-create-a-websocket"


def test_abbreviation_and_phrase_alternatives(cache: NativeCache) -> None:
    assert ids(select(cache, "config", 2000))[0] == "install-configuration"
    assert ids(select(cache, "turn off the docs in production", 2000))[0] == \
        "security-security"


def test_changelog_and_empty_sections_are_demoted(cache: NativeCache) -> None:
    ranked = [sid for _, sid, _ in rank(cache, "background tasks response sent")]
    changelog = next(sid for sid in ranked if sid.startswith("changelog"))
    empty = [sid for sid in ranked if sid.startswith("empty")]
    assert ranked.index("tasks-background-tasks") < ranked.index(changelog)
    assert all(ranked.index("tasks-background-tasks") < ranked.index(e) for e in empty)
    undemoted = dataclasses.replace(PARAMS, changelog=1.0, empty=1.0)
    plain = {sid: s for s, sid, _ in rank(cache, "background tasks response sent", undemoted)}
    demoted = {sid: s for s, sid, _ in rank(cache, "background tasks response sent")}
    assert demoted.get(changelog, 0.0) < plain[changelog]


def test_identical_sections_are_selected_once(cache: NativeCache) -> None:
    found = [sid for sid in ids(select(cache, "identical note caching", 10_000))
             if sid.startswith("copy-")]
    assert found == ["copy-a-shared-notes"]
