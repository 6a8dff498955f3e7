"""Each ranking rule (``search.ranking.RULE_NAMES``) on its own: what it changes, shown by
switching it off (``Params.off``) on a small fixture built here. Every rule has a test
named after it (the last test checks that), and a rule with a weight is off at its
neutral weight too."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator

import pytest
from conftest import build, write_tree

from doc_index.search.ranking import PARAMS, RULE_NAMES, Params, rank
from doc_index.store.native_cache import NativeCache, load_native_cache

DOCS = {
    # identifier parts, alternatives, related words
    "later.md": "# Running work later\n\nQueue background tasks after the response.\n",
    "settings.md": "# Settings\n\nThe configuration is read once at start.\n",
    "uploads.md": "# Uploads\n\nLarge uploads are streamed to disk in chunks.\n",
    # BM25F fields; the heading bonus
    "fields.md": (
        "# Fields\n\n## Quokka\n\nA small marsupial of the islands, seen at dusk near "
        "water.\n\n## Marsupials\n\nThe quokka is a small marsupial seen at dusk near water.\n"
    ),
    # page evidence: two equal sections, one in a page about the query's other word
    "alpha.md": (
        "# Guide\n\n## Expiry\n\nThe cookie expires after a day.\n\n## Storage\n\n"
        "Session data is kept in a signed session store.\n"
    ),
    "bravo.md": (
        "# Guide\n\n## Expiry\n\nThe cookie expires after a week.\n\n## Colours\n\n"
        "The theme paints buttons blue and links green.\n"
    ),
    # release notes; near-empty headings
    "CHANGES.md": "# Changes\n\n## Fixes\n\nFixed the gizmo widget rendering twice.\n",
    "widgets.md": (
        "# Widgets\n\n## Gizmo widget\n\nA gizmo widget renders once per page; render it "
        "again with refresh.\n\n## Gizmo\n\nSee above.\n"
    ),
    # own text: "webhooks" in the heading path only of the second section
    "webhooks.md": (
        "# Webhooks\n\nWebhooks send events to your server.\n\n## Signing\n\n"
        "Each payload carries an HMAC signature header to verify.\n"
    ),
    # the floor: a weak match far under the best
    "zebra.md": (
        "# Zebra stripes\n\nZebra stripes and zebra herds: the zebra is striped.\n"
    ),
    "savanna.md": (
        "# Savanna\n\nMany animals live on the savanna, among them lions, giraffes, "
        "elephants, antelopes, buffaloes, hyenas, a zebra, and vultures circling above.\n"
    ),
    # duplicates: two files holding the same section text
    "copy-a.md": "# Shared note\n\nIdentical note about caching responses.\n",
    "copy-b.md": "# Shared note\n\nIdentical note about caching responses.\n",
}


# Rules that read what a plain folder of Markdown does not have: API reference entries
# (text from docstrings, ``origins``), deprecated API beside the current way.
EXTRA = {
    "mkdocs.yml": "site_name: t\nplugins:\n  - mkdocstrings\n",
    "pkg/__init__.py": "",
    "pkg/console.py": (
        'class Console:\n    """A console that prints spinners, tables and logs."""\n\n'
        '    def print(self, text):\n        """Print text to the console."""\n\n'
        '    def log(self, text):\n        """Log text to the console with the time."""\n\n'
        '    def status(self, message):\n        """Show a spinner on the console."""\n'),
    "docs/api.md": "# API\n\n::: pkg.console\n",
    "docs/spinners.md": "# Spinners\n\nA spinner on the console shows that work runs.\n",
    "docs/abort.md": (
        "# Aborting\n\n## TokenSource (deprecated)\n\nAbort a transfer with a token "
        "source.\n\n## AbortSignal\n\nAbort a transfer with a signal.\n"),
}


@pytest.fixture(scope="module")
def extra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NativeCache]:
    src = write_tree(tmp_path_factory.mktemp("extra") / "src", EXTRA)
    root = tmp_path_factory.mktemp("extra-root")
    build(src, root, full=True)
    loaded = load_native_cache(root / "local-src")
    yield loaded
    loaded.close()


def off(*names: str, params: Params = PARAMS) -> Params:
    return dataclasses.replace(params, off=(*params.off, *names))


def scores(cache: NativeCache, query: str, params: Params = PARAMS) -> dict[str, float]:
    return {sid: s for s, sid, _ in rank(cache, query, params)}


def ids(cache: NativeCache, query: str, params: Params = PARAMS) -> list[str]:
    return [sid for _, sid, _ in rank(cache, query, params)]


# -- form rules -----------------------------------------------------------------------------

def test_identifier_parts_match_the_words_of_an_identifier(cache: NativeCache) -> None:
    assert ids(cache, "BackgroundTasks")[0] == "later-running-work-later"
    assert ids(cache, "BackgroundTasks", off("identifier_parts")) == []


def test_alternatives_match_another_spelling(cache: NativeCache) -> None:
    no_related = off("related_words")
    assert ids(cache, "config", no_related) == ["settings-settings"]
    assert ids(cache, "config", off("alternatives", params=no_related)) == []


def test_related_words_stand_in_for_a_word_the_docs_never_use(cache: NativeCache) -> None:
    assert ids(cache, "huge")[0] == "uploads-uploads"  # huge -> large
    assert ids(cache, "huge", off("related_words")) == []
    assert rank(cache, "huge", dataclasses.replace(PARAMS, related=0.0)) == []


# -- rank rules -----------------------------------------------------------------------------

def test_bm25f_weighs_a_heading_above_the_body(cache: NativeCache) -> None:
    # "quokka" once in each section: in the heading of one, in the body of the other.
    got = scores(cache, "quokka", dataclasses.replace(PARAMS, title_bonus=0.0))
    assert got["fields-quokka"] > got["fields-marsupials"]
    plain = dataclasses.replace(PARAMS, title_bonus=0.0, weights=(1.0, 1.0, 1.0))
    flat = scores(cache, "quokka", plain)
    assert flat["fields-quokka"] / flat["fields-marsupials"] < \
        got["fields-quokka"] / got["fields-marsupials"]
    assert rank(cache, "quokka", off("bm25f")) == []  # nothing else scores a section


def test_heading_bonus_lifts_a_heading_made_of_the_query(cache: NativeCache) -> None:
    query = "gizmo widget"
    assert ids(cache, query)[0] == "widgets-gizmo-widget"
    on, without = scores(cache, query), scores(cache, query, off("heading_bonus"))
    assert without != on
    assert without == scores(cache, query, dataclasses.replace(PARAMS, title_bonus=0.0))


def test_page_evidence_prefers_a_page_about_the_query(cache: NativeCache) -> None:
    query = "session cookie expiry"
    without = scores(cache, query, off("page_evidence"))
    assert without["alpha-expiry"] == without["bravo-expiry"]  # the sections alone: a tie
    on = scores(cache, query)
    assert on["alpha-expiry"] > on["bravo-expiry"]
    assert without == scores(cache, query, dataclasses.replace(PARAMS, page=0.0))


def test_release_notes_count_half(cache: NativeCache) -> None:
    query = "gizmo widget rendering"
    on, without = scores(cache, query), scores(cache, query, off("release_notes"))
    assert on["changes-fixes"] == pytest.approx(without["changes-fixes"] * 0.5)
    assert without == scores(cache, query, dataclasses.replace(PARAMS, changelog=1.0))


def test_release_notes_count_fully_when_the_question_asks_what_changed(
        cache: NativeCache) -> None:
    query = "gizmo widget rendering changed in 2.0"
    on, without = scores(cache, query), scores(cache, query, off("release_notes"))
    assert on["changes-fixes"] == without["changes-fixes"]
    halved = dataclasses.replace(PARAMS, changelog_asked=0.5)
    assert scores(cache, query, halved)["changes-fixes"] == pytest.approx(
        without["changes-fixes"] * 0.5)


def test_deprecated_api_counts_half_unless_asked_about(extra: NativeCache) -> None:
    query = "abort a transfer"
    on, without = scores(extra, query), scores(extra, query, off("deprecated"))
    old, new = "abort-tokensource-deprecated", "abort-abortsignal"
    assert on[old] / on[new] == pytest.approx(without[old] / without[new] * 0.5)
    assert without == scores(extra, query, dataclasses.replace(PARAMS, deprecated=1.0))
    asked = "abort a transfer: the deprecated way"
    assert scores(extra, asked) == scores(extra, asked, off("deprecated"))


def test_near_empty_headings_count_half(cache: NativeCache) -> None:
    query = "gizmo"
    on, without = scores(cache, query), scores(cache, query, off("near_empty"))
    assert without["widgets-gizmo"] == 1.0  # the heading is the query, its text is nothing
    assert on["widgets-gizmo"] < 1.0
    assert ids(cache, query)[0] == "widgets-gizmo-widget"
    assert without == scores(cache, query, dataclasses.replace(PARAMS, empty=1.0))


def test_own_text_a_heading_path_match_alone_never_selects(cache: NativeCache) -> None:
    no_floor = off("floor")
    assert "webhooks-signing" not in ids(cache, "webhooks", no_floor)
    assert "webhooks-signing" in ids(cache, "webhooks", off("own_text", params=no_floor))


def test_floor_drops_weak_matches(cache: NativeCache) -> None:
    assert ids(cache, "zebra") == ["zebra-zebra-stripes"]
    assert ids(cache, "zebra", off("floor")) == ["zebra-zebra-stripes", "savanna-savanna"]
    assert scores(cache, "zebra", off("floor")) == \
        scores(cache, "zebra", dataclasses.replace(PARAMS, floor=0.0))


def test_score_scales_to_the_best_and_orders_by_score_then_id(cache: NativeCache) -> None:
    ranked = rank(cache, "expiry cookie", off("floor"))
    assert ranked[0][0] == 1.0
    assert all(0.0 < s <= 1.0 for s, _, _ in ranked)
    assert [(-s, sid) for s, sid, _ in ranked] == sorted((-s, sid) for s, sid, _ in ranked)
    assert rank(cache, "expiry cookie", off("score")) == []


def test_duplicates_keep_the_first_of_equal_sections(cache: NativeCache) -> None:
    assert ids(cache, "caching note") == ["copy-a-shared-note"]
    assert ids(cache, "caching note", off("duplicates")) == \
        ["copy-a-shared-note", "copy-b-shared-note"]


def test_api_siblings_count_less_after_the_first_of_their_page(extra: NativeCache) -> None:
    query = "console"
    floorless = dataclasses.replace(PARAMS, floor=0.0)
    on = scores(extra, query, floorless)
    without = scores(extra, query, dataclasses.replace(floorless, off=("api_siblings",)))
    entries = [sid for sid in ids(extra, query, off("api_siblings"))
               if sid.startswith("api-console")]
    assert len(entries) == 4  # the class and its three methods, all from docstrings
    for k, sid in enumerate(entries):
        assert on[sid] == pytest.approx(without[sid] * PARAMS.siblings ** k)
    assert PARAMS.siblings < 1.0
    assert on["spinners-spinners"] == without["spinners-spinners"]  # a guide: untouched
    assert without == scores(extra, query, dataclasses.replace(floorless, siblings=1.0))


def test_an_unknown_rule_name_is_an_error(cache: NativeCache) -> None:
    with pytest.raises(ValueError, match="no ranking rule named heading"):
        rank(cache, "zebra", off("heading"))


def test_every_rule_has_its_test() -> None:
    tests = [name for name in dir(sys.modules[__name__]) if name.startswith("test_")]
    assert [r for r in RULE_NAMES if not any(t.startswith(f"test_{r}_") for t in tests)] == []
