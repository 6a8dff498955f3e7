"""A build from any source: a source's snapshot handed to the store (a library feature).

``build_source`` is what ``doc-index build SOURCE``, the library's ``build`` and the git
hook run: ``pypi:NAME==VERSION`` or ``npm:NAME@VERSION`` is built from the package
(``sources.package``); a URL (any case of scheme), an scp-like ``user@host:path`` that is
no local path, or a bare repository's directory from git (``sources.git``); any other
directory (a plain folder or a git work tree, at any depth) from its walk
(``sources.walk``). Each reads its source into a ``Scan`` (``sources.snapshot``) and hands
it to ``IndexStore.update_index``, returning the ``BuildReport``; nothing here prints (the
doors render the report: ``render.build_summary``).
"""

from __future__ import annotations

import re
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .foundation.cache_names import MANIFEST_NAME
from .foundation.errors import IoError, UsageError
from .foundation.printable import printable
from .sources.docs_folder import ALL, DOCS, SUBDIR, check_subdir
from .sources.identity import directory_source
from .sources.snapshot import Scan
from .sources.walk import DEFAULT_MAX_BYTES, nothing_to_index, scan_directory
from .store.index_store import BuildReport, IndexStore, Progress, warm_worker
from .store.manifest import MAX_RAW_FILE_BYTES

_GIT_PREFIXES = ("http://", "https://", "ssh://", "git://", "file://", "git@")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")  # user@host:owner/name.git


def looks_like_git(source: str) -> bool:
    """A URL (any case of scheme), or a path to a bare repository (a directory with HEAD
    and objects/)."""
    if source.lower().startswith(_GIT_PREFIXES):
        return True
    path = Path(source)
    if _SCP_LIKE.match(source) and not path.exists():
        return True
    return path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir()


def check_max_bytes(value: int) -> int:
    """The largest file a build indexes: 1 to MAX_RAW_FILE_BYTES (0 or less would skip
    every file; more than a manifest may describe is refused); UsageError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"not an integer: {value!r}")
    if not 1 <= value <= MAX_RAW_FILE_BYTES:
        raise UsageError(f"{value} is out of range: use 1 to {MAX_RAW_FILE_BYTES} bytes")
    return value


def _build_package(store: IndexStore, source: str, *, ref: str | None, subdir: str | None,
                   everything: bool, **options: Any) -> BuildReport:
    """A published package (``package.build_from_package``): its version is in the
    argument and its parts are chosen by the package source, so ``--ref``, ``--subdir``
    and ``--all`` do not apply."""
    for option, value in (("--ref", ref), ("--subdir", subdir), ("--all", everything or None)):
        if value is not None:
            raise UsageError(f"{option} does not apply to a package ({printable(source)}): "
                             "its version is in the argument (pypi:NAME==VERSION, "
                             "npm:NAME@VERSION) and its docs are chosen for it")
    return build_from_package(store, source, **options)


def build_source(store: IndexStore, source: str, *, name: str | None = None,
                 ref: str | None = None, full: bool = False, replace: bool = False,
                 max_bytes: int = DEFAULT_MAX_BYTES, progress: Progress | None = None,
                 subdir: str | None = None, everything: bool = False) -> BuildReport:
    """Build or update the cache of ``source`` under ``store``. ``ref``: git URLs and bare
    repositories only (a UsageError for a local folder); ``subdir``/``everything``: which
    files (``doc_selection``; not both)."""
    check_max_bytes(max_bytes)
    if subdir is not None and everything:
        raise UsageError("--subdir and --all choose two different sets of files: give one")
    if source.startswith(("pypi:", "npm:")):
        return _build_package(store, source, name=name, ref=ref, full=full, replace=replace,
                              max_bytes=max_bytes, progress=progress, subdir=subdir,
                              everything=everything)
    if looks_like_git(source):
        return build_from_git(store, source, name=name, ref=ref, full=full, replace=replace,
                              max_bytes=max_bytes, progress=progress, subdir=subdir,
                              everything=everything)
    from .foundation.redact import redact

    directory = Path(source)
    if not directory.is_dir():
        raise IoError(f"not a directory or git repository: {printable(redact(source))}")
    if ref is not None:
        raise UsageError(
            f"--ref applies to a git URL or a bare repository, not to the local folder "
            f"{printable(redact(source))} (it is read as it is on disk): check the ref out "
            "there (git switch), or build the repository's URL with --ref")
    return build_from_directory(store, directory, name=name, full=full, replace=replace,
                                max_bytes=max_bytes, progress=progress, subdir=subdir,
                                everything=everything)


def build_from_directory(store: IndexStore, directory: Path, *, name: str | None = None,
                         full: bool = False, replace: bool = False,
                         max_bytes: int = DEFAULT_MAX_BYTES,
                         progress: Progress | None = None, subdir: str | None = None,
                         everything: bool = False) -> BuildReport:
    """Build or update the cache of a folder: its default name (``sources.identity``:
    ``<owner>-<name>[-<sub-path>]`` in a work tree with an ``origin``, else
    ``local-<parent>-<folder>``) or exactly ``name``. ``replace``: a cache of that name
    built from another source is replaced, not refused. ``subdir``: build that folder
    below ``directory`` instead (as if it were named); ``everything``: a work tree's top
    indexes every file, not its docs (``docs_folder``). A folder with nothing to index
    is an error (``NothingToIndex``); nothing is written."""
    if subdir is not None:
        directory = directory / check_subdir(subdir)
        if not directory.is_dir():
            raise UsageError(f"--subdir: no folder {printable(str(directory))}")
    directory = directory.resolve()
    identity = directory_source(directory, everything=everything)
    key = identity.cache_key(name)
    with warm_worker(store, key, full) as warm:  # imports the parsers during the walk
        scan = scan_directory(directory, max_bytes=max_bytes, cache_root=store.root,
                              mode=identity.scope)
        if not scan.files:
            raise nothing_to_index(printable(str(directory)), scan)
        report = store.update_index(key, identity.owner, identity.name, scan, full=full,
                                    progress=progress, warm=warm, source=identity,
                                    replace=replace)
    return with_scan_lines(report, scan)


def with_scan_lines(report: BuildReport, scan: Scan) -> BuildReport:
    """``report`` with what the scan says about its source (the summary's lines)."""
    selection = scan.selection
    lines = [] if selection is None else [selection.line(), selection.copies_line()]
    report.about = [line for line in lines if line] + scan.notes
    report.kinds = dict(scan.kinds)
    return report


def build_from_git(
    store: IndexStore, source: str, *, name: str | None = None, ref: str | None = None,
    full: bool = False, replace: bool = False, max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress | None = None, subdir: str | None = None, everything: bool = False,
) -> BuildReport:
    """Build or update the cache of a git source (``<owner>-<name>``, ``@<ref>`` for a
    ``ref``, ``-<subdir>``/``-all`` for another selection, or exactly ``name``); re-running
    it is the incremental reindex (fetch, resolve, parse only blobs the cache does not
    have). By default its documentation is indexed (``doc_selection``); ``subdir`` (or the
    URL's ``#P``) one folder, ``everything`` every file. ``replace``: a cache of that name
    built from another source is replaced, not refused (``source_identity``)."""
    from .sources.git import (  # lazy: a folder's build never loads git's (import rules)
        BlobReader,
        fetch_blobs,
        open_clone,
        parse_remote,
        remote_source,
        scan_commit,
        tree_expansion,
    )

    source, folder, origin = _selection_args(source, subdir)
    scope = SUBDIR if folder is not None else ALL if everything else DOCS
    remote = parse_remote(source)
    identity = remote_source(remote, ref, scope, folder)
    key = identity.cache_key(name)
    # An incremental build's worker forks now and imports the parsers while git fetches;
    # a first or full build's pool forks later, after a thread (no fork while it runs)
    # has imported them in this process meanwhile.
    with warm_worker(store, key, full) as warm:
        warming = threading.Thread(target=_prepare_parsers, daemon=True)
        if full or not _has_cache(store, key):
            warming.start()
        try:
            with open_clone(remote, ref) as fetched:
                blobs = BlobReader(fetched.clone)
                scan: Scan | None = None
                try:
                    scan = scan_commit(fetched.clone, fetched.commit, blobs, max_bytes,
                                       mode=scope, subdir=folder, subdir_from=origin,
                                       fetch=lambda shas: fetch_blobs(fetched, remote, shas))
                    scan.notes += fetched.notes
                    if not scan.files:
                        raise nothing_to_index(f"{remote.display} at {fetched.commit[:12]}",
                                               scan)
                    scan.expand = tree_expansion(fetched, remote, scan, max_bytes)
                    if warming.is_alive():
                        warming.join()
                    report = store.update_index(key, remote.owner, remote.name, scan,
                                                full=full, progress=progress, warm=warm,
                                                source=identity, replace=replace)
                finally:
                    blobs.close()
                    if scan is not None and scan.expand is not None:
                        scan.expand.reader.close()
        finally:
            if warming.is_alive():
                warming.join()
    assert scan is not None
    return with_scan_lines(report, scan)


def _has_cache(store: IndexStore, key: str) -> bool:
    try:
        return (store.cache_dir(key) / MANIFEST_NAME).is_file()
    except (UsageError, OSError):
        return False


def _prepare_parsers() -> None:
    """Import and set up both parsers (a full build's pool forks after them: Sphinx's
    first build spent 0.16 s on this after the fetch). A failure here is the parse's to
    report, later, in its own place."""
    try:
        from .indexer.document import index_file  # noqa: F401 (imported for the workers)
        from .indexer.markdown import _block_parser, _inline_parser
        from .indexer.rst_structure import parser
        from .store.parse_cache import indexer_salt

        indexer_salt()
        parser()
        _block_parser()
        _inline_parser()
    except Exception:  # noqa: BLE001, S110
        pass


def _selection_args(source: str, subdir: str | None) -> tuple[str, str | None, str]:
    """(URL, checked folder or None, what chose the folder) from the source and
    ``--subdir``; a UsageError when the URL's ``#P`` and ``--subdir`` disagree."""
    from .sources.git import split_subdir  # lazy: a folder's build never loads git's

    url, fragment = split_subdir(source)
    if fragment is None:
        return url, None if subdir is None else check_subdir(subdir), "--subdir"
    folder = check_subdir(fragment)
    if subdir is not None and check_subdir(subdir) != folder:
        raise UsageError(f"the URL names the folder {folder!r} (#{fragment}) and --subdir "
                         f"{subdir!r}: give one")
    return url, folder, f"#{fragment} in the URL"


def build_from_package(store: IndexStore, source: str, *, name: str | None = None,
                       full: bool = False, replace: bool = False,
                       max_bytes: int = DEFAULT_MAX_BYTES, progress: Progress | None = None,
                       config: Any = None, hashes: tuple[str, ...] = ()) -> BuildReport:
    """Build or update the cache of a published package (``pypi:NAME==VERSION``,
    ``npm:NAME@VERSION``), named ``NAME@VERSION`` or exactly ``name``. ``config``: the
    installer configuration to fetch with (None: the user's own; never a file of the
    current folder); ``hashes``: a lockfile's (``sync``)."""
    from .sources.package import (  # lazy: only a package's build loads its source
        package_key,
        package_snapshot,
        parse_spec,
        read_package,
    )

    spec = parse_spec(source)
    key = package_key(spec, name)
    got, contents = read_package(spec, config=config, hashes=hashes)
    with ExitStack() as stack, warm_worker(store, key, full) as warm:
        scan, identity, about = package_snapshot(spec, key, got, contents, stack, max_bytes)
        report = store.update_index(key, spec.ecosystem, spec.name, scan, full=full,
                                    progress=progress, warm=warm, source=identity,
                                    replace=replace)
    report.about = about
    report.kinds = dict(scan.kinds)
    return report
