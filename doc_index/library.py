"""The library: :class:`DocIndex` (the caches under one root) and :class:`Cache` (one cache).

Every door calls these: ``doc-index`` and ``context``, the MCP server, the git hooks and
the demo parse their text, call one method and render the typed result; nothing here
prints or exits. Failures are the one error tree (``foundation.errors``).

    index = DocIndex("caches")                    # None: $DOC_INDEX_ROOT, else the
    report = index.build("path/to/repo")          # per-user data folder
    answer = index.cache(report.key).resolve("retry timeout", 2000)

Arguments are typed (a budget is an ``int``: a door parses text with
``search.budget.parse_budget``, the one rule). Modules are imported inside the methods:
each door loads only what its command needs (tests/test_import_rules.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .meaning_status import MeaningStatus
    from .search.cache_details import CacheDetails
    from .search.results import Answer, Outline, Reading
    from .search.warm_caches import WarmCaches
    from .store.index_store import BuildReport, Progress
    from .store.v0_build import BuiltCache
    from .sync import SyncProgress, SyncReport

DEFAULT_BUDGET = 2000
_T = TypeVar("_T")


class DocIndex:
    """The caches under one root: ``root`` (UsageError when it is empty: it would name the
    current directory), else ``$DOC_INDEX_ROOT``, else the per-user data folder, found
    when first needed. ``warm`` (the MCP server's): loaded caches and the check of a
    cache's tree are kept between calls while the cache is unchanged. ``model``: the
    folder of the embedding model (answers by meaning, docs/semantic.md; None:
    ``DOC_INDEX_MODEL_DIR``, else the user cache)."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *,
                 warm: WarmCaches | None = None,
                 model: str | os.PathLike[str] | None = None) -> None:
        self._root: Path | None = None
        self.model = None if model is None else Path(model)
        if root is not None:
            from .store.roots import checked_root

            self._root = checked_root(os.fspath(root))
        self.warm = warm

    @property
    def root(self) -> Path:
        if self._root is None:
            from .store.roots import default_root

            self._root = default_root()
        return self._root

    def __repr__(self) -> str:
        return f"DocIndex({os.fspath(self.root)!r})"

    def build(self, source: str | os.PathLike[str], *, name: str | None = None,
              ref: str | None = None, subdir: str | None = None, everything: bool = False,
              full: bool = False, replace: bool = False, max_file_bytes: int | None = None,
              progress: Progress | None = None,
              embed_progress: Progress | None = None) -> BuildReport:
        """Build or update the cache of ``source``: a local directory (a git work tree is
        read as git sees it) or a git URL / bare repository (``ref``: the branch, tag or
        commit; for those only). The cache is named exactly ``name``, else from the
        source (docs/formats.md "Cache names"). Re-running it is the incremental rebuild; ``full``
        re-parses every file. A cache of that name built from another source is refused
        (OtherSource) unless ``replace``. Files over ``max_file_bytes`` (default 10 MB, at
        most 1 GiB) are skipped; ``progress(done, total)`` is called while files are
        parsed. A git source and a work tree's top index their documentation (docs/formats.md "What
        is indexed"); ``subdir`` (a folder of the source; a URL's ``#P``) or
        ``everything`` (every file) choose otherwise. A source with nothing to index is
        NothingToIndex, nothing written; a failed build leaves the live cache as it was.

        Then, with the semantic extra and a model (docs/semantic.md), the committed cache's
        sections are embedded (only those never embedded under this root;
        ``embed_progress(done, total)`` as they go): ``report.meaning`` says what was done,
        or why not. The lexical cache answers meanwhile; a failed or killed embedding
        leaves it answering lexically."""
        from .build import build_source
        from .meaning_build import embed_after_build, model_for_build
        from .sources.walk import DEFAULT_MAX_BYTES
        from .store.index_store import IndexStore

        model = model_for_build(self.model)  # a bad --model: refused before building
        report = build_source(
            IndexStore(self.root), os.fspath(source), name=name, ref=ref, full=full,
            replace=replace, progress=progress, subdir=subdir, everything=everything,
            max_bytes=DEFAULT_MAX_BYTES if max_file_bytes is None else max_file_bytes)
        embed_after_build(IndexStore(self.root), report, model, embed_progress)
        return report

    def sync(self, project: str | os.PathLike[str] = ".", *, dry_run: bool = False,
             prune: bool = False, all_locked: bool = False,
             progress: SyncProgress | None = None,
             embed_progress: Progress | None = None,
             trust_project_index: bool = False) -> SyncReport:
        """One cache per dependency ``project`` pins (its lockfiles: uv.lock, poetry.lock,
        requirements*.txt, package-lock.json, ... docs/packages.md), named
        ``NAME@VERSION``: a pin already cached is kept (no network), another is built
        (``build("pypi:NAME==VERSION")``) beside older versions. ``all_locked``: every
        locked package, not only the direct dependencies; ``prune``: delete the caches
        sync made for this project that no project synced into this root pins any more
        (nothing else); ``dry_run``: the plan only. A failing package is in the report
        (``SyncReport.failures``) and does not stop the others; ``progress(done, total,
        cache)`` is called between steps. Packages come from the user's own installer
        configuration only: a pin whose project names another index is refused, unless
        ``trust_project_index`` (a person's choice at the terminal; the hooks never pass
        it), and even then no user credential goes to a host the user did not configure
        (docs/security.md).

        Then, with the semantic extra and a model (as ``build``), once every cache is
        committed (they answer lexically at once), the sections of the caches the project
        pins that have no current vectors are embedded, the model loaded once for all
        (``embed_progress(done, total)``); ``report.meaning`` says what was done or why
        not."""
        from .meaning_build import embed_after_sync, model_for_build
        from .store.index_store import IndexStore
        from .sync import run_sync

        model = model_for_build(self.model)
        store = IndexStore(self.root)
        report = run_sync(store, Path(project), dry_run=dry_run, prune=prune,
                          all_locked=all_locked, progress=progress,
                          trust_project_index=trust_project_index)
        if dry_run:
            return report
        return embed_after_sync(store, report, model, embed_progress)

    def meaning_status(self, *, verify: bool = False) -> MeaningStatus:
        """Whether this installation answers by meaning (the ``DOC_INDEX_SEMANTIC``
        switch, the semantic extra, a model file found from ``model``), and why not: the
        line every door prints (``MeaningStatus.line``). ``verify``: the model file is
        read and checked against the pinned sha256s too (about 23 MB)."""
        from .meaning_status import meaning_status

        return meaning_status(self.model, verify=verify)

    def caches(self) -> list[Cache]:
        """The caches under the root (``context.list_caches``: every directory but the
        store's own, in the order of their names' UTF-8 bytes); CacheMissing naming the
        root when it is not a directory."""
        from .missing_cache import check_root
        from .search.tools import cache_entries

        check_root(self.root)
        return [Cache(self.root / entry.path, name=entry.path, index=self,
                      has_manifest=entry.has_manifest, model=self.model)
                for entry in cache_entries(self.root)]

    def cache(self, name: str) -> Cache:
        """Cache ``name``, checked (one path component whose tree stays under the root);
        CacheMissing naming it and the closest names otherwise."""
        from .foundation.errors import CacheMissing
        from .missing_cache import missing_cache
        from .store.cache_paths import real_root, resolve_cache_name, verify_cache_tree

        try:
            path = resolve_cache_name(self.root, name, verify_tree=self.warm is None)
            if self.warm is not None:  # the tree is walked once per cache generation
                root_real = real_root(self.root)
                self.warm.get(path, "tree", lambda d: verify_cache_tree(root_real,
                                                                          os.fspath(d)))
        except CacheMissing as exc:
            raise missing_cache(self.root, name, exc) from None
        return Cache(path, name=name, index=self, model=self.model)

    def install_hooks(self, repo: str | os.PathLike[str] = ".", *, name: str | None = None,
                      subdir: str | None = None) -> list[str]:
        """Install the git hooks that rebuild ``repo``'s cache under the root after a
        pull, checkout or rebase (the checkout, or its folder ``subdir``, into the cache
        ``name``, else the default name); one line per hook. A build the hook would
        refuse is refused now (UsageError), with nothing installed."""
        from .hooks import install_hooks

        return install_hooks(Path(repo), self.root, name=name, subdir=subdir)

    def uninstall_hooks(self, repo: str | os.PathLike[str] = ".") -> list[str]:
        """Remove the hooks, putting back any hook that was there before; one line per
        hook (the root plays no part)."""
        from .hooks import uninstall_hooks

        return uninstall_hooks(Path(repo))

    def fetch_model(self, *, dest: str | os.PathLike[str] | None = None,
                    url: str | None = None,
                    progress: Callable[[int], None] | None = None) -> tuple[Path, bool]:
        """``doc-index model fetch``: download the pinned embedding model into ``dest``
        (default: ``model``, else the user cache), from its publisher or the mirror
        ``url``, verified by size and sha256; (its path, whether it was downloaded).
        ModelError names what failed; nothing partial is left."""
        from .embedding import fetch
        from .embedding.model import user_model_dir

        folder = dest if dest is not None else self.model
        target = Path(folder) if folder is not None else user_model_dir()
        return fetch.fetch(target, url or fetch.URL, progress=progress)

    def mcp_config(self, client: str, meaning: MeaningStatus | None = None, *,
                   http: str | None = None) -> str:
        """The MCP configuration block of this installation for ``client`` (one of
        ``mcp_config.CLIENTS``), serving this root; when answers use meaning here
        (``meaning``, else ``meaning_status(verify=True)``), the server it starts is given
        the model's folder (``--model``), so it answers by meaning too. With ``http``, the
        block that points the client at the ``serve --http`` server at that URL instead
        (that server's own ``--model`` decides)."""
        from .mcp_config import config_text, http_config_text

        if http is not None:
            return http_config_text(client, http)
        if meaning is None:
            meaning = self.meaning_status(verify=True)
        return config_text(client, self.root, meaning.model_dir if meaning.on else None)


class Cache:
    """One cache: a directory under a :class:`DocIndex`'s root (``DocIndex.cache``,
    ``DocIndex.caches``), or any directory (``Cache(path)``, as ``context --cache PATH``
    names one). Nothing is read until a method asks. ``model``: as :class:`DocIndex`'s."""

    def __init__(self, path: str | os.PathLike[str], *, name: str | None = None,
                 index: DocIndex | None = None, has_manifest: bool | None = None,
                 warm: WarmCaches | None = None,
                 model: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path)
        self.model = None if model is None else Path(model)
        self.name = self.path.name if name is None else name
        self.index = index
        self.warm = warm if warm is not None or index is None else index.warm
        self._has_manifest = has_manifest

    def __repr__(self) -> str:
        return f"Cache({os.fspath(self.path)!r})"

    @property
    def has_manifest(self) -> bool:
        """``manifest.json`` is a regular file (lstat), as ``context.list_caches`` says."""
        if self._has_manifest is None:
            from .search.tools import has_manifest

            self._has_manifest = has_manifest(self.path)
        return self._has_manifest

    def resolve(self, query: str, budget: int = DEFAULT_BUDGET) -> Answer:
        """The sections that answer ``query`` best within ``budget`` tokens (an int in
        [0, 10 000 000]), best first, with what was selected (``context.resolve``).
        A native cache holding vectors is answered by meaning too when the semantic extra
        and the model are there and ``DOC_INDEX_SEMANTIC`` is not ``off`` (else lexically,
        the same bytes as without the extra). QueryError, BudgetError (checked first),
        CacheMissing, CacheInvalid, IoError."""
        from .foundation.errors import CacheMissing, spec_message
        from .search import tools
        from .search.results import ByMeaning

        try:
            return tools.answer(self.path, query, budget, warm=self.warm,
                                meaning=ByMeaning(self.model))
        except CacheMissing as exc:  # (gone meanwhile, or no manifest): name it
            if self.index is None or exc.message != spec_message(exc.code):
                raise
            from .missing_cache import missing_cache

            raise missing_cache(self.index.root, self.name, exc) from None

    def outline(self, prefix: str = "", budget: int = DEFAULT_BUDGET, *,
                depth: int | None = None, cursor: str | None = None) -> Outline:
        """Its files (those whose path starts with ``prefix``) and their headings, at most
        ``depth`` deep, from section ``cursor`` on, within ``budget`` tokens: each
        section's id, heading, depth and tokens; ``outline.next`` is the cursor for the
        rest (``search.navigation``). BudgetError, QueryError (an argument, a cursor no
        section of the outline has), CacheMissing, CacheInvalid, IoError."""
        from .search import navigation

        return self._named(lambda: navigation.outline(
            self.path, prefix, budget, depth=depth, cursor=cursor, warm=self.warm))

    def read(self, section_id: str, scope: str = "section", budget: int = DEFAULT_BUDGET,
             *, line: int | None = None) -> Reading:
        """Section ``section_id`` whole (``scope`` ``section``), every section of its file
        (``page``) or the sections beside it (``neighbours``), from file line ``line`` on,
        within ``budget`` tokens, each with the provenance ``resolve`` gives; a section
        that does not fit is cut to its first lines that do, and ``read.next_line`` is
        where to go on (``search.navigation``). Errors as :meth:`outline`."""
        from .search import navigation

        return self._named(lambda: navigation.read(
            self.path, section_id, scope, budget, line=line, warm=self.warm))

    def _named(self, call: Callable[[], _T]) -> _T:
        """``call()``; a cache under a root that is missing is named, with the closest
        names (as :meth:`resolve` does)."""
        from .foundation.errors import CacheMissing, spec_message

        try:
            return call()
        except CacheMissing as exc:
            if self.index is None or exc.message != spec_message(exc.code):
                raise
            from .missing_cache import missing_cache

            raise missing_cache(self.index.root, self.name, exc) from None
    def meaning_status(self, answer: Answer | None = None) -> MeaningStatus:
        """Whether answers from this cache use meaning, and why not (its ``vectors.bin``
        under the installation's status, ``DocIndex.meaning_status``); with ``answer``
        (one of its answers), what that answer did."""
        from .meaning_status import cache_meaning, meaning_status

        if answer is not None and answer.meaning is None:  # a Context Engine v0 cache
            return cache_meaning(self.path, meaning_status(self.model), native=False)
        status = meaning_status(self.model, verify=True)
        found = cache_meaning(self.path, status, native=_native(self.path))
        if answer is None or not found.on:
            return found
        from .search.meaning import USED

        if answer.meaning == USED:
            return found
        return found._replace(on=False, reason=f"not used by this answer ({answer.meaning})")

    def info(self) -> CacheDetails:
        """Its format, validity, source, commit, sections, tokens, sizes and build time
        (``context.inspect_cache``'s fields among them). A cache under a root is described
        whatever its state (``valid`` false and its ``problem`` when it cannot be used);
        one named by its path answers as ``context.inspect_cache`` does: CacheMissing or
        IoError when it is not there or cannot be read, a damaged manifest described."""
        from .foundation.errors import ContextError
        from .search.cache_details import details, unusable
        from .store.cache_paths import resolve_cache_name

        if self.index is None:
            return details(self.name, self.path)
        try:
            return details(self.name, resolve_cache_name(self.index.root, self.name))
        except ContextError as exc:
            return unusable(self.name, exc.detail or exc.message)

    def delete(self) -> None:
        """Delete the cache: a directory doc-index can tell is a cache, its spare
        generation and lock (DeleteRefused, nothing touched, for anything else)."""
        from .foundation.errors import CacheMissing, UsageError
        from .store.index_store import IndexStore

        if self.index is None:
            raise UsageError(f"{self.path} is no cache under a root: delete it yourself")
        root = self.index.root
        if not IndexStore(root).delete_index(self.name):  # deleted meanwhile
            from .missing_cache import missing_cache

            raise missing_cache(root, self.name, CacheMissing(detail="deleted meanwhile"))


def _native(path: Path) -> bool:
    """The manifest at ``path`` is not a Context Engine v0 one: the store's starts with
    its ``index_version`` among the first fields, a v0 one has a ``build_config``."""
    try:
        with open(path / "manifest.json", "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return True
    return b'"index_version":' in head[:256] or b'"build_config"' not in head


def build_v0(sources: str | os.PathLike[str], cache: str | os.PathLike[str], *,
             force: bool = False) -> BuiltCache:
    """``context build``: a Context Engine v0 cache of every ``*.md`` file under
    ``sources``, byte-identical to the reference's (``store.v0_build``)."""
    from .store.v0_build import build_v0_cache

    return build_v0_cache(Path(sources), Path(cache), force)


__all__ = ["DEFAULT_BUDGET", "Cache", "DocIndex", "build_v0"]
