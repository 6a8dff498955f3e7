"""A package's source archive read as untrusted data: the files indexing needs, in memory.

An sdist (``.tar.gz``, ``.zip``, ...) or an npm tarball (``.tgz``) is never extracted to
disk and nothing in it runs. Every member name goes through the one path rule of git
trees (``safe_paths.path_problem``) after a leading ``./`` is dropped; links, devices,
FIFOs and sparse files are skipped and reported; a member over the size cap is skipped
and reported. The archive is refused as a whole (``ArchiveError``) when it holds more
members than the cap, when it expands past the total cap or the compression-ratio cap (a
decompression bomb stops while streaming, never inflated into memory), when the files it
keeps add up to more than the kept cap (the bytes held in memory and indexed), when one
tar header (a pax record, a GNU long name) is over its cap or a chain of them is too long,
or when it does not parse.

Decisions:
- the single top-level folder every member lies under (``name-version/`` of an sdist,
  ``package/`` of npm) is removed from the paths; without one, paths stay as they are;
- a name that appears twice: the last member wins, as tar and unzip extract, and the
  earlier one is reported (``replaced by a later member of the same name``);
- a kept file whose path is also a folder of another kept file is dropped and reported
  (a cache directory cannot hold both);
- what is kept is what indexing needs (``wanted_for_indexing``): documentation files,
  README-like files, Python sources (API reference from docstrings), the files a docs
  tool or the metadata reader opens (``conf.py``, ``mkdocs.yml``, ``PKG-INFO``,
  ``package.json``, ...) and the text files of a docs folder (include directives may
  pull them in). Files not wanted are counted, not listed.

Memory: the archive's bytes (the download cap), the kept files (each under the member
cap, all under the kept cap) and one decompression buffer. The kept cap (256 MiB,
``DOC_INDEX_ARCHIVE_KEEP_MB`` through ``kept_limit_bytes``) is 7 times what the largest
real sdists measured keep (plotly 5.24.1: 37.5 MB, all Python; sqlalchemy 2.0.36: 25.9 MB;
django 5.1.4: 23.4 MB): an 11.6 MB sdist of 950 MiB of Markdown was built for 120-170 s
in 1.24 GB before it; now it is refused after its first 256 MiB.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from typing import NamedTuple

from ..foundation.errors import ArchiveError, BadSource
from ..foundation.safe_paths import path_problem
from ..indexer.formats import is_doc_path


class ArchiveLimits(NamedTuple):
    """The caps of one archive read."""

    max_members: int = 50_000  # the largest sdists hold a few thousand files
    max_member_bytes: int = 10 << 20  # as a file of a directory source
    max_total_bytes: int = 1 << 30  # uncompressed bytes streamed through, kept or not
    max_kept_bytes: int = 256 << 20  # the files kept (in memory, then indexed), all told
    max_ratio: int = 200  # uncompressed / compressed; text tarballs measure 3-12
    ratio_floor_bytes: int = 16 << 20  # the ratio is not checked below this much output
    max_header_bytes: int = 1 << 20  # one pax header or GNU long name record
    max_header_chain: int = 16  # header records before one member (real archives: 1-2)


DEFAULT_LIMITS = ArchiveLimits()
KEPT_LIMIT_ENV = "DOC_INDEX_ARCHIVE_KEEP_MB"


def kept_limit_bytes() -> int:
    """The kept cap: ``DOC_INDEX_ARCHIVE_KEEP_MB`` MiB (a whole number from 1), else the
    default of ``ArchiveLimits``."""
    text = os.environ.get(KEPT_LIMIT_ENV, "")
    if not (text.isascii() and text.isdigit() and 0 < len(text) < 8 and int(text) > 0):
        return DEFAULT_LIMITS.max_kept_bytes
    return int(text) << 20



class SkippedMember(NamedTuple):
    """A member not kept, as named in the archive, and why."""

    name: str
    reason: str


class ArchiveContents(NamedTuple):
    """The kept files (safe relative path -> bytes, sorted by path), the members skipped
    with a reason, the top-level folder removed from the paths (None if none), how many
    members were read, how many regular files were not wanted, and the bytes the archive
    expanded to."""

    files: dict[str, bytes]
    skipped: tuple[SkippedMember, ...]
    top_folder: str | None
    members: int
    not_wanted: int
    uncompressed_bytes: int


# --- what indexing needs ---------------------------------------------------------------

DOC_FOLDERS = frozenset({"docs", "doc", "documentation", "website", "book"})
README_STEMS = frozenset({
    "readme", "changes", "changelog", "history", "news", "releases", "contributing",
    "upgrading", "migration", "security", "faq", "authors",
})
CONFIG_NAMES = frozenset({
    "PKG-INFO", "package.json", "pyproject.toml", "setup.cfg", "setup.py", "conf.py",
    "mkdocs.yml", "mkdocs.yaml", ".readthedocs.yaml", ".readthedocs.yml", "readthedocs.yml",
    "book.toml", "_toc.yml", "_config.yml", "myst.yml", "Pipfile",
})
SOURCE_SUFFIXES = (".py", ".pyi")
DOCS_TEXT_SUFFIXES = (
    ".md", ".markdown", ".mdx", ".rst", ".txt", ".inc", ".py", ".pyi", ".toml", ".yml",
    ".yaml", ".json", ".cfg", ".ini", ".sh", ".csv", ".js", ".ts", ".jsx", ".tsx",
)


def wanted_for_indexing(path: str) -> bool:
    """True for a file indexing reads (see the module text), by its safe relative path."""
    parts = path.split("/")
    name = parts[-1]
    lower = name.lower()
    if is_doc_path(path) or name in CONFIG_NAMES or lower.endswith(SOURCE_SUFFIXES):
        return True
    if len(parts) == 1 and lower.split(".", 1)[0] in README_STEMS:
        return True
    in_docs = any(part.lower() in DOC_FOLDERS for part in parts[:-1])
    return in_docs and lower.endswith(DOCS_TEXT_SUFFIXES)


# --- bounded streaming -----------------------------------------------------------------


class _Budget:
    """The uncompressed bytes an archive may expand to: the total cap, and below it the
    ratio cap once past its floor."""

    def __init__(self, compressed: int, limits: ArchiveLimits, label: str) -> None:
        ratio_cap = max(limits.ratio_floor_bytes, limits.max_ratio * max(compressed, 1))
        self.limit = min(limits.max_total_bytes, ratio_cap)
        self.used = 0
        self._label = label
        self._limits = limits

    def spend(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise ArchiveError(
                f"{self._label} expands past {self.limit} bytes (caps: "
                f"{self._limits.max_total_bytes} bytes, {self._limits.max_ratio}:1 "
                "compression): a decompression bomb? not read")


class _Counted:
    """A read-only stream that charges every byte it hands out to a ``_Budget``."""

    def __init__(self, inner: io.BufferedIOBase | io.BytesIO, budget: _Budget) -> None:
        self._inner = inner
        self._budget = budget

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = 1 << 16  # tarfile always asks for a size; never read without one
        data = self._inner.read(size)
        self._budget.spend(len(data))
        return data


def _decompressed(data: bytes, kind: str) -> io.BufferedIOBase | io.BytesIO:
    raw = io.BytesIO(data)
    if kind == "gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bz2":
        return bz2.BZ2File(raw, mode="rb")
    if kind == "xz":
        return lzma.LZMAFile(raw, mode="rb")
    return raw


_TAR_KINDS = {
    ".tar.gz": "gz", ".tgz": "gz", ".tar.bz2": "bz2", ".tbz": "bz2", ".tbz2": "bz2",
    ".tar.xz": "xz", ".txz": "xz", ".tar": "",
}


def archive_kind(filename: str) -> str | None:
    """``zip``, or the tar compression (``gz``, ``bz2``, ``xz``, ``""`` for none), from
    the file name; None for a name no reader here handles."""
    lower = filename.lower()
    if lower.endswith(".zip"):
        return "zip"
    for suffix, kind in _TAR_KINDS.items():
        if lower.endswith(suffix):
            return kind
    return None


# --- members -> files ------------------------------------------------------------------


class _Collector:
    """Gathers the members' verdicts; ``result`` strips the top folder and filters."""

    def __init__(self, keep: Callable[[str], bool], limits: ArchiveLimits, label: str) -> None:
        self.keep = keep
        self.limits = limits
        self.label = label
        self.raw: dict[str, bytes] = {}
        self.skipped: list[SkippedMember] = []
        self.firsts: set[str] = set()
        self.top_level_file = False
        self.members = 0
        self.not_wanted = 0
        self.kept_bytes = 0

    def count(self) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise ArchiveError(f"{self.label} holds more than {self.limits.max_members} "
                               "members: not read")

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append(SkippedMember(name, reason))

    def path_of(self, name: str, is_dir: bool = False) -> str | None:
        """The member's safe path (a leading ``./`` dropped), or None after reporting."""
        path = name
        while path.startswith("./"):
            path = path[2:]
        if is_dir:
            path = path.rstrip("/")
            if path in ("", "."):
                return None
        problem = path_problem(path)
        if problem is not None:
            if not is_dir:
                self.skip(name, problem)
            return None
        self.firsts.add(path.split("/", 1)[0])
        if not is_dir and "/" not in path:
            self.top_level_file = True
        return path

    def wants(self, path: str) -> bool:
        rest = path.split("/", 1)[1] if "/" in path else path
        if self.keep(path) or self.keep(rest):
            return True
        self.not_wanted += 1
        return False

    def too_big(self, name: str, size: int) -> bool:
        if size > self.limits.max_member_bytes:
            self.skip(name, f"over the {self.limits.max_member_bytes}-byte cap")
            return True
        return False

    def keep_room(self, size: int, path: str) -> None:
        """ArchiveError when keeping ``size`` more bytes (for ``path``, replacing an earlier
        member of that name) goes past the kept cap."""
        earlier = len(self.raw.get(path, b""))
        if self.kept_bytes - earlier + size > self.limits.max_kept_bytes:
            raise ArchiveError(
                f"{self.label} keeps more than {self.limits.max_kept_bytes >> 20} MiB of "
                f"documentation and source files: not read (the cap is {KEPT_LIMIT_ENV}, "
                "in MiB)")

    def add(self, path: str, data: bytes) -> None:
        self.keep_room(len(data), path)
        if path in self.raw:
            self.skip(path, "replaced by a later member of the same name")
            self.kept_bytes -= len(self.raw[path])
        self.raw[path] = data
        self.kept_bytes += len(data)

    def result(self, uncompressed: int) -> ArchiveContents:
        top = None
        if len(self.firsts) == 1 and not self.top_level_file and self.raw:
            top = next(iter(self.firsts))
        files: dict[str, bytes] = {}
        for path, data in self.raw.items():
            rel = path[len(top) + 1:] if top else path
            if self.keep(rel):
                files[rel] = data
            else:
                self.not_wanted += 1
        folders = {"/".join(parts[:i]) for parts in (rel.split("/") for rel in files)
                   for i in range(1, len(parts))}
        for rel in sorted(folders & files.keys()):
            del files[rel]
            self.skip(f"{top}/{rel}" if top else rel, "a file and a folder of the same name")
        return ArchiveContents(dict(sorted(files.items())), tuple(self.skipped), top,
                               self.members, self.not_wanted, uncompressed)


def _bounded_tarinfo(limits: ArchiveLimits, label: str) -> type[tarfile.TarInfo]:
    """A TarInfo that refuses an oversized pax record or GNU long name before tarfile
    reads it whole into memory, and a chain of header records before one member past
    ``max_header_chain`` (tarfile reads each next header by recursion: ~300 chained pax
    headers ended in a RecursionError)."""
    headers = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
               tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)
    chain = [0]  # header records being read, one inside the other

    class BoundedTarInfo(tarfile.TarInfo):
        def _proc_member(self, tarfile_):  # type: ignore[no-untyped-def]
            if self.type not in headers:
                return super()._proc_member(tarfile_)  # type: ignore[misc]  # private
            if self.size > limits.max_header_bytes:
                raise ArchiveError(f"{label} has a {self.size}-byte header record (cap "
                                   f"{limits.max_header_bytes}): not read")
            if chain[0] >= limits.max_header_chain:
                raise ArchiveError(f"{label} chains more than {limits.max_header_chain} "
                                   "header records before one member: not read")
            chain[0] += 1
            try:
                return super()._proc_member(tarfile_)  # type: ignore[misc]  # unstubbed
            finally:
                chain[0] -= 1

    return BoundedTarInfo


def _tar_member(tar: tarfile.TarFile, member: tarfile.TarInfo, found: _Collector) -> None:
    name = member.name
    if member.isdir():
        found.path_of(name, is_dir=True)
        return
    reason = None
    if member.issym():
        reason = "symbolic link (not followed)"
    elif member.islnk():
        reason = "hard link (not followed)"
    elif member.ischr() or member.isblk() or member.isfifo():
        reason = "device or FIFO"
    elif member.issparse():
        reason = "sparse file"
    elif not member.isreg():
        reason = "not a regular file"
    if reason is not None:
        found.path_of(name)  # its folder still counts for the top folder
        found.skip(name, reason)
        return
    path = found.path_of(name)
    if path is None or found.too_big(name, member.size) or not found.wants(path):
        return
    found.keep_room(member.size, path)  # before its bytes are read
    fh = tar.extractfile(member)
    data = fh.read(member.size) if fh is not None else b""
    found.add(path, data)


def _read_tar(data: bytes, kind: str, keep: Callable[[str], bool], limits: ArchiveLimits,
              label: str) -> ArchiveContents:
    budget = _Budget(len(data), limits, label)
    found = _Collector(keep, limits, label)
    stream = _Counted(_decompressed(data, kind), budget)
    try:
        # Stream mode ("r|") only reads; typeshed asks any fileobj for write/seek/tell too.
        with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8",  # type: ignore[call-overload]
                          errors="surrogateescape", tarinfo=_bounded_tarinfo(limits, label)) as tar:
            while (member := tar.next()) is not None:
                found.count()
                _tar_member(tar, member, found)
                del tar.members[:]  # a stream needs no index of past members (memory)
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError, ValueError,
            RecursionError) as exc:
        raise ArchiveError(f"{label} is not a readable archive ({exc})") from None
    return found.result(budget.used)


_ZIP_CENTRAL_ENTRY = b"PK\x01\x02"


def _zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, found: _Collector,
                budget: _Budget) -> None:
    name = info.filename
    if info.is_dir():
        found.path_of(name, is_dir=True)
        return
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    reason = None
    if kind == stat.S_IFLNK:
        reason = "symbolic link (not followed)"
    elif kind not in (0, stat.S_IFREG):
        reason = "device or FIFO" if kind != stat.S_IFDIR else "not a regular file"
    elif info.flag_bits & 0x1:
        reason = "encrypted"
    if reason is not None:
        found.path_of(name)
        found.skip(name, reason)
        return
    path = found.path_of(name)
    if path is None or found.too_big(name, info.file_size) or not found.wants(path):
        return
    found.keep_room(info.file_size, path)
    try:
        with archive.open(info) as fh:
            content = fh.read(found.limits.max_member_bytes + 1)
    except NotImplementedError:
        found.skip(name, "unsupported compression")
        return
    budget.spend(len(content))
    if not found.too_big(name, len(content)):
        found.add(path, content)


def _read_zip(data: bytes, keep: Callable[[str], bool], limits: ArchiveLimits,
              label: str) -> ArchiveContents:
    # Each central-directory entry starts with this signature: counting it bounds the
    # entries zipfile would turn into objects, before it parses any.
    if data.count(_ZIP_CENTRAL_ENTRY) > limits.max_members:
        raise ArchiveError(f"{label} holds more than {limits.max_members} members: not read")
    budget = _Budget(len(data), limits, label)
    found = _Collector(keep, limits, label)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                found.count()
                _zip_member(archive, info, found, budget)
    except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, OSError, ValueError,
            EOFError) as exc:
        raise ArchiveError(f"{label} is not a readable archive ({exc})") from None
    return found.result(budget.used)


def read_archive(data: bytes, filename: str, *,
                 keep: Callable[[str], bool] = wanted_for_indexing,
                 limits: ArchiveLimits = DEFAULT_LIMITS) -> ArchiveContents:
    """The files of an archive that ``keep`` wants, by safe relative path, and the
    members skipped with their reasons (see the module text for every rule)."""
    kind = archive_kind(filename)
    if kind is None:
        raise BadSource(f"{filename}: not an archive doc-index reads "
                           "(.tar.gz, .tgz, .tar.bz2, .tar.xz, .tar, .zip)")
    if kind == "zip":
        return _read_zip(data, keep, limits, filename)
    return _read_tar(data, kind, keep, limits, filename)


__all__ = [
    "ArchiveContents", "ArchiveError", "ArchiveLimits", "KEPT_LIMIT_ENV", "SkippedMember",
    "archive_kind", "DEFAULT_LIMITS", "kept_limit_bytes", "read_archive",
    "wanted_for_indexing",
]
