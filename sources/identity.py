"""Where a cache came from: its source's identity, its default name, and the check that a
build never silently replaces a cache built from another source.

A source is one of three kinds:

- ``directory``: a plain folder; location = its absolute resolved path;
- ``git-work-tree``: a folder inside a git work tree (at any depth); location = its
  absolute resolved path, ref = the checked-out branch (None when detached);
- ``git``: a git URL or bare repository; location = the URL without credentials
  (``doc_index.foundation.redact``), ref = ``--ref`` (None: the remote's default branch).

The manifest records it as ``"source": {"kind", "location", "ref", "commit"}``
(``record``), plus ``"select": "all"`` or ``"select": "subdir", "subdir": P`` when the
build chose files other than the default (``scope``: ``doc_selection``; a git source and
a work tree's top index their documentation by default). Two sources are the same source
when kind, location and selection agree, and for ``git`` also the ref: a work tree's
branch is the state it is in, not which source it is (a checkout of another branch, or a
hook after ``git switch``, rebuilds the same cache). A record without ``select`` (the
default, or a cache built before selections) is the default selection. A cache whose
source is not known is no build's source: one built by a doc-index that recorded no
source (its owner and name are all it says, and any work tree whose ``origin`` has that
owner and name would match them), or one whose manifest cannot be read
(``index_store``). Replacing either takes ``--replace``, once.

Default cache names (``key``), each a valid ``cache_names`` name:

- git URL: ``<owner>-<name>`` from the URL's last two path components, and
  ``<owner>-<name>@<ref>`` for any ``--ref`` (``/`` in the ref becomes ``-``);
  ``-<subdir>`` (``/`` -> ``-``) or ``-all`` before the ``@`` for ``--subdir``/``--all``,
  as a work tree's top takes ``-all`` (two selections never share a cache by default,
  and the source check stops one that is named so);
- work tree with an ``origin`` remote: ``<owner>-<name>`` from that URL at the work
  tree's top, ``<owner>-<name>-<sub-path>`` for a folder below it (``docs``,
  ``doc-build`` for ``doc/build``): two folders of one repository never share a name;
- any other folder (no ``origin``, or no git): ``local-<parent>-<folder>``
  (``/home/me/proj/docs`` -> ``local-proj-docs``); two ``docs`` folders whose parents
  share a name too are told apart by the source check, which stops the second build.

(NamedTuples, not dataclasses: the build path's imports, tests/test_import_rules.py.)
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ..foundation.cache_names import name_problem
from ..foundation.errors import UsageError
from ..foundation.safe_paths import MAX_COMPONENT_BYTES
from .git_run import start_git, wait_git

# How a build chooses the files of its source (``doc_selection``'s modes).
DOCS, ALL, SUBDIR, FOLDER = "docs", "all", "subdir", "folder"

DIRECTORY = "directory"
WORK_TREE = "git-work-tree"
GIT = "git"
PYPI = "pypi"
NPM = "npm"
PACKAGE_KINDS = (PYPI, NPM)
KINDS = (DIRECTORY, WORK_TREE, GIT, *PACKAGE_KINDS)
_KIND_WORDS = {DIRECTORY: "directory", WORK_TREE: "git work tree", GIT: "git",
               PYPI: "PyPI package", NPM: "npm package"}

_BAD_NAME_CHARS = re.compile(r"[^\w.-]+")

# Why a package's cache has no docs folder (its record's ``docs_note`` starts with one;
# ``store.sources.package``): the causes ``sync`` and ``list`` name.
NOT_REACHED = "docs repository not reached"
NO_REPOSITORY = "no docs folder in the archive and no docs repository named"
NO_DOCS_ANYWHERE = "no docs folder in the archive or the docs repository"


def key_part(text: str) -> str:
    """A safe cache-name component: word characters, ``.``, ``-``; no leading dot."""
    return _BAD_NAME_CHARS.sub("-", text).strip("-").lstrip(".")


def check_name(name: str) -> str:
    """``--name``: the cache is named exactly this, a ``cache_names`` name that is not
    hidden (a dot name is the store's or a tool's); UsageError otherwise."""
    problem = name_problem(name)
    if problem is None and name.startswith("."):
        problem = "hidden (starts with '.')"
    if problem is None and len(name.encode("utf-8")) > MAX_COMPONENT_BYTES:
        problem = f"longer than a file name can be ({MAX_COMPONENT_BYTES} bytes)"
    if problem is not None:
        raise UsageError(f"invalid cache name {name!r} for --name: {problem}")
    return name


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_LIKE = re.compile(r"^(?:[^@/:\s]+@)?(?P<host>[^/:\s]+):(?P<path>(?!//).*)$")


def remote_names(source: str, *, top: Path | None = None) -> tuple[str, str, str] | None:
    """A git URL's (or bare repository path's) url for git, owner and name: the URL's last
    two path components (``https://github.com/pallets/flask.git``: ``pallets``, ``flask``),
    the host when there is one component; None when the path has none or the URL does not
    parse (``http://[x``: urlsplit's error would quote the URL, credentials and all). (Here,
    not in ``git_source``: a work tree's build names its cache from ``origin`` without
    importing the git-URL machinery.)

    ``top``: ``source`` is a work tree's ``origin``, read from its (untrusted) git config:
    scp-like or not is told by its spelling alone, as git tells it, and a local path is
    relative to the work tree's ``top``, normalized by its spelling (no ``~``, no symlink
    followed): the name never depends on the current directory, the user's home or files
    outside the source (a symlink loop there was an internal error)."""
    host = ""
    if _SCHEME.match(source):
        try:
            parts = urlsplit(source)  # (the scheme lower-cased: git knows ``http``, not ``HTTP``)
            path, host = parts.path, parts.hostname or ""
        except ValueError:
            return None
        url = parts.scheme + source[len(parts.scheme):]
    elif (scp := _SCP_LIKE.match(source)) and (top is not None or not os.path.exists(source)):
        path, host, url = scp.group("path"), scp.group("host"), source
    elif top is not None:
        path = url = os.path.normpath(os.path.join(top, source))
    else:
        resolved = Path(source).expanduser().resolve()
        path = url = str(resolved)
    components = [c for c in path.replace("\\", "/").split("/") if c]
    if components and components[-1] == ".git":
        components.pop()  # /srv/owner/name/.git -> owner, name
    if not components:
        return None
    name = key_part(components[-1].removesuffix(".git")) or "repo"
    owner = key_part(components[-2]) if len(components) >= 2 else ""
    return url, owner or key_part(host) or "git", name


def place_of(location: str) -> str:
    """One spelling per place, for comparing locations: a ``file://`` URL as its path, no
    trailing ``/`` or ``.git`` (``file:///p/r.git/`` and ``/p/r`` are one repository); a
    ``file://`` URL that does not parse stays as it is."""
    if location.startswith("file://"):
        try:
            location = urlsplit(location).path
        except ValueError:  # (a recorded location is read from an untrusted manifest)
            pass
    return location.rstrip("/").removesuffix(".git").rstrip("/")


class Source(NamedTuple):
    """A build's source: its identity (``kind``, ``location``, ``ref``) and the names its
    cache takes by default (``owner``, ``name`` for the manifest, ``key`` for the cache)."""

    kind: str
    location: str
    ref: str | None
    owner: str
    name: str
    key: str
    scope: str = FOLDER  # DOCS, ALL, SUBDIR (a git source, a work tree's top) or FOLDER
    subdir: str | None = None  # the folder of SUBDIR
    details: dict[str, Any] | None = None  # a package's record fields (store.sources.package)

    def record(self, commit: str) -> dict[str, Any]:
        """The manifest's ``source`` object (``commit``: "" for a plain folder -> null);
        a package's ``details`` are added (package, version, index, archive, repository)."""
        record: dict[str, Any] = {"kind": self.kind, "location": self.location,
                                  "ref": self.ref, "commit": commit or None}
        if self.scope in (ALL, SUBDIR):
            record["select"] = self.scope
        if self.scope == SUBDIR:
            record["subdir"] = self.subdir
        if self.details:
            record.update(self.details)
        return record

    def same_as(self, header: dict[str, Any]) -> bool:
        """Whether the live manifest ``header`` was built from this source. A manifest
        without a well-formed ``source`` record (an older doc-index wrote none) never was:
        its owner and name are no proof, an untrusted work tree can claim them."""
        old: Any = header.get("source")
        if shown_source(old) is None:
            return False
        if old["kind"] != self.kind:
            return False
        if self.kind in PACKAGE_KINDS:  # one package at one version, from any index
            return (old.get("package"), old["ref"]) == (
                (self.details or {}).get("package"), self.ref)
        mine = self.record("")
        if (old.get("select"), old.get("subdir")) != (mine.get("select"), mine.get("subdir")):
            return False
        if self.kind != GIT:  # a folder is its resolved path: ``/p/d.git`` is not ``/p/d``
            return old["location"] == self.location
        return place_of(old["location"]) == place_of(self.location) and old["ref"] == self.ref

    def shown(self) -> str:
        return shown_source(self.record(""), with_commit=False) or ""

    def shown_header(self, header: dict[str, Any]) -> str:
        return header_source_text(header)

    def cache_key(self, name: str | None) -> str:
        """The cache's name: ``--name`` as given (``check_name``), else ``key`` if it can
        name a cache (a long ``--ref``, origin or folder name makes one too long: a
        UsageError, never a shortened name that two sources could share)."""
        if name is not None:
            return check_name(name)
        if len(self.key.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES:
            raise UsageError(f"the default cache name, from the source's name, is longer "
                             f"than a file name can be ({MAX_COMPONENT_BYTES} bytes): build "
                             f"with --name NAME")
        return self.key


def shown_source(record: Any, *, with_commit: bool = False) -> str | None:
    """A ``source`` record for people (``git https://host/o/r.git (ref 2.3)``,
    ``directory /home/me/docs``), or None when it is not a well-formed record."""
    if not isinstance(record, dict) or record.get("kind") not in KINDS:
        return None
    location, ref, commit = record.get("location"), record.get("ref"), record.get("commit")
    if not isinstance(location, str) or not all(v is None or isinstance(v, str)
                                                for v in (ref, commit)):
        return None
    select, subdir = record.get("select"), record.get("subdir")
    if select not in (None, ALL, SUBDIR) or (select == SUBDIR) != isinstance(subdir, str):
        return None
    if record["kind"] in PACKAGE_KINDS:
        return _shown_package(record, with_commit)
    text = f"{_KIND_WORDS[record['kind']]} {location}" + (f"#{subdir}" if subdir else "")
    details = [f"ref {ref}"] if ref else []
    if select == ALL:
        details.append("all files")
    if with_commit and commit:
        details.append(f"commit {commit[:12]}")
    return f"{text} ({', '.join(details)})" if details else text


def _shown_package(record: dict[str, Any], with_commit: bool) -> str | None:
    """``PyPI package flask 3.1.0 (index https://pypi.org/simple/)``; None when the
    package's name is missing. ``ref`` is the version (None: left out, as ``list`` has
    its own column for it)."""
    package = record.get("package")
    if not isinstance(package, str) or not package:
        return None
    text = f"{_KIND_WORDS[record['kind']]} {package}"
    if record.get("ref"):
        text += f" {record['ref']}"
    details = [f"index {record['location']}"] if record.get("location") else []
    repository = record.get("repository")
    note = docs_note(record)
    if note is not None:
        details.append(note)
    elif isinstance(repository, dict) and isinstance(repository.get("url"), str) and (
            record.get("docs_from") == "repository"
            or "docs_from" not in record and repository.get("commit")):
        details.append(f"repository {repository['url']}")  # (where its docs came from)
    if with_commit and record.get("commit"):
        details.append(f"commit {record['commit'][:12]}")
    return f"{text} ({', '.join(details)})" if details else text


def docs_note(record: Any) -> str | None:
    """What a package's cache could not get, one line (``docs repository not reached:
    README and API pages only``), or None: its docs folder came from the archive or the
    repository, or the record is not a package's or was written before doc-index recorded
    this (``shown_source`` then names a repository only when it has a commit)."""
    if not isinstance(record, dict) or record.get("kind") not in PACKAGE_KINDS:
        return None
    note = record.get("docs_note")
    return note if isinstance(note, str) and note else None


def header_source_text(header: dict[str, Any]) -> str:
    """The source a live manifest records, for the error that stops a replace."""
    record = header.get("source")
    if record is None:
        return (f"repository {header.get('owner')}/{header.get('name')} (built before "
                "doc-index recorded sources)")
    return shown_source(record) or "an unreadable source"





def git_source(location: str, ref: str | None, owner: str, name: str, scope: str = DOCS,
               subdir: str | None = None) -> Source:
    """A git URL's source: ``<owner>-<name>``, ``-<subdir>`` or ``-all`` for another
    selection than the docs, ``@<ref>`` for a ``--ref``."""
    key = f"{owner}-{name}" + _scope_suffix(scope, subdir)
    if ref is not None:
        key += f"@{key_part(ref.replace('/', '-')) or 'ref'}"
    return Source(GIT, _text(location), None if ref is None else _text(ref), owner, name, key,
                  scope, None if subdir is None else _text(subdir))


def _scope_suffix(scope: str, subdir: str | None) -> str:
    if scope == SUBDIR:
        return f"-{key_part((subdir or '').replace('/', '-')) or 'dir'}"
    return "-all" if scope == ALL else ""


def directory_source(directory: Path, *, everything: bool = False) -> Source:
    """The source of a local folder (``directory`` absolute and resolved): a work tree's
    (named from its ``origin``) or a plain folder's. git is asked through the one runner;
    a folder git does not know is a plain folder. A work tree's top indexes its docs
    (scope DOCS), or every file with ``everything`` (ALL, ``-all`` in its name); any other
    folder every file (FOLDER)."""
    [top] = _git_lines(directory, [("rev-parse", "--show-toplevel")])
    if top is None:
        return _plain(directory, DIRECTORY, None)
    # in a work tree, the two other answers are asked at once (8 vs 13 ms one after the other)
    branch, origin = _git_lines(directory, [("symbolic-ref", "--quiet", "--short", "HEAD"),
                                            ("config", "--get", "remote.origin.url")])
    top_path = Path(top).resolve()
    scope = FOLDER if top_path != directory else ALL if everything else DOCS
    if not origin:
        return _plain(directory, WORK_TREE, branch, scope)
    names = remote_names(origin, top=top_path)
    if names is None:  # an origin without a path (``file:///``): no name to take
        return _plain(directory, WORK_TREE, branch, scope)
    _, owner, name = names
    key = f"{owner}-{name}"
    try:
        below = directory.relative_to(top_path).as_posix()
    except ValueError:  # the top seen through another path: name it as a plain folder
        below = directory.name
    if below not in ("", "."):
        key += f"-{key_part(below.replace('/', '-')) or 'dir'}"
    return Source(WORK_TREE, _text(os.fspath(directory)), None if branch is None else _text(branch),
                  owner, name, key + _scope_suffix(scope, None), scope)


def _plain(directory: Path, kind: str, ref: str | None, scope: str = FOLDER) -> Source:
    folder = key_part(directory.name) or "dir"
    parent = key_part(directory.parent.name) if directory.parent != directory else ""
    key = f"local-{parent}-{folder}" if parent else f"local-{folder}"
    return Source(kind, _text(os.fspath(directory)), None if ref is None else _text(ref),
                  "local", folder, key + _scope_suffix(scope, None), scope)


def _text(value: str) -> str:
    """``value`` as valid UTF-8 text for the manifest: a path or ref that is not UTF-8
    (surrogate escapes) keeps its bytes as ``\\xNN`` escapes, so two such names stay two
    (a lone surrogate in the manifest would make strict readers refuse the cache)."""
    try:
        data = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = value.encode("utf-8", "surrogatepass")
    return data.decode("utf-8", "backslashreplace")


def _git_lines(cwd: Path, queries: list[tuple[str, ...]]) -> list[str | None]:
    """git's one-line answer to each query in ``cwd``, run at once through the one runner;
    None where git fails or is missing. (git that does not answer in time raises
    ``GitTimeout``, as the walk that follows would.)"""
    procs: list[subprocess.Popen[bytes] | None] = []
    for args in queries:
        try:
            procs.append(start_git(args, cwd=cwd, stderr=subprocess.DEVNULL))
        except OSError:
            procs.append(None)
    answers: list[str | None] = []
    for proc in procs:
        out = wait_git(proc, os.fspath(cwd))[0] if proc is not None else b""
        ok = proc is not None and proc.returncode == 0
        answers.append(out.decode("utf-8", "surrogateescape").strip() or None if ok else None)
    return answers



__all__ = ["ALL", "DOCS", "FOLDER", "KINDS", "NOT_REACHED", "NO_DOCS_ANYWHERE",
           "NO_REPOSITORY", "NPM", "PACKAGE_KINDS", "PYPI", "SUBDIR",
           "Source", "check_name", "docs_note",
           "directory_source", "git_source", "key_part", "place_of", "shown_source"]
