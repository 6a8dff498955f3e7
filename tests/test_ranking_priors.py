"""The release-notes prior: which sections count as release notes, and which
questions ask what changed, so that release notes count fully for them.

A file is release notes when its own name says so, or when it is named by a number or a
version alone inside a folder whose name says so; a folder's name alone is not enough,
since ``changelog/`` folders also hold upgrade guides that answer upgrade questions.
"""

from __future__ import annotations

import dataclasses

import pytest

from doc_index.indexer.analysis import FEATURE_CHANGELOG, section_features
from doc_index.search.ranking import PARAMS, rank
from doc_index.search.ranking.query_words import asks_what_changed
from doc_index.store.native_cache import NativeCache


@pytest.mark.parametrize("path", [
    "CHANGES.rst", "changelog.md", "HISTORY.md", "docs/release-notes.md",
    "changelog/changelog_14.rst", "docs/changes-2.0.md", "releases/2.0.md",
    "changelog/unreleased_13/6135.rst", "news/2024-01.md",
])
def test_release_notes_files(path: str) -> None:
    assert section_features(path, "Fixed a bug", ["Bug fixes"]) == [FEATURE_CHANGELOG]


@pytest.mark.parametrize("path", [
    "changelog/migration_20.rst", "changelog/whatsnew_20.rst", "whatsnew.md",
    "releases/how-we-release.md", "guide/history_of_the_project_plan.md", "orm/session.rst",
])
def test_guides_in_release_folders_are_not_release_notes(path: str) -> None:
    assert section_features(path, "Session.execute() takes a select()", ["ORM"]) == []


def test_a_version_heading_still_marks_release_notes() -> None:
    assert section_features("changelog/migration_05.rst", "0.5.0 changes", []) == \
        [FEATURE_CHANGELOG]
    assert section_features("guide.md", "Bug fixes", ["Version 2.1.0"]) == [FEATURE_CHANGELOG]


DOCS = {
    "changelog/migration_20.md": (
        "# Migrating to 2.0\n\n## Autocommit removed\n\nThe engine no longer commits "
        "implicitly; call commit on the connection after each batch of writes.\n"
    ),
    "changelog/changelog_20.md": (
        "# Changes\n\n## Fixes\n\nFixed autocommit warning when the connection commits "
        "writes twice.\n"
    ),
}


def test_upgrade_guide_in_a_changelog_folder_is_not_demoted(cache: NativeCache) -> None:
    query = "connection commit writes autocommit"
    prior_off = dataclasses.replace(PARAMS, changelog=1.0)
    demoted = {sid: s for s, sid, _ in rank(cache, query)}
    plain = {sid: s for s, sid, _ in rank(cache, query, prior_off)}
    guide = "migration-20-autocommit-removed"
    log = "changelog-20-fixes"
    assert demoted[guide] == plain[guide] == 1.0
    assert demoted[log] < plain[log]


@pytest.mark.parametrize("query", [
    "ImportError about BaseSettings after upgrading pydantic to 2",
    "@app.on_event('startup') shows a deprecation warning",
    "Starlette(on_startup=[connect_db]) no longer works",
    "After moving to Celery 5, the task decorator fails",
    "what do I rename when moving from 1 to 2", "what is new in 2.0", "the v1 API",
    "breaking changes of the release",
])
def test_questions_that_ask_what_changed(query: str) -> None:
    assert asks_what_changed(query)


@pytest.mark.parametrize("query", [
    "run a command with the variables from .env without changing the code",
    "generate a migration from the changes I made to my models",
    "run the reminder task 10 minutes from now", "set a 5 second connect timeout",
    "return 201 Created from a POST endpoint", "enable HTTP/2 for the client",
])
def test_how_to_questions_do_not(query: str) -> None:
    assert not asks_what_changed(query)
