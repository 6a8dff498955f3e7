"""What ``Cache.info`` says of a cache: :class:`CacheDetails` (``doc-index list`` and
``inspect`` print it; ``context inspect`` and MCP its spec fields).

The spec's fields (``cache_version``, document count, size, validity) come from the read
of ``context.inspect_cache`` (``search.tools.cache_info_and_manifest``); the rest from
the same parsed manifest: the source it was built from (``store.sources.identity``),
repository, commit, token total and build time. Everything here is read from untrusted
files and checked: a field of the wrong type is left out (None), never repaired or
trusted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from ..sources.identity import PACKAGE_KINDS, shown_source
from .tools import cache_info_and_manifest

NATIVE = "doc-index"
V0 = "context-engine-v0"
SOURCE_FIELDS = ("kind", "location", "ref", "commit")  # what ``Source.record`` writes
# and, for a package (``store.sources.package``), these text fields and ``repository``
PACKAGE_FIELDS = ("package", "version", "index", "archive", "archive_sha256", "docs_from",
                  "docs_note")
REPOSITORY_FIELDS = ("url", "tag", "commit", "why")  # and ``reached`` (true/false/None)
# A package of a monorepo's (its folder, the docs folder taken and why), only when there,
# and ``left_out`` (other packages' folders), a list of text.
MONOREPO_FIELDS = ("directory", "docs", "docs_why")


class CacheDetails(NamedTuple):
    """One cache for people and scripts (``--json`` prints these fields, in this order).
    ``vectors``: whether a native cache holds vectors for answers by meaning (``current``,
    ``stale``: an earlier build's, ``none``).

    ``format`` is ``doc-index``, ``context-engine-v0`` or None (no readable manifest);
    ``source`` the manifest's record (kind, location, ref, commit) or None (a cache built
    before doc-index recorded sources, or a v0 cache); ``commit`` the indexed commit or
    None; ``tokens`` the sum of the sections' tokens (None for a v0 cache); ``indexed_at``
    the UTC build time as the manifest has it; ``problem`` why the cache is not valid, or
    that its source record is malformed (the cache is valid for the spec).
    ``total_bytes`` is the spec's (the regular files directly in the cache directory),
    ``size_bytes`` what the cache takes: every regular file below it, raw files in
    subfolders included (what ``list`` shows as SIZE)."""

    name: str
    format: str | None
    valid: bool
    source: dict[str, Any] | None
    repo: str | None
    commit: str | None
    sections: int
    tokens: int | None
    total_bytes: int
    size_bytes: int
    indexed_at: str | None
    cache_version: str
    problem: str | None
    vectors: str | None = None  # CacheMeaning.state of a native cache (None: not one)

    def as_json(self) -> dict[str, Any]:
        return self._asdict()


class CacheMeaning(NamedTuple):
    """One cache's vectors: ``state`` is ``current`` (written for its manifest as it is
    now), ``stale`` (an earlier build's, or not a sidecar) or ``none``; ``sections`` and
    ``model_sha256`` from the sidecar's header."""

    state: str
    sections: int = 0
    model_sha256: str | None = None


def cache_vectors(cache_dir: Path) -> CacheMeaning:
    """What ``cache_dir``'s ``vectors.bin`` holds (its header, and the sha256 of the
    manifest it names; the rows are not read). Regular files only, opened without
    blocking or following a link, as every reader of a cache."""
    import hashlib

    from ..embedding.vectors import MAX_HEADER, SIDECAR, parse_header

    head = _regular_bytes(cache_dir / SIDECAR, MAX_HEADER + 64)
    if head is None:
        return CacheMeaning("none")
    info, _ = parse_header(head)
    manifest = _regular_bytes(cache_dir / "manifest.json", None)
    if info is None or manifest is None:
        return CacheMeaning("stale")
    current = hashlib.sha256(manifest).hexdigest() == info.manifest_sha256
    return CacheMeaning("current" if current else "stale", info.count, info.model_sha256)


def _regular_bytes(path: Path, limit: int | None) -> bytes | None:
    """The first ``limit`` bytes (None: all) of the regular file at ``path``, else None."""
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read() if limit is None else fh.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def unusable(name: str, problem: str) -> CacheDetails:
    """A cache under a root that cannot be used or read, with why."""
    return CacheDetails(name, None, False, None, None, None, 0, None, 0, 0, None, "", problem)


def details(name: str, path: Path) -> CacheDetails:
    """The details of the cache at ``path`` (a damaged manifest is described as invalid,
    with its problem); CacheMissing or IoError as ``context.inspect_cache``."""
    info, manifest = cache_info_and_manifest(path)
    size = tree_bytes(path)
    problem = None if info.valid else "the manifest is missing, unreadable or damaged"
    if not isinstance(manifest, dict):
        return CacheDetails(name, None, info.valid, None, None, None, info.document_count,
                            None, info.total_bytes, size, None, info.cache_version, problem)
    if "build_config" in manifest:
        return CacheDetails(name, V0, info.valid, None, None, None, info.document_count, None,
                            info.total_bytes, size, _text(manifest.get("created_at")),
                            info.cache_version, problem)
    source = manifest.get("source")
    if source is not None and shown_source(source) is None:
        source, problem = None, problem or "the manifest's source record is malformed"
    elif source is not None:  # the record's fields only: others are unchecked (1e999 is inf)
        source = checked_source(source)
    commit = _text(manifest.get("commit_hash"))
    return CacheDetails(
        name, NATIVE, info.valid, source,
        _text(manifest.get("repo")), commit or None, info.document_count,
        _tokens(manifest.get("sections")), info.total_bytes, size,
        _text(manifest.get("indexed_at")), info.cache_version, problem,
        cache_vectors(path).state)


def checked_source(record: dict[str, Any]) -> dict[str, Any]:
    """The fields of a well-formed source record people and agents see: a package's text
    fields and repository only when they are text (an untrusted manifest's)."""
    source = {field: record.get(field) for field in SOURCE_FIELDS}
    if record.get("kind") in PACKAGE_KINDS:
        source.update({f: _text(record.get(f)) for f in PACKAGE_FIELDS})
        repository = record.get("repository")
        if isinstance(repository, dict):
            reached = repository.get("reached")
            shown: dict[str, Any] = {
                **{f: _text(repository.get(f)) for f in REPOSITORY_FIELDS},
                "reached": reached if isinstance(reached, bool) else None,
                **{f: repository[f] for f in MONOREPO_FIELDS
                   if _text(repository.get(f)) is not None}}
            left_out = repository.get("left_out")
            if isinstance(left_out, list) and all(isinstance(f, str) for f in left_out):
                shown["left_out"] = list(left_out)
            source["repository"] = shown
    return source


def tree_bytes(directory: Path) -> int:
    """The bytes of every regular file below ``directory``, at any depth; symlinks are
    not followed (a cache holds none the store made), unreadable folders count 0."""
    total = 0
    pending = [os.fspath(directory)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _tokens(sections: Any) -> int | None:
    if not isinstance(sections, list):
        return None
    total = 0
    for section in sections:
        tokens = section.get("tokens") if isinstance(section, dict) else None
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            return None
        total += tokens
    return total


__all__ = ["NATIVE", "V0", "CacheDetails", "details", "tree_bytes", "unusable"]
