"""Pages as their renderer shows them, in the build: includes inlined, autodoc written in.

``indexer.page_expand`` does the work on text; this module gives it what a build knows:
a reader bound to the source (``DirectoryReader``: below a folder's handle, never through
a symlink, only the files git lists in a work tree; ``GitTreeReader``: the blobs of the
commit's tree, fetched on first use in a partial clone), the docs tools' configuration
read as data (``conf.py``, ``mkdocs.yml``, ``book.toml``: which forms apply, where
modules and snippets are looked for), and the parse of one expanded page
(``Expander.parse``: its raw text is the expanded text, each section names where its text
came from, the page records what it read).

A source's pages are paths relative to the built folder; the reader's root is the
repository around it when there is one (a docs folder of a work tree, ``--subdir``), so
``prefix`` (``docs/`` or "") turns one into the other. Dependencies and origins are kept
relative to the built folder (``../src/flask/helpers.py``), like the page paths.

Everything here must pickle (a parse worker forked before the build knew its source gets
it with its jobs): readers open their handles lazily, in the process that reads.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
import subprocess
from bisect import bisect_right
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..foundation.safe_paths import path_problem
from ..indexer.model import PageStats, ParsedFile, ParsedSection

if TYPE_CHECKING:
    from ..indexer.includes import Span

# The forms ``indexer.includes`` knows (its FORMS; not imported here: a build whose pages
# expand nothing never imports the expansion's modules).
FORMS = frozenset({"rst", "myst", "mdbook", "snippets", "fastapi", "mdx"})

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_ORIGINS = 16  # origins listed per section (the first ones, in text order)
MAX_FETCHED_SIBLINGS = 256  # blobs fetched with a missing one (same folder and suffix)

# Where Sphinx's conf.py usually is, below the built folder (and the docs folders chosen).
_CONF_DIRS = ("", "source", "docs", "doc", "docs/source", "doc/source", "doc/build")
_MKDOCS = ("mkdocs.yml", "mkdocs.yaml")
_BOOK_DIRS = ("", "docs", "doc", "book")

# A page that holds none of these is not expanded at all (parsed as it always was). A
# superset of what ``page_expand`` acts on: a false match costs one expansion, no change.
_RST_MARK = re.compile(rb"\.\.[ \t]+(?:auto\w+|literalinclude|include|(?:py:)?(?:current)?"
                       rb"module)::")
_MD_MARKS = {
    "myst": re.compile(rb"\{(?:literalinclude|include|auto\w+|eval-rst)\}"),
    "snippets": re.compile(rb"8<"),
    "fastapi": re.compile(rb"\{\*"),
    "mdbook": re.compile(rb"\{\{"),
    "mdx": re.compile(rb"\{!"),
}
_MKDOCSTRINGS_MARK = re.compile(rb"(?m)^::: ")


def git_blob_hash(data: bytes, algorithm: str = "sha1") -> str:
    """The id git gives a blob of ``data`` (what a tree lists as the file's SHA)."""
    digest = hashlib.new(algorithm, b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DirectoryReader:
    """A folder's files by repo-relative path: opened below the folder's handle one
    component at a time with ``O_NOFOLLOW`` (a symlink anywhere on the way is not
    followed), regular files of at most ``max_bytes``. In a work tree only the files git
    lists (tracked, or untracked and not ignored: the walk's rule) are read; outside git,
    nothing below a folder the walk skips by name (``.git``, ``node_modules``, ...)."""

    def __init__(self, root: str, files: frozenset[str] | None, max_bytes: int,
                 skipped_dirs: frozenset[str] = frozenset()) -> None:
        self.root = root
        self.files = files
        self.max_bytes = max_bytes
        self.skipped_dirs = skipped_dirs
        self._fd = -1
        self._pid = 0
        self._states: dict[str, str | None] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_fd": -1, "_pid": 0, "_states": {}}

    def hasher(self, data: bytes) -> str:
        return sha256_hex(data)

    def paths(self) -> Iterable[str]:
        return self.files or ()

    def _root_fd(self) -> int:
        if self._pid != os.getpid():
            self._fd = os.open(self.root, _DIR_FLAGS)
            self._pid = os.getpid()
        return self._fd

    def read(self, path: str) -> bytes | None:
        if path_problem(path) is not None:
            return None
        parts = path.split("/")
        if self.files is not None:
            if path not in self.files:
                return None
        elif any(part in self.skipped_dirs for part in parts[:-1]):
            return None
        try:
            return self._read(parts)
        except OSError:
            return None

    def _read(self, parts: list[str]) -> bytes | None:
        fd = os.open(".", _DIR_FLAGS, dir_fd=self._root_fd())
        try:
            for part in parts[:-1]:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
            file_fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        try:
            info = os.fstat(file_fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_bytes:
                return None
            with open(file_fd, "rb", closefd=False) as fh:
                data = fh.read(self.max_bytes + 1)
        finally:
            os.close(file_fd)
        return data if len(data) <= self.max_bytes else None

    def close(self) -> None:
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd, self._pid = -1, 0

    def state(self, path: str) -> str | None:
        """What a page that read ``path`` recorded for it, now: its hash, None when it is
        not there (remembered: the build asks for each once)."""
        if path not in self._states:
            data = self.read(path)
            self._states[path] = None if data is None else self.hasher(data)
        return self._states[path]


class GitTreeReader:
    """The files of one commit of a clone by path (``blobs``: path -> blob SHA, from the
    tree listing that passed the path check; symlinks and submodules left out), read with
    one ``git cat-file --batch`` per process. In a partial clone a blob not there yet is
    fetched with the others of its folder and suffix (one request: a package's modules),
    through the clone's own remote (``env``: what the build's fetches add)."""

    def __init__(self, clone: str, blobs: dict[str, str], missing: frozenset[str],
                 env: dict[str, str], max_bytes: int) -> None:
        self.clone = clone
        self.blobs = blobs
        self.missing = set(missing)
        self.env = env
        self.max_bytes = max_bytes
        self.algorithm = "sha256" if any(len(s) == 64 for s in list(blobs.values())[:1]) \
            else "sha1"
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0
        self._by_folder: dict[str, list[str]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_proc": None, "_pid": 0, "_by_folder": None}

    def hasher(self, data: bytes) -> str:
        return git_blob_hash(data, self.algorithm)

    def paths(self) -> Iterable[str]:
        return self.blobs.keys()

    def state(self, path: str) -> str | None:
        return self.blobs.get(path)

    def read(self, path: str) -> bytes | None:
        sha = self.blobs.get(path)
        if sha is None:
            return None
        if sha in self.missing:
            self._fetch_folder(path)
        try:
            return self._cat(sha)
        except (OSError, ValueError):
            self.close()
            return None

    def _fetch_folder(self, path: str) -> None:
        """Fetch the missing blob of ``path`` with those of its folder's files of the same
        kind (a package's modules; at most ``MAX_FETCHED_SIBLINGS``) in one request;
        quietly nothing when that fails (the file is then not found)."""
        from .git_run import FETCH_OPTIONS, run_git

        if self._by_folder is None:
            self._by_folder = {}
            for name, sha in self.blobs.items():
                if sha in self.missing:
                    key = f"{posixpath.dirname(name)}\0{posixpath.splitext(name)[1]}"
                    self._by_folder.setdefault(key, []).append(sha)
        key = f"{posixpath.dirname(path)}\0{posixpath.splitext(path)[1]}"
        siblings = set(self._by_folder.pop(key, [])) & self.missing
        wanted = sorted({self.blobs[path], *sorted(siblings)[:MAX_FETCHED_SIBLINGS]})
        try:
            run_git(["-c", "fetch.negotiationAlgorithm=noop", "fetch", "--no-tags", "--quiet",
                     "--no-write-fetch-head", "--recurse-submodules=no",
                     "--filter=blob:none", "--stdin", "origin"],
                    git_dir=self.clone, options=FETCH_OPTIONS, env=self.env, network=True,
                    input="".join(f"{sha}\n" for sha in wanted).encode("ascii"))
        except OSError:
            pass
        self.missing -= set(wanted)

    def _cat(self, sha: str) -> bytes | None:
        from .git_run import read_batch_blob, start_git

        if self._proc is None or self._pid != os.getpid():
            self._proc = start_git(["cat-file", "--batch"], git_dir=self.clone,
                                   stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self._pid = os.getpid()
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        data = read_batch_blob(stdin, stdout, sha)
        return data if data is not None and len(data) <= self.max_bytes else None

    def close(self) -> None:
        if self._proc is not None and self._pid == os.getpid():
            for pipe in (self._proc.stdin, self._proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
            self._proc.wait()
        self._proc = None


class MemoryReader:
    """The files of a package's archive, read in memory already (``sources.package``):
    path -> bytes, checked by the archive reader's path rules."""

    def __init__(self, files: dict[str, bytes], max_bytes: int) -> None:
        self.files = files
        self.max_bytes = max_bytes

    def hasher(self, data: bytes) -> str:
        return sha256_hex(data)

    def paths(self) -> Iterable[str]:
        return self.files.keys()

    def read(self, path: str) -> bytes | None:
        data = self.files.get(path)
        return data if data is not None and len(data) <= self.max_bytes else None

    def state(self, path: str) -> str | None:
        data = self.read(path)
        return None if data is None else self.hasher(data)

    def close(self) -> None:
        pass


Reader = DirectoryReader | GitTreeReader | MemoryReader


class ExpandConfig(NamedTuple):
    """What a build knows about its source for expanding pages, once for all of them."""

    reader: Reader
    prefix: str  # the built folder, relative to the reader's root ("" or "docs/")
    conf_path: str | None  # Sphinx conf.py (repo-relative), read as data
    conf: Any  # module_finder.SphinxConf | None
    docs_root: str
    config_dir: str | None  # the mkdocs.yml folder
    forms: frozenset[str]
    markdown_autodoc: bool  # mkdocstrings / MyST autodoc in Markdown pages
    roots: tuple[str, ...]  # where modules are looked for


def configure(reader: Reader, prefix: str, folders: Iterable[str] = ()) -> ExpandConfig:
    """The configuration of a source's expansion, read as data: ``conf.py`` and
    ``book.toml`` looked for in the built folder and the docs folders the selection chose
    (``folders``), then where these tools usually keep them below those; ``mkdocs.yml``
    in those folders or above them (FastAPI's ``docs/en/mkdocs.yml`` for ``docs/en/docs``)."""
    from ..indexer.module_finder import package_roots, read_sphinx_conf, search_roots

    base = prefix.rstrip("/")
    bases = list(dict.fromkeys([base, *(f.rstrip("/") for f in folders)]))
    conf_path = _first(reader, [_join(b, d, "conf.py") for b in bases for d in _CONF_DIRS])
    conf_bytes = reader.read(conf_path) if conf_path else None
    conf = read_sphinx_conf(conf_bytes, conf_path) if conf_bytes is not None and conf_path \
        else None
    mkdocs_path = _first(reader, [_join(folder, name) for b in bases
                                  for folder in _ancestors(b) for name in _MKDOCS])
    mkdocs = (reader.read(mkdocs_path) or b"") if mkdocs_path else b""
    book = _first(reader, [_join(b, d, "book.toml") for b in bases for d in _BOOK_DIRS]
                  + [_join(folder, "book.toml") for b in bases for folder in _ancestors(b)])
    forms = {"rst"}
    conf_text = conf_bytes or b""
    if b"myst_parser" in conf_text or b"myst_nb" in conf_text:
        forms.add("myst")
    if book:
        forms.add("mdbook")
    for form, word in (("snippets", b"pymdownx.snippets"),
                       ("fastapi", b"markdown_include_variants"), ("mdx", b"mdx_include")):
        if word in mkdocs:
            forms.add(form)
    markdown_autodoc = b"mkdocstrings" in mkdocs or "myst" in forms
    docs_root = posixpath.dirname(conf_path) if conf_path else base
    config_dir = posixpath.dirname(mkdocs_path) if mkdocs_path else None
    roots = search_roots(conf, None, ())
    roots = tuple(dict.fromkeys([*roots, *package_roots(reader.paths())]))
    return ExpandConfig(reader, prefix, conf_path, conf, docs_root, config_dir,
                        frozenset(forms) & FORMS, markdown_autodoc, roots)


def fingerprint(config: ExpandConfig | None) -> str | None:
    """What decides how every page expands, as one digest (None: pages are not expanded):
    recorded in the manifest, so a build whose docs configuration changed (a mkdocs.yml
    that now names an include form, a conf.py's paths) re-parses every page instead of
    carrying pages expanded, or not, the old way."""
    if config is None:
        return None
    parts = (config.prefix, config.conf_path, config.docs_root, config.config_dir,
             sorted(config.forms), config.markdown_autodoc, list(config.roots))
    return sha256_hex(repr(parts).encode("utf-8"))[:32]


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _ancestors(folder: str) -> list[str]:
    """``folder`` and each folder above it, up to the root ("")."""
    out = [folder]
    while folder:
        folder = posixpath.dirname(folder)
        out.append(folder)
    return out


def _first(reader: Reader, candidates: list[str]) -> str | None:
    for path in dict.fromkeys(candidates):
        if path_problem(path) is None and reader.state(path) is not None:
            return path
    return None


class Expander:
    """Expands and parses pages in one process (a parse worker) for one build: the
    module finder caches the modules it reads across pages."""

    def __init__(self, config: ExpandConfig) -> None:
        from ..indexer.page_expand import PageContext, make_finder

        self.config = config
        reader = config.reader
        self._state = state_function(config)
        finder = make_finder(reader.read, config.conf, roots=config.roots,
                             hasher=reader.hasher)
        self.context = PageContext(reader.read, config.conf, finder,
                                   docs_root=config.docs_root, config_dir=config.config_dir,
                                   forms=config.forms, hasher=reader.hasher)

    def repo_path(self, path: str) -> str:
        return self.config.prefix + path

    def source_path(self, repo_path: str) -> str:
        """A repo-relative path as the built folder sees it (``../src/x.py``)."""
        prefix = self.config.prefix.rstrip("/")
        return posixpath.relpath(repo_path, prefix) if prefix else repo_path

    def state(self, source_path: str) -> str | None:
        return self._state(source_path)

    def parse(self, path: str, raw: bytes) -> ParsedFile | None:
        """Page ``path`` (normalized bytes ``raw``) expanded and parsed; None when the
        expansion changed nothing (the page is parsed as it is)."""
        from ..indexer.document import index_file
        from ..indexer.formats import is_rst_path
        from ..indexer.page_expand import expand_page

        text = raw.decode("utf-8")
        context = self.context
        if not is_rst_path(path) and not self.config.markdown_autodoc:
            context = context._replace(autodoc=False)
        page = self.repo_path(path)
        expanded = expand_page(text, page, context, "rst" if is_rst_path(path) else "md")
        dependencies = tuple(sorted({(self.source_path(d.path), d.hash)
                                     for d in expanded.dependencies}))
        if expanded.text == text and not dependencies and not expanded.unresolved:
            return None
        parsed = index_file(path, expanded.text.encode("utf-8"))
        spans = expanded.spans
        starts = [span.start for span in spans]
        sections = [s._replace(origins=self._origins(s, spans, starts, page))
                    for s in parsed.sections]
        stats = PageStats(
            documented=sum(1 for o in expanded.objects if o.object.depth == 0),
            objects=len(expanded.objects), unresolved=expanded.unresolved,
            includes=expanded.includes, notes=expanded.notes)
        return parsed._replace(sections=sections, dependencies=dependencies, expansion=stats)

    def _origins(self, section: ParsedSection, spans: tuple[Span, ...], starts: list[int],
                 page: str) -> tuple[tuple[str, int, int], ...]:
        """Where the section's bytes came from, per file in order of first appearance
        (first and last line); () when all of it is the page's own text."""
        start, end = section.byte_offset, section.byte_offset + section.byte_length
        found: dict[str, list[int]] = {}
        at = max(bisect_right(starts, start) - 1, 0)
        while at < len(spans) and spans[at].start < end:
            span = spans[at]
            if span.end > start:
                lines = found.setdefault(span.file, [span.first_line, span.last_line])
                lines[0] = min(lines[0], span.first_line)
                lines[1] = max(lines[1], span.last_line)
            at += 1
        if set(found) <= {page}:
            return ()
        return tuple((self.source_path(file), first, last)
                     for file, (first, last) in list(found.items())[:MAX_ORIGINS])


_current: Expander | None = None
_current_config: ExpandConfig | None = None


def wants(config: ExpandConfig, path: str, raw: bytes) -> bool:
    """Whether page ``path`` (normalized bytes ``raw``) may hold something to expand."""
    from ..indexer.formats import is_rst_path

    if is_rst_path(path):
        return _RST_MARK.search(raw) is not None
    forms = config.forms
    if any(form in forms and mark.search(raw) for form, mark in _MD_MARKS.items()):
        return True
    return config.markdown_autodoc and (
        _MKDOCSTRINGS_MARK.search(raw) is not None
        or _MD_MARKS["myst"].search(raw) is not None)


def expander_for(config: ExpandConfig | None, path: str, raw: bytes) -> Expander | None:
    """The expander of ``config`` in this process (made once per build and process) when
    page ``path`` (normalized bytes ``raw``) may need it; None otherwise."""
    global _current, _current_config
    if config is None or not wants(config, path, raw):
        return None
    if _current is None or _current_config is not config:
        _current, _current_config = Expander(config), config
    return _current


def forget(config: ExpandConfig | None) -> None:
    """Drop this process's expander of ``config`` (the build is over)."""
    global _current, _current_config
    if _current_config is config and config is not None:
        config.reader.close()
        _current = _current_config = None


def state_function(config: ExpandConfig) -> Callable[[str], str | None]:
    """A dependency's hash now, by source-relative path (what ``Expander.state`` gives in
    a worker), for the build's plan."""
    prefix = config.prefix.rstrip("/")
    reader = config.reader

    def state(path: str) -> str | None:
        repo = posixpath.normpath(posixpath.join(prefix, path)) if prefix else path
        if path_problem(repo) is not None:
            return None
        return reader.state(repo)

    return state

__all__ = ["DirectoryReader", "ExpandConfig", "Expander", "GitTreeReader", "MemoryReader",
           "configure", "fingerprint",
           "expander_for", "forget", "git_blob_hash", "state_function"]


def directory_config(directory: str, max_bytes: int, folders: Iterable[str] = ()
                     ) -> ExpandConfig:
    """The expansion of a local folder's build: in a git work tree, reading the files git
    lists anywhere in it (modules and included files often live beside the docs folder,
    in ``src/``); elsewhere, the folder itself."""
    from .git_run import run_git
    from .walk import SKIPPED_DIRS, _ignored_by_git

    top = None
    try:
        done = run_git(["rev-parse", "--show-toplevel"], cwd=directory)
        if done.status == 0:
            top = os.fsdecode(done.out.rstrip(b"\n"))
            listed = run_git(["ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                             cwd=top)
            if listed.status != 0 or _ignored_by_git(Path(directory).resolve()):
                top = None
    except OSError:
        top = None
    if top is not None:
        prefix = posixpath.relpath(os.path.realpath(directory), os.path.realpath(top))
        if prefix == "." or prefix.startswith(".."):
            prefix = ""
        else:
            prefix += "/"
        files = frozenset(p for p in (os.fsdecode(x) for x in listed.out.split(b"\0") if x)
                          if path_problem(p) is None)
        reader: Reader = DirectoryReader(os.path.realpath(top), files, max_bytes)
        return configure(reader, prefix, [prefix + f for f in folders])
    reader = DirectoryReader(os.path.realpath(directory), None, max_bytes, SKIPPED_DIRS)
    return configure(reader, "", folders)
