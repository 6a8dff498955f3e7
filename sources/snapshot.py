"""What a source hands the store: the published input of a build.

A source (a walked folder, a git commit, a package's archive) reads its files into a
``Scan``: ``SourceFile`` records (repo-relative POSIX path, a way to read the bytes, a
content hash), what it skipped and why, the commit it was read at and how its pages
expand; with it, the source's identity (``SourceIdentity``: ``sources.identity.Source``)
that the manifest records and that stops a build from replacing a cache of another
source. The store (``store.index_store``) imports this module and no other source module
(tests/test_layers.py), so how a source finds its files never reaches the cache format.

(NamedTuples and plain classes, not dataclasses: the build path's imports,
tests/test_import_rules.py.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..foundation.errors import OtherSource

if TYPE_CHECKING:
    from .docs_folder import Selection
    from .expansion import ExpandConfig


# The build path's records are NamedTuples and plain classes, not dataclasses: what a
# build may import is stated by tests/test_import_rules.py.


class SourceFile(NamedTuple):
    """One documentation file of a source: ``read()`` gives its bytes; ``digest`` is the
    content hash recorded in ``file_hashes`` (sha256 of the bytes for a directory)."""

    path: str
    digest: str
    size: int
    read: Callable[[], bytes]


class Scan:
    """What a source holds: its doc files (sorted by path), what it skipped and why, and
    the commit it was read at ("" for a plain directory); ``kinds`` counts the skipped
    documentation-like files by kind (``.txt``, ``.adoc``), ``selection`` is what the
    scan chose (``doc_selection``), ``notes`` lines about the source for the summary."""

    def __init__(self, files: list[SourceFile] | None = None,
                 skipped: list[tuple[str, str]] | None = None, commit_hash: str = "") -> None:
        self.files: list[SourceFile] = files if files is not None else []
        self.skipped: list[tuple[str, str]] = skipped if skipped is not None else []
        self.commit_hash = commit_hash
        self.kinds: dict[str, int] = {}
        self.selection: Selection | None = None
        self.notes: list[str] = []
        # Any file of the source by relative path (None: not there), for the steps that
        # read more than the files indexed (autodoc's modules): a package's archive.
        self.source_reader: Callable[[str], bytes | None] | None = None
        self.expand: ExpandConfig | None = None  # how its pages are expanded
        self.tree: dict[str, str] = {}  # a commit's files: path -> blob SHA (git sources)
        self.missing: frozenset[str] = frozenset()  # blobs a partial clone lacks

    def expansion_key(self) -> str | None:
        """How its pages expand, as the manifest records it (None: not expanded)."""
        if self.expand is None:
            return None
        from .expansion import fingerprint

        return fingerprint(self.expand)

    def dependency_state(self) -> Callable[[str], str | None]:
        """A page dependency's hash now (source-relative path; None: not there)."""
        if self.expand is None:
            return lambda path: None
        from .expansion import state_function

        return state_function(self.expand)

    def count_kind(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


class SourceIdentity(Protocol):
    """A build's source as the store sees it (``sources.identity.Source``)."""

    def record(self, commit: str) -> dict[str, Any]:
        """The manifest's ``source`` object."""
        ...

    def same_as(self, header: dict[str, Any]) -> bool:
        """Whether the live manifest ``header`` was built from this source."""
        ...

    def shown(self) -> str:
        """The source, for people."""
        ...

    def shown_header(self, header: dict[str, Any]) -> str:
        """The source a live manifest ``header`` records, for people."""
        ...


def other_source(key: str, held: str, source: SourceIdentity) -> OtherSource:
    """The refusal of a build of ``source`` into cache ``key``, which holds ``held`` (for
    people: ``SourceIdentity.shown_header``, or the kind of a cache that is no doc-index
    cache)."""
    return OtherSource(f"cache {key!r} holds {held}, not {source.shown()}: "
                       "build with --name NAME to keep both, or --replace to replace it")
