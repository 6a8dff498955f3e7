"""Which part of a source is its documentation, and which files in it are indexed.

A git source (a URL, a bare repository, the top of a git work tree) holds more than its
documentation: Sphinx's repository is two thirds test fixtures, Flask's holds issue
templates. By default (``DOCS``) such a source is indexed as its documentation tool sees
it, the first of:

1. Sphinx: a ``conf.py`` in ``docs/``, ``docs/source/``, ``doc/`` or ``doc/source/``:
   that folder;
2. MkDocs: ``mkdocs.yml``'s ``docs_dir`` (default ``docs``), the config at the top, in
   ``docs/`` or ``doc/``, or a translated site's ``docs/en/``;
3. mdBook: ``book.toml``'s ``[book] src`` (default ``src``), at the top or in ``docs/``,
   ``doc/``, ``book/``;
4. Docusaurus: ``docusaurus.config.*`` at the top or in ``website/``: its ``docs/``
   (else the top's ``docs/``);
5. VitePress: ``docs/``, ``doc/`` or ``website/`` when it holds ``.vitepress/config.*``;
6. else a folder named ``docs/`` or ``doc/`` holding documentation files;

plus the top-level README-like files (``README*``, ``CHANGES*``, ``CHANGELOG*``,
``HISTORY*``, ``NEWS*``, ``CONTRIBUTING*``). A rule whose folder holds no documentation
file is passed over. With none of these, the whole repository is indexed but its hidden
folders (``.github/``: issue templates) and test folders (``tests/``, ``test/``,
``testing/``): a small project keeps its docs in its README and a few pages, and dropping
them silently would be worse than a few extra pages. ``ALL`` (``--all``) indexes every
file; ``SUBDIR`` (``--subdir P``, ``URL#P``) the folder ``P``; ``FOLDER`` (a local folder
the user named) every file, with no summary line.

Whatever the mode, a Sphinx build's copy of its sources is not indexed beside them
(``build_copies``): a folder named ``_sources`` (what Sphinx's HTML builders write into
``_build/html/``, ``build/html/``, or the published ``docs/`` of an sdist such as
alembic's) whose pages are, by relative path (less Sphinx's added ``.txt``), for at least
half of them the pages of one other folder the selection indexes. The copy is left out
and named in the summary (``copies_line``); a ``_sources`` folder whose sources are not
there is the only copy of those docs and stays. Other docs tools' outputs (MkDocs'
``site/``, mdBook's ``book/``, Docusaurus' ``build/``) hold HTML, not pages, and need no
rule; build folders are left out by name only outside git and in a git URL's tree
(``walk.SKIPPED_DIRS``; not a ``build/`` holding a Sphinx ``conf.py``: its sources).

Whatever the mode, ``.txt`` files are reStructuredText below a Sphinx ``conf.py`` whose
``source_suffix`` says so (Django's ``docs/``); other ``.txt`` files, and the other
documentation-like formats of ``indexer.formats.OTHER_DOC_SUFFIXES``, are skipped and
counted by kind. Config files are read as data (``doc_config``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

from ..foundation.errors import UsageError
from ..foundation.safe_paths import path_problem
from ..indexer.formats import is_doc_path, is_txt_path, other_doc_kind
from .doc_config import mdbook_src, mkdocs_docs_dir, txt_is_rst
from .identity import ALL, DOCS, FOLDER, SUBDIR

Reader = Callable[[str], "bytes | None"]  # a config file's bytes (None: not readable)

SPHINX_DIRS = ("docs", "docs/source", "doc", "doc/source")
FOLDER_NAMES = ("docs", "doc")
README_WORDS = ("README", "CHANGES", "CHANGELOG", "HISTORY", "NEWS", "CONTRIBUTING")
TEST_FOLDERS = frozenset({"tests", "test", "testing"})
_MKDOCS = ("mkdocs.yml", "mkdocs.yaml")
# Where mkdocs.yml is looked for: the top, a docs folder, and a translated site's English
# one (FastAPI keeps docs/<language>/mkdocs.yml, each with its own docs_dir).
_MKDOCS_BASES = ("", "docs", "doc", "docs/en")
_MDBOOK_BASES = ("", "docs", "doc", "book")
_DOCUSAURUS_BASES = ("", "website")
_DOCUSAURUS_EXTS = ("js", "ts", "mjs", "cjs", "mts", "cts")
_VITEPRESS_BASES = ("docs", "doc", "website")
# conf.py files whose source_suffix may make .txt reStructuredText, relative to the built
# folder (and to a --subdir): the Sphinx folders and the folder itself.
_TXT_CONF_DIRS = ("", "source", *SPHINX_DIRS)


def is_config_name(name: str, parent: str) -> bool:
    """Whether a file named ``name`` in the directory named ``parent`` is one a docs tool
    reads (the directory walk keeps these, beside the documentation files)."""
    return (name in ("conf.py", "book.toml", *_MKDOCS)
            or name.startswith("docusaurus.config.")
            or (parent == ".vitepress" and name.startswith("config.")))


def check_subdir(subdir: str) -> str:
    """``--subdir`` (or a URL's ``#P``) as a repository-relative folder, without its
    trailing ``/``; UsageError when it is not one (absolute, ``..``, empty, ...)."""
    folder = subdir.strip("/")
    while folder.startswith("./"):
        folder = folder[2:]
    problem = path_problem(folder)
    if problem is not None:
        raise UsageError(f"invalid --subdir {subdir!r}: {problem} (give a folder of the "
                         "repository, relative to its top, such as docs/en)")
    return folder


class Selection:
    """What a build indexes: ``folders`` (prefixes ending in ``/``; ``""`` is every
    file) but the ``dropped`` ones inside them, listed ``files``, folder ``excluded``
    components, and the folders whose ``.txt`` files are reStructuredText.
    ``what``/``why`` say it for the summary; ``left_out`` counts the documentation files
    outside it (filled in by the scan)."""

    def __init__(self, mode: str, folders: tuple[str, ...], *, what: str = "", why: str = "",
                 files: Iterable[str] = (), excluded: frozenset[str] = frozenset(),
                 txt_dirs: tuple[str, ...] = (), dropped: tuple[str, ...] = ()) -> None:
        self.mode = mode
        self.folders = folders
        self.dropped = dropped  # folders (ending in ``/``) inside ``folders`` left out
        self.files = tuple(sorted(files))
        self._file_set = frozenset(self.files)
        self.excluded = excluded
        self.txt_dirs = txt_dirs
        self.what = what
        self.why = why
        self.left_out = 0
        self.exists = True  # False: the source has no such folder (SUBDIR)
        self.copies: tuple[Copy, ...] = ()  # Sphinx ``_sources`` copies left out

    def is_copy(self, path: str) -> bool:
        return any(path.startswith(copy.folder) for copy in self.copies)

    def copies_line(self) -> str | None:
        """``left out: docs/_sources/ (22 files: a Sphinx build's copy of docs/build/,
        indexed)``, or None."""
        if not self.copies:
            return None
        return "left out: " + "; ".join(
            f"{c.folder} ({c.files} file{'s' if c.files != 1 else ''}: a Sphinx build's "
            f"copy of {c.of or './'}, indexed)" for c in self.copies)

    def includes(self, path: str) -> bool:
        if path in self._file_set:
            return True
        if self.dropped and path.startswith(self.dropped):
            return False
        for folder in self.folders:
            if path.startswith(folder):
                if self.excluded and any(self._excluded(part)
                                         for part in path[len(folder):].split("/")[:-1]):
                    continue
                return True
        return False

    def _excluded(self, part: str) -> bool:
        return part.startswith(".") or part in self.excluded

    def kind(self, path: str) -> str | None:
        """``"doc"`` for a file that is indexed where it is selected (Markdown, RST, a
        Sphinx ``.txt``), its kind (``.adoc``, ``.txt``...) for a documentation-like file
        doc-index does not index, None for anything else."""
        if is_doc_path(path):
            return "doc"
        if is_txt_path(path) and any(path.startswith(d) for d in self.txt_dirs):
            return "doc"
        return other_doc_kind(path)

    def line(self) -> str | None:
        """The summary's ``docs:`` line, or None (a local folder, the user's choice, says
        only how its ``.txt`` files are read)."""
        if self.mode == FOLDER and not self.txt_dirs:
            return None
        text = "docs: every file of the folder" if self.mode == FOLDER else f"docs: {self.what}"
        if self.why and self.mode != FOLDER:
            text += f" ({self.why})"
        if self.files:
            shown = ", ".join(self.files[:4]) + (", ..." if len(self.files) > 4 else "")
            text += f", plus {shown}"
        if self.left_out:
            files = "file" if self.left_out == 1 else "files"
            text += (f"; {self.left_out} doc {files} elsewhere left out "
                     "(--all indexes everything, --subdir P one folder)")
        if self.txt_dirs:
            where = ", ".join(d or "./" for d in self.txt_dirs)
            text += f"; .txt read as reStructuredText in {where} (Sphinx source_suffix)"
        return text


class Copy(NamedTuple):
    """A Sphinx build's ``_sources`` folder (``folder``, ending in ``/``), the folder its
    pages are copies of (``of``: ``""`` for the top) and its pages the selection would
    otherwise index (``files``)."""

    folder: str
    of: str
    files: int


SPHINX_COPIES = "_sources"


def choose(paths: Iterable[str], read: Reader, mode: str, subdir: str | None = None,
           subdir_from: str = "--subdir") -> Selection:
    """The selection for a source whose files (checked relative paths, documentation and
    config files at least) are ``paths``; ``read`` gives a config file's bytes. A Sphinx
    build's copy of pages it indexes is left out (``build_copies``)."""
    names = frozenset(paths)
    selection = _choose(names, read, mode, subdir, subdir_from)
    selection.copies = build_copies(names, selection)
    return selection


def _choose(names: frozenset[str], read: Reader, mode: str, subdir: str | None,
            subdir_from: str) -> Selection:
    txt_bases = ("",) if subdir is None else ("", subdir)
    txt_dirs = _txt_dirs(names, read, txt_bases)
    if mode == SUBDIR:
        assert subdir is not None
        selection = Selection(SUBDIR, (subdir + "/",), what=f"{subdir}/", why=subdir_from,
                              txt_dirs=txt_dirs)
        selection.exists = any(p.startswith(subdir + "/") for p in names)
        return selection
    if mode in (ALL, FOLDER):
        return Selection(mode, ("",), what="the whole repository", why="--all",
                         txt_dirs=txt_dirs)
    found = _detect(names, read, txt_dirs)
    readmes = [p for p in names if _readme_like(p) and is_doc_path(p)]
    if found is not None:
        folder, why = found
        return Selection(DOCS, (folder + "/",), what=f"{folder}/", why=why, files=readmes,
                         txt_dirs=txt_dirs)
    return Selection(DOCS, ("",), what="the whole repository but hidden and test folders",
                     why="no docs folder found: no Sphinx conf.py, mkdocs.yml, book.toml, "
                         "Docusaurus or VitePress config, no docs/ or doc/",
                     excluded=TEST_FOLDERS, txt_dirs=txt_dirs)


# --- a package of a monorepo ----------------------------------------------------------

# The files that make a folder a package of a workspace (npm, Python).
PACKAGE_MANIFESTS = ("package.json", "pyproject.toml", "setup.py", "setup.cfg")
_WORD_SEPARATORS = re.compile(r"[/@._-]+")


def package_words(*names: str) -> frozenset[str]:
    """The words that name a package, lowercased, ``-`` between parts: each run of the
    parts (at ``-``, ``_``, ``.``) of each path component of its name or folder
    (``@tanstack/react-query``: tanstack, react-query, react, query;
    ``opentelemetry-instrumentation-aiohttp-client``: ..., aiohttp-client, ...)."""
    words: set[str] = set()
    for name in names:
        for component in name.lower().split("/"):
            parts = [p for p in _WORD_SEPARATORS.split(component) if p]
            words.update("-".join(parts[i:j]) for i in range(len(parts))
                         for j in range(i + 1, len(parts) + 1))
    return frozenset(words)


def _word(folder: str) -> str:
    """A folder's name as ``package_words`` spells words (``aiohttp_client``:
    ``aiohttp-client``)."""
    return "-".join(p for p in _WORD_SEPARATORS.split(folder.lower()) if p)


def choose_package(paths: Iterable[str], read: Reader, folder: str, name: str,
                   uses: Iterable[str] = ()) -> Selection:
    """The docs of the package ``name`` published from ``folder`` of a monorepo (npm's
    ``repository.directory``): the docs folder of ``folder`` as ``choose`` picks it for
    that folder alone; else the repository's, as ``choose`` picks it for the whole tree,
    less the folders in it that hold other packages' pages (``package_split``; ``uses``:
    the packages this one depends on, whose pages stay); plus ``folder``'s README-like
    files. With a docs folder in neither, ``folder`` itself, as a ``--subdir``."""
    names = frozenset(paths)
    prefix = folder + "/"
    inner = frozenset(p[len(prefix):] for p in names if p.startswith(prefix))
    readmes = [prefix + p for p in inner if _readme_like(p) and is_doc_path(p)]
    own = _choose(inner, lambda p: read(prefix + p), DOCS, None, "")
    top = _choose(names, read, DOCS, None, "")
    if own.folders != ("",):
        selection = Selection(DOCS, tuple(prefix + f for f in own.folders),
                              what=prefix + own.what, why=f"the package's folder: {own.why}",
                              files=readmes, txt_dirs=tuple(prefix + d for d in own.txt_dirs))
    elif top.folders != ("",):
        has = "has none" if inner else "is not in the tree"
        dropped = package_split(names, top.folders[0], folder, name, uses)
        selection = Selection(DOCS, top.folders, what=top.what,
                              why=f"the repository's root: {top.why}; the package's folder "
                                  f"{folder} {has}", files=(*top.files, *readmes),
                              txt_dirs=top.txt_dirs, dropped=dropped)
    else:
        selection = _choose(names, read, SUBDIR, folder, "")
        selection.why = "no docs folder in the package's folder or the repository's root"
    selection.copies = build_copies(names, selection)
    return selection


def package_split(names: frozenset[str], docs: str, folder: str, name: str,
                  uses: Iterable[str] = ()) -> tuple[str, ...]:
    """The folders of the docs folder ``docs`` that hold other packages' pages: where a
    folder there has a subfolder named by a word of this package (``package_words`` of
    ``name`` and ``folder``: ``framework/react/`` for ``packages/react-query``) beside
    subfolders named by words of the other packages of the workspace (the folders beside
    ``folder`` holding a package manifest: ``vue`` of ``packages/vue-query``) that are not
    words of this package or of a package it ``uses`` (``query-core``), those
    subfolders, when this package's subfolders hold at least as many pages as each of
    them: a package whose part is smaller leans on a fuller one (TanStack Query's Vue and
    Angular pages are stubs naming the React page they borrow from, docs/packages.md).
    Sorted; nothing when no folder splits so."""
    ours = package_words(name, folder)
    kept = ours | package_words(*uses)
    parent = posixpath.dirname(folder)
    siblings = {p.split("/")[-2] for p in names
                if posixpath.dirname(posixpath.dirname(p)) == parent
                and posixpath.basename(p) in PACKAGE_MANIFESTS}
    others = package_words(*(s for s in siblings if s != posixpath.basename(folder))) - kept
    children: dict[str, set[str]] = {}
    for path in names:
        if path.startswith(docs):
            parts = path[len(docs):].split("/")[:-1]
            for depth in range(len(parts)):
                children.setdefault("/".join(parts[:depth]), set()).add(parts[depth])
    dropped: list[str] = []
    for where, subs in sorted(children.items()):
        base = docs + (where + "/" if where else "")
        mine = [f"{base}{s}/" for s in subs if _word(s) in ours]
        theirs = [f"{base}{s}/" for s in sorted(subs) if _word(s) in others]
        if mine and theirs and not any(base.startswith(d) for d in dropped) \
                and _pages(names, mine) >= max(_pages(names, [t]) for t in theirs):
            dropped += theirs
    return tuple(sorted(dropped))


def _pages(names: frozenset[str], folders: list[str]) -> int:
    """How many documentation files ``folders`` hold."""
    return sum(1 for p in names if p.startswith(tuple(folders)) and is_doc_path(p))


def build_copies(names: frozenset[str], selection: Selection) -> tuple[Copy, ...]:
    """The ``_sources`` folders among ``names`` that are a Sphinx build's copies of a
    folder ``selection`` indexes: at least half of their pages (and one) have the same
    path below that one folder (Sphinx's ``html_sourcelink_suffix``, ``.txt`` after the
    page's own suffix, removed), which is not itself such a copy."""
    copied: dict[str, list[str]] = {}
    for path in names:
        parts = path.split("/")
        if SPHINX_COPIES in parts[:-1] and selection.kind(path) == "doc" \
                and selection.includes(path):
            folder = "/".join(parts[:parts.index(SPHINX_COPIES) + 1]) + "/"
            copied.setdefault(folder, []).append(path[len(folder):])
    if not copied:
        return ()
    by_name: dict[str, list[str]] = {}
    for path in names:
        if not any(path.startswith(f) for f in copied) and selection.includes(path):
            by_name.setdefault(posixpath.basename(path), []).append(path)
    copies = []
    for folder, pages in sorted(copied.items()):
        origins: dict[str, int] = {}
        for page in pages:
            page = _sourcelink_removed(page)
            for path in by_name.get(posixpath.basename(page), ()):
                if path == page or path.endswith("/" + page):
                    origin = path[:len(path) - len(page)]
                    origins[origin] = origins.get(origin, 0) + 1
        if origins:
            origin, matched = max(origins.items(), key=lambda item: (item[1], item[0]))
            if 2 * matched >= len(pages):
                copies.append(Copy(folder, origin, len(pages)))
    return tuple(copies)


def _sourcelink_removed(page: str) -> str:
    """``index.rst.txt`` -> ``index.rst`` (Sphinx's default ``html_sourcelink_suffix``);
    ``index.txt`` and ``index.rst`` stay."""
    if page.endswith(".txt") and posixpath.splitext(page[:-4])[1]:
        return page[:-4]
    return page


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _txt_dirs(names: frozenset[str], read: Reader, bases: tuple[str, ...]) -> tuple[str, ...]:
    found: list[str] = []
    for base in bases:
        for where in _TXT_CONF_DIRS:
            folder = _join(base, where)
            conf = _join(folder, "conf.py")
            if conf in names and folder not in found and txt_is_rst(read(conf)):
                found.append(folder)
    return tuple(f + "/" if f else "" for f in found)


def _holds_docs(names: frozenset[str], folder: str, txt_dirs: tuple[str, ...]) -> bool:
    prefix = folder + "/"
    for path in names:
        if path.startswith(prefix) and (
                is_doc_path(path)
                or (is_txt_path(path) and any(path.startswith(d) for d in txt_dirs))):
            return True
    return False


def _clean_folder(base: str, value: str | None, default: str) -> str | None:
    """``base``/``value`` as a checked folder (a config's path, relative to its file's
    folder), or None when it leaves the repository or is not a path."""
    folder = posixpath.normpath(_join(base, value if value else default))
    folder = folder.strip("/")
    if folder in ("", ".") or path_problem(folder) is not None:
        return None
    return folder


def _detect(names: frozenset[str], read: Reader,
            txt_dirs: tuple[str, ...]) -> tuple[str, str] | None:
    """(folder, why) of the first rule that names a folder holding documentation."""
    candidates: list[tuple[str | None, str]] = []
    for folder in SPHINX_DIRS:
        if f"{folder}/conf.py" in names:
            candidates.append((folder, f"Sphinx {folder}/conf.py"))
    for config in (_join(base, name) for base in _MKDOCS_BASES for name in _MKDOCS):
        if config in names:
            base = posixpath.dirname(config)
            candidates.append((_clean_folder(base, mkdocs_docs_dir(read(config)), "docs"),
                               f"MkDocs {config} docs_dir"))
    for base in _MDBOOK_BASES:
        config = _join(base, "book.toml")
        if config in names:
            candidates.append((_clean_folder(base, mdbook_src(read(config)), "src"),
                               f"mdBook {config} src"))
    for base in _DOCUSAURUS_BASES:
        for ext in _DOCUSAURUS_EXTS:
            config = _join(base, f"docusaurus.config.{ext}")
            if config in names:
                candidates.append((_join(base, "docs"), f"Docusaurus {config}"))
                if base:
                    candidates.append(("docs", f"Docusaurus {config}"))
    for base in _VITEPRESS_BASES:
        if any(p.startswith(f"{base}/.vitepress/config.") for p in names):
            candidates.append((base, f"VitePress {base}/.vitepress"))
    candidates += [(folder, f"a folder named {folder}") for folder in FOLDER_NAMES]
    for place, why in candidates:
        if place is not None and _holds_docs(names, place, txt_dirs):
            return place, why
    return None


def _readme_like(path: str) -> bool:
    if "/" in path:
        return False
    upper = path.upper()
    for word in README_WORDS:
        if upper.startswith(word) and (len(upper) == len(word)
                                       or not upper[len(word)].isalpha()):
            return True
    return False


class Counted(NamedTuple):
    """What a scan makes of one path under a selection."""

    index: bool  # type: ignore[assignment]  # a doc file to index (shadows tuple.index)
    kind: str | None  # a skipped documentation-like kind to count (``.txt``, ``.adoc``)


def classify(selection: Selection, path: str) -> Counted:
    """Index it, count it as a skipped kind, or neither (outside the selection, counted
    in ``left_out`` when it is documentation; or no documentation at all)."""
    kind = selection.kind(path)
    if kind is None or selection.copies and selection.is_copy(path):
        return Counted(False, None)
    if not selection.includes(path):
        if kind == "doc":
            selection.left_out += 1
        return Counted(False, None)
    if kind == "doc":
        return Counted(True, None)
    return Counted(False, kind)


def kinds_line(kinds: dict[str, int]) -> str | None:
    """``skipped: 12 .txt, 3 .adoc (not documentation formats)``, most first, or None."""
    if not kinds:
        return None
    shown = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(),
                                                           key=lambda kv: (-kv[1], kv[0])))
    return f"skipped: {shown} (not documentation formats)"


__all__ = ["ALL", "DOCS", "FOLDER", "SUBDIR", "Copy", "Counted", "Selection", "build_copies",
           "check_subdir", "choose", "choose_package", "classify", "is_config_name",
           "kinds_line", "package_split", "package_words"]
