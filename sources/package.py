"""Package sources: ``doc-index build pypi:NAME==VERSION`` and ``npm:NAME@VERSION``.

The published source archive (an sdist, an npm tarball) is found on the index the user's
installer is configured with (``package_index.pypi_config``, ``npm_registry.npm_config``),
downloaded and verified against the hash the index publishes (``package_fetch.download``:
nothing else sees unverified bytes), and read in memory as untrusted data
(``archives.read_archive``: the git trees' path rule, size, member and ratio caps).
Nothing of the package is built, installed, imported or run.

What the cache holds, each part named in the build summary with where it came from:

- the archive's docs folder, chosen as a git source's is (``docs_folder.choose``: Sphinx
  ``conf.py``, ``mkdocs.yml``, ``docs/``...), plus its top-level README-like files; with
  no docs folder, the README-like files alone;
- for PyPI, one generated page per public module of each top-level import package
  (``_api/<module>.md`` holding ``::: <module>``, mkdocstrings' directive): the build's
  autodoc step documents it from the archive's docstrings (``Scan.source_reader`` gives
  it the archive's Python files); the page is ordinary Markdown until then;
- when the archive has no docs folder, the project's repository (``package_meta``: the
  package's own ``project_urls`` / npm ``repository``) at the tag naming the version
  (``choose_tag`` among ``git ls-remote --tags``), through the git source's clone area;
  its docs folder is added (the archive's file wins a shared path). A package published
  from a folder of a monorepo (npm's ``repository.directory``, a PyPI project URL of a
  folder) has that folder's docs folder, else the repository's less other packages'
  pages (``docs_folder.choose_package``). A repository that cannot be reached
  (offline), or has no such tag, is a summary line, not a failure.
  Repository URLs from metadata are always ``https://`` on a forge (``package_meta``):
  an air-gapped user points git at a mirror with git's own ``url.<base>.insteadOf``.

The cache is named ``NAME@VERSION`` (PyPI: PEP 503 name, PEP 440 version; npm: the name
with a scope's ``/`` as ``+``, which neither ecosystem allows in a name). Its source record
(``identity.Source.details``) says package, version, index, archive and its sha256, and the
repository, tag and commit used; the manifest's ``commit_hash`` is the archive's sha256,
so an unchanged pin is an unchanged cache.
"""

from __future__ import annotations

import hashlib
import os
import re
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, NamedTuple

from ..foundation.errors import PackageError, UsageError
from ..foundation.printable import printable
from ..indexer.formats import is_doc_path
from .docs_folder import (
    DOCS,
    Selection,
    _readme_like,  # (the git source's rule for README-like names)
    choose,
    choose_package,
    classify,
)
from .identity import (
    FOLDER,
    NO_DOCS_ANYWHERE,
    NO_REPOSITORY,
    NOT_REACHED,
    NPM,
    PYPI,
    Source,
)
from .snapshot import Scan, SourceFile
from .walk import nothing_to_index

if TYPE_CHECKING:
    from .expansion import ExpandConfig

PREFIXES = {"pypi:": PYPI, "npm:": NPM}
API_FOLDER = "_api"
# Folders of an sdist that hold no importable package of the project.
_NOT_PACKAGES = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "example",
                           "benchmarks", "bench", "scripts", "tools", "build", "dist"})
_PEP508_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)
_NPM_VERSION = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


class PackageSpec(NamedTuple):
    """A package at one version: ``ecosystem`` (``pypi``/``npm``), the name as the index
    knows it (PEP 503-normalized for PyPI) and the version (PEP 440-normalized)."""

    ecosystem: str
    name: str
    version: str

    @property
    def key(self) -> str:
        """The cache's default name, ``NAME@VERSION`` (a scope's ``/`` as ``+``)."""
        return f"{self.name.replace('/', '+')}@{self.version}"

    def __str__(self) -> str:
        sep = "==" if self.ecosystem == PYPI else "@"
        return f"{self.ecosystem}:{self.name}{sep}{self.version}"


def is_package_spec(source: str) -> bool:
    return source.startswith(tuple(PREFIXES))


def parse_spec(source: str) -> PackageSpec:
    """``pypi:NAME==VERSION`` or ``npm:NAME@VERSION`` (``npm:@scope/pkg@1.2.3``);
    UsageError naming the expected form otherwise."""
    prefix = next(p for p in PREFIXES if source.startswith(p))
    text = source[len(prefix):].strip()
    if PREFIXES[prefix] == PYPI:
        return _pypi_spec(text, source)
    return _npm_spec(text, source)


def _pypi_spec(text: str, source: str) -> PackageSpec:
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    name, sep, version = text.partition("==")
    name, version = name.strip(), version.strip()
    if not sep or not _PEP508_NAME.match(name) or not version:
        raise UsageError(f"invalid package {printable(source)!r}: give pypi:NAME==VERSION "
                         "(an exact pin, such as pypi:flask==3.1.0)")
    try:
        normalized = str(Version(version))
    except InvalidVersion:
        raise UsageError(f"invalid version {printable(version)!r} in {printable(source)!r}: "
                         "give a PEP 440 version (3.1.0, 2.0.0rc1)") from None
    return PackageSpec(PYPI, canonicalize_name(name), normalized)


def _npm_spec(text: str, source: str) -> PackageSpec:
    from .npm_registry import clean_version, valid_npm_name

    cut = text.rfind("@")
    name, version = (text[:cut], clean_version(text[cut + 1:])) if cut > 0 else (text, "")
    if not valid_npm_name(name) or not _NPM_VERSION.match(version):
        raise UsageError(f"invalid package {printable(source)!r}: give npm:NAME@VERSION "
                         "with an exact version (npm:react@18.3.1, npm:@babel/core@7.26.0)")
    return PackageSpec(NPM, name, version)


# --- fetching --------------------------------------------------------------------------


class Downloaded(NamedTuple):
    """A verified archive: where it was found (``package_fetch.Artifact``), its bytes,
    their sha256, and whose configuration chose that index (for the summary)."""

    artifact: Any  # package_fetch.Artifact (imported late: the build path's cost)
    data: bytes
    sha256: str
    via: str = ""


def fetch_archive(spec: PackageSpec, *, config: Any = None,
                  hashes: tuple[str, ...] = ()) -> Downloaded:
    """Find and download ``spec``'s source archive through ``config`` (a ``PypiConfig``
    or ``NpmConfig``; None: the user's own configuration, ``index_choice`` says which
    index a synced pin uses); with ``hashes`` (a lockfile's), the bytes must also match
    one of them. PackageError (and its kinds) otherwise."""
    from .package_fetch import Fetcher, download

    if spec.ecosystem == PYPI:
        from .package_index import authorizer, find_sdist, pypi_config

        config = pypi_config() if config is None else config
        fetcher = Fetcher(authorize=authorizer(config), cafile=config.cafile)
        artifact = find_sdist(config, spec.name, spec.version, fetcher)
        location = next(loc for loc in config.locations if loc.url == artifact.index)
        via = (f"the project's ({location.origin}), accepted by hand" if location.from_project
               else f"{config.installer}'s configuration ({location.origin}): {config.why}")
    else:
        from .npm_registry import find_npm_tarball, npm_config

        config = npm_config() if config is None else config
        fetcher = Fetcher(authorize=config.authorize, cafile=config.cafile)
        artifact = find_npm_tarball(config, spec.name, spec.version, fetcher)
        via = config.origin if config.origin.startswith(("the project's", "npm's default")) \
            else f"npm's configuration ({config.origin})"
    data = download(artifact, fetcher)
    sha256 = hashlib.sha256(data).hexdigest()
    if hashes and not _matches_lock(data, sha256, hashes):
        raise PackageError(f"{artifact.filename} does not match the hash the lockfile lists "
                           f"for {spec} ({hashes[0]}): the index serves other bytes than "
                           "the ones the project was locked with")
    return Downloaded(artifact, data, sha256, via)


def _matches_lock(data: bytes, sha256: str, hashes: tuple[str, ...]) -> bool:
    from .package_fetch import digests_from_sri

    for text in hashes:
        algorithm, sep, value = text.partition(":")
        if sep and algorithm.lower() == "sha256" and value.lower() == sha256:
            return True
        if any(d.matches(data) for d in digests_from_sri(text)):
            return True
    return False


# --- what the archive gives ------------------------------------------------------------


def archive_docs(files: dict[str, bytes]) -> tuple[Selection, dict[str, bytes]]:
    """The archive's docs selection (as a git source's, ``docs_folder.choose``) and the
    files it indexes; with no docs folder, the top-level README-like files only."""
    selection = choose(list(files), files.get, DOCS)
    if selection.folders == ("",):  # no docs folder: not the whole sdist (its tests...)
        readmes = [p for p in files if "/" not in p and _readme_like(p) and is_doc_path(p)]
        selection = Selection(DOCS, (), what="no docs folder", why="only README-like files",
                              files=readmes)
    chosen = {p: data for p, data in files.items() if classify(selection, p).index}
    return selection, chosen


def import_packages(paths: list[str]) -> list[tuple[str, str]]:
    """The archive's top-level import packages as ``(name, folder)``: folders holding an
    ``__init__.py`` at the top or under ``src/``, and ``src/``'s single-file modules
    (folder ``""``), never tests, docs or examples; sorted by name."""
    found: dict[str, str] = {}
    names = set(paths)
    for path in paths:
        parts = path.split("/")
        base = parts[:-1]
        if base[:1] == ["src"]:
            base = base[1:]
            where = "src/"
        else:
            where = ""
        if len(base) == 1 and parts[-1] == "__init__.py" and _public(base[0]) \
                and base[0].isidentifier() and base[0].lower() not in _NOT_PACKAGES:
            found.setdefault(base[0], where + base[0])
        elif not base and where and parts[-1].endswith(".py") and _public(parts[-1][:-3]) \
                and parts[-1][:-3].isidentifier():
            found.setdefault(parts[-1][:-3], "")
    return sorted((name, folder) for name, folder in found.items()
                  if not folder or f"{folder}/__init__.py" in names)


def _public(name: str) -> bool:
    return not name.startswith("_")


def api_modules(paths: list[str]) -> list[str]:
    """The dotted names the API pages document: each public direct submodule of each
    import package (``click.core``), or the package itself when all its modules are
    private (``httpx``: ``_client.py``...), and ``src/``'s single-file modules."""
    names = set(paths)
    modules: list[str] = []
    for package, folder in import_packages(paths):
        if not folder:
            modules.append(package)
            continue
        subs = sorted({p[len(folder) + 1:].split("/")[0].removesuffix(".py")
                       for p in names if p.startswith(folder + "/")
                       and (p.count("/") == folder.count("/") + 1 and p.endswith(".py")
                            or p.endswith("/__init__.py")
                            and p.count("/") == folder.count("/") + 2)})
        public = [s for s in subs if _public(s) and s.isidentifier()]
        modules += [f"{package}.{s}" for s in public] if public else [package]
    return modules


def api_pages(paths: list[str], taken: set[str]) -> dict[str, bytes]:
    """``_api/<module>.md`` per module of ``api_modules``: a heading and mkdocstrings'
    ``::: <module>``; a path the archive already holds is left to the archive."""
    pages: dict[str, bytes] = {}
    for module in api_modules(paths):
        path = f"{API_FOLDER}/{module}.md"
        if path not in taken:
            pages[path] = f"# {module}\n\n::: {module}\n".encode()
    return pages


# --- the repository fallback -----------------------------------------------------------


class RepoPart(NamedTuple):
    """The repository's contribution: its scan (None when it gave nothing), the record
    (``url``, ``tag``, ``commit``, ``why``, ``reached``: False when git could not list
    its tags or fetch the tag; for a package of a monorepo ``directory``, ``docs``,
    ``docs_why``, ``left_out``), the summary's line, and ``gap``: why it gave no docs
    (``identity.docs_note``'s cause), None when it did."""

    scan: Scan | None
    record: dict[str, Any] | None
    line: str
    gap: str | None = None
    notes: tuple[str, ...] = ()  # summary lines after ``line`` (what was left out)


def repository_of(spec: PackageSpec, files: dict[str, bytes]) -> Any:
    """The package's repository from its own metadata (``package_meta.Repository``), or
    None."""
    from .package_meta import parse_package_json, repository_url, sdist_metadata

    try:
        if spec.ecosystem == NPM:
            return parse_package_json(files["package.json"])[1] if "package.json" in files \
                else None
        return repository_url(sdist_metadata(files).urls)
    except PackageError:
        return None


def list_tags(url: str) -> list[str]:
    """``git ls-remote --tags`` of ``url`` through the one runner (batch-mode ssh, never a
    prompt, the git deadline); GitSourceError with git's cause when it fails."""
    import os

    from ..foundation.errors import GitSourceError
    from .git import fetch_error, parse_remote
    from .git_run import FETCH_OPTIONS, start_git, wait_git

    env = {} if os.environ.get("GIT_SSH_COMMAND") or os.environ.get("GIT_SSH") else {
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
    try:
        proc = start_git(["ls-remote", "--tags", "--", url], options=FETCH_OPTIONS, env=env,
                         network=True)
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    out, err = wait_git(proc, url)
    if proc.returncode != 0:
        raise fetch_error(parse_remote(url), err.decode("utf-8", "replace"))
    return out.decode("utf-8", "replace").splitlines()  # choose_tag reads these lines


def repository_part(spec: PackageSpec, files: dict[str, bytes], stack: ExitStack,
                    max_bytes: int) -> RepoPart:
    """The repository's docs at the version's tag, its clone held open on ``stack`` while
    the build reads it; any failure (offline, no tag, nothing there) is the line."""
    from ..foundation.errors import DocIndexError
    from .package_meta import choose_tag

    repo = repository_of(spec, files)
    if repo is None:
        return RepoPart(None, None, "repository: none named in the package's metadata",
                        NO_REPOSITORY)
    shown = printable(repo.url)
    try:
        tags = list_tags(repo.url)
    except DocIndexError as exc:
        return RepoPart(None, {"url": repo.url, "why": exc.message, "reached": False},
                        f"repository: {shown} unavailable: {exc.message}", NOT_REACHED)
    choice = choose_tag(tags, spec.version, name=spec.name, ecosystem=spec.ecosystem)
    if choice.tag is None:
        return RepoPart(None, {"url": repo.url, "why": choice.reason, "reached": True},
                        f"repository: {shown}: {choice.reason}",
                        f"no tag for {spec.version} in the docs repository")
    try:
        scan = _scan_tag(spec, repo, choice.tag, stack, max_bytes, files)
    except DocIndexError as exc:
        return RepoPart(None, {"url": repo.url, "tag": choice.tag, "why": exc.message,
                               "reached": False},
                        f"repository: {shown} at tag {choice.tag} unavailable: {exc.message}",
                        NOT_REACHED)
    record = {"url": repo.url, "tag": choice.tag, "commit": scan.commit_hash,
              "why": choice.reason, "reached": True}
    where = f"{shown} at {choice.reason} (commit {scan.commit_hash[:12]})"
    selection = scan.selection
    if selection is None or not scan.files:
        return RepoPart(None, record, f"repository: {where}: no docs folder there either",
                        NO_DOCS_ANYWHERE)
    what = f"{selection.what} ({selection.why})" if selection.why else selection.what
    folder = package_folder(repo.directory)
    notes: tuple[str, ...] = ()
    if folder is not None:
        record.update(directory=folder, docs=selection.what, docs_why=selection.why)
        if selection.dropped:
            record["left_out"] = list(selection.dropped)
            notes = (_dropped_line(selection, scan),)
    return RepoPart(scan, record, f"repository: {where}: docs {what}", notes=notes)


def _dropped_line(selection: Selection, scan: Scan) -> str:
    """``left out: docs/framework/vue/, ... (170 files: other packages' pages)``."""
    count = sum(1 for p in scan.tree if p.startswith(selection.dropped)
                and selection.kind(p) == "doc")
    shown = ", ".join(selection.dropped[:4])
    if len(selection.dropped) > 4:
        shown += f" and {len(selection.dropped) - 4} more folders"
    return f"left out: {shown} ({count} file{'s' if count != 1 else ''}: other packages' pages)"


def _scan_tag(spec: PackageSpec, repo: Any, tag: str, stack: ExitStack, max_bytes: int,
              files: dict[str, bytes]) -> Scan:
    """The docs of ``repo`` at ``tag``, read from the git source's clone, which stays open
    until ``stack`` closes. A package of a monorepo (npm's ``directory``) has its
    folder's docs or else the repository's (``docs_folder.choose_package``); the files of
    its folder the archive holds (its README) are left to the archive's copy."""
    from .git import BlobReader, fetch_blobs, open_clone, parse_remote, scan_commit

    remote = parse_remote(repo.url)
    fetched = stack.enter_context(open_clone(remote, f"refs/tags/{tag}"))
    blobs = BlobReader(fetched.clone)
    stack.callback(blobs.close)
    folder = package_folder(repo.directory)
    uses = package_uses(spec, files) if folder else ()
    scan = scan_commit(fetched.clone, fetched.commit, blobs, max_bytes, mode=DOCS,
                       fetch=lambda shas: fetch_blobs(fetched, remote, shas),
                       select=None if folder is None else lambda paths, read: choose_package(
                           paths, read, folder, spec.name, uses))
    if scan.selection is not None and scan.selection.folders == ("",) and folder is None:
        scan.files = []  # no docs folder: the archive's README is the better copy
    if folder is not None:  # (the archive is the published copy of the package's folder)
        scan.files = [f for f in scan.files
                      if not f.path.startswith(folder + "/") or f.path[len(folder) + 1:]
                      not in files]
    return scan


def package_folder(directory: str | None) -> str | None:
    """npm's ``repository.directory`` as a checked folder (``check_subdir``), or None when
    it names none, the repository's top (``""``, ``.``, ``./``) or no folder of it."""
    from .docs_folder import check_subdir

    if directory is None or directory.strip().strip("/") in ("", "."):
        return None
    try:
        return check_subdir(directory.strip())
    except UsageError:  # ("..", an absolute path: not a folder of the repository)
        return None


def package_uses(spec: PackageSpec, files: dict[str, bytes]) -> tuple[str, ...]:
    """The packages ``spec`` depends on, read as data: npm's ``dependencies``,
    ``peerDependencies`` and ``optionalDependencies`` of its ``package.json``, PyPI's
    ``Requires-Dist`` of its ``PKG-INFO``. In a monorepo's docs their pages are not another
    package's (``docs_folder.package_split``)."""
    names: set[str] = set()
    if spec.ecosystem == NPM:
        import json

        try:
            document = json.loads(files.get("package.json", b"{}"))
        except (ValueError, RecursionError):
            return ()
        for field in ("dependencies", "peerDependencies", "optionalDependencies"):
            value = document.get(field) if isinstance(document, dict) else None
            if isinstance(value, dict):
                names.update(k for k in value if isinstance(k, str))
    elif "PKG-INFO" in files and len(files["PKG-INFO"]) <= 4 << 20:  # (MAX_METADATA_BYTES)
        from email.parser import HeaderParser
        from email.policy import compat32

        headers = HeaderParser(policy=compat32).parsestr(
            files["PKG-INFO"].decode("utf-8", "replace"), headersonly=True)
        for line in headers.get_all("Requires-Dist") or []:
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", str(line))
            if match:
                names.add(match.group(1))
    return tuple(sorted(names))


# --- what a build of a package reads -----------------------------------------------------


def package_key(spec: PackageSpec, name: str | None) -> str:
    """The cache's name: ``NAME@VERSION`` or exactly ``name`` (``Source.cache_key``)."""
    return Source(spec.ecosystem, "", spec.version, spec.ecosystem, spec.name,
                  spec.key).cache_key(name)


def read_package(spec: PackageSpec, *, config: Any = None,
                 hashes: tuple[str, ...] = ()) -> tuple[Downloaded, Any]:
    """The package's verified archive and its contents, read in memory. ``config``: the
    installer configuration to fetch with (None: the user's own; never a file of the
    current folder); ``hashes``: a lockfile's (``sync``)."""
    got = fetch_archive(spec, config=config, hashes=hashes)
    from .archives import DEFAULT_LIMITS, kept_limit_bytes, read_archive

    contents = read_archive(got.data, got.artifact.filename,
                            limits=DEFAULT_LIMITS._replace(max_kept_bytes=kept_limit_bytes()))
    return got, contents


def package_snapshot(spec: PackageSpec, key: str, got: Downloaded, contents: Any,
                     stack: ExitStack, max_bytes: int) -> tuple[Scan, Source, list[str]]:
    """What the store builds a package's cache from: the scan of its parts, its source
    (identity and record) and the summary's lines about it; a repository clone it reads
    stays open in ``stack``."""
    scan, details, about = _package_scan(spec, got, contents, stack, max_bytes)
    identity = Source(spec.ecosystem, details["index"], spec.version, spec.ecosystem,
                      spec.name, key, FOLDER, None, details)
    return scan, identity, about


def _package_scan(spec: PackageSpec, got: Downloaded, contents: Any, stack: ExitStack,
                  max_bytes: int) -> tuple[Scan, dict[str, Any], list[str]]:
    """The scan of a package's parts, its source record's details and the summary's
    lines."""
    from .package_fetch import shown

    files: dict[str, bytes] = contents.files
    artifact = got.artifact
    selection, docs = archive_docs(files)
    check = (f"{artifact.digest.algorithm} verified" if artifact.digest
             else "no published hash: a local file index")
    about = [f"package: {spec}: {artifact.filename} from {shown(artifact.index)} ({check})",
             f"index: {got.via}"]
    about += [f"warning: {w}" for w in artifact.warnings]
    from_archive = dict(docs)
    if selection.folders:
        left_out, selection.left_out = selection.left_out, 0  # (its hint names --all)
        about.append(f"{selection.line()}: from the archive"
                     + (f"; {left_out} doc file(s) elsewhere in it left out" if left_out else ""))
    else:
        shown_files = ", ".join(sorted(docs)) or "none"
        about.append(f"docs: no docs folder in the archive; its README-like files: "
                     f"{shown_files}")
    about += [line for line in [selection.copies_line()] if line]
    if spec.ecosystem == PYPI:
        pages = api_pages(list(files), set(files))
        from_archive.update(pages)
        if pages:
            plural = "s" if len(pages) > 1 else ""
            about.append(f"api: {len(pages)} page{plural} under {API_FOLDER}/ (::: per public "
                         f"module: {_few(sorted(pages))}), from the archive's docstrings")
    details: dict[str, Any] = {**artifact.record(got.sha256), "commit": None,
                                "docs_from": "archive", "docs_note": None}
    scan = Scan(commit_hash=got.sha256)
    scan.skipped = [(s.name, s.reason) for s in contents.skipped]
    repo_files: list[SourceFile] = []
    if not selection.folders:
        part = repository_part(spec, files, stack, max_bytes)
        repo_files = _take_repository(part, from_archive, scan, details, about)
    if not from_archive and not repo_files:
        raise nothing_to_index(f"{spec} ({artifact.filename})", scan)
    kept = [f for p, d in from_archive.items() if (f := _file(p, d, max_bytes, scan))]
    scan.files = _within_docs_cap(sorted([*kept, *repo_files], key=lambda f: f.path), about)
    scan.source_reader = files.get
    scan.skipped.sort()
    scan.expand = _package_expansion(files, max_bytes, selection.folders)
    return scan, details, about


def _take_repository(part: RepoPart, from_archive: dict[str, bytes], scan: Scan,
                     details: dict[str, Any], about: list[str]) -> list[SourceFile]:
    """The repository's files to index (the archive's copy of a shared path is the
    published one), its record and summary line; with no docs from it, the record's
    ``docs_note`` says why and what the cache holds instead (``identity.docs_note``)."""
    if part.record is not None:
        details["repository"] = part.record
        details["commit"] = part.record.get("commit")
    line = part.line
    repo_files: list[SourceFile] = []
    if part.scan is not None:
        repo_files = [f for f in part.scan.files if f.path not in from_archive]
        scan.skipped += part.scan.skipped
        scan.kinds.update(part.scan.kinds)
        line += f", {len(repo_files)} file{'s' if len(repo_files) != 1 else ''}"
    about += [line, *part.notes]
    if part.gap is None:
        details["docs_from"] = "repository"
    else:
        details["docs_from"] = None
        details["docs_note"] = f"{part.gap}: {_holds(list(from_archive))} only"
    return repo_files


def _holds(paths: list[str]) -> str:
    """What a cache without a docs folder holds: ``README and API pages``, ``README``
    (npm, or no public module), ``API pages`` (no README-like file)."""
    api = any(p.startswith(API_FOLDER + "/") for p in paths)
    readme = any(not p.startswith(API_FOLDER + "/") for p in paths)
    return " and ".join([w for w, there in (("README", readme), ("API pages", api)) if there])


def _package_expansion(files: dict[str, bytes], max_bytes: int,
                       folders: tuple[str, ...]) -> ExpandConfig:
    """How the archive's pages expand: its docs tool's forms (read as data), and the
    ``_api`` pages' ``:::`` blocks (mkdocstrings' form) whatever the docs tool is; modules
    and included files are read from the archive itself."""
    from .expansion import MemoryReader, configure

    config = configure(MemoryReader(files, max_bytes), "", [f for f in folders if f])
    return config._replace(markdown_autodoc=True)


DOCS_LIMIT_ENV = "DOC_INDEX_PACKAGE_DOCS_MB"
DEFAULT_DOCS_BYTES = 64 << 20


def docs_limit_bytes() -> int:
    """The documentation a package's cache holds at most, before its pages expand:
    ``DOC_INDEX_PACKAGE_DOCS_MB`` MiB (a whole number from 1), default 64 MiB, 11 times
    the largest real package docs measured (django 5.1.4: 609 files, 5.9 MB)."""
    text = os.environ.get(DOCS_LIMIT_ENV, "")
    if not (text.isascii() and text.isdigit() and 0 < len(text) < 8 and int(text) > 0):
        return DEFAULT_DOCS_BYTES
    return int(text) << 20


def _within_docs_cap(files: list[SourceFile], about: list[str]) -> list[SourceFile]:
    """``files`` (sorted by path) up to the docs cap, in path order; the files past it
    are left out and said in one line of ``about`` (the same bytes, the same files)."""
    cap = docs_limit_bytes()
    total = 0
    for at, entry in enumerate(files):
        total += entry.size
        if total > cap:
            left = files[at:]
            size = sum(f.size for f in left)
            about.append(f"docs: {len(left)} file{'s' if len(left) != 1 else ''} "
                         f"({size} bytes) from {left[0].path} on left out: a package's "
                         f"cache holds at most {cap >> 20} MiB of docs ({DOCS_LIMIT_ENV})")
            return files[:at]
    return files


def _file(path: str, data: bytes, max_bytes: int, scan: Scan) -> SourceFile | None:
    if len(data) > max_bytes:
        scan.skipped.append((path, f"over the size cap ({len(data)} > {max_bytes} bytes)"))
        return None
    return SourceFile(path, hashlib.sha256(data).hexdigest(), len(data), lambda: data)


def _few(paths: list[str]) -> str:
    names = [p[len(API_FOLDER) + 1:].removesuffix(".md") for p in paths]
    return ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")


__all__ = ["API_FOLDER", "PackageSpec", "api_modules", "api_pages", "archive_docs",
           "fetch_archive", "import_packages", "is_package_spec", "package_key",
           "package_snapshot", "parse_spec", "read_package"]
