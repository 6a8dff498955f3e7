"""The parse cache: one file's parsed sections, kept by content, for every cache of a root.

Parsing is most of a full build, and a file's sections depend only on its path, its
bytes and the indexer (ids are global: the id pass still runs over all files). So the
parse workers keep what they parse in ``<root>/.doc-index-tmp/.doc-index-tmp/parsed/``,
one entry per file, named by the sha256 of what the parse depends on:

- the file's repository-relative path and its bytes as read;
- the indexer: the versions its output is built from (``indexer.versions``, this
  module's ``FORMAT``), the bytes of every module of the ``indexer`` package, and the
  parser libraries' installed files (markdown-it-py, docutils, PyStemmer: path, size
  and modification time, read without importing them).

Building another ref, a fork, or the same docs under a new name then parses only what
differs. ``.doc-index-tmp`` is the one name no cache can have (``cache_names``), so the
folder can never be a cache's own area; it lives under the root and is never shared
across roots.

A worker writes the entries of a batch of files as one *pack* (``pack``), and each entry's
name is a hard link to its pack: a new file costs about 0.7 ms on the benchmark machine,
a link 10 us, so one file per entry made a first build 15-25 % slower. Packs are written
under a temporary name, linked, then the temporary name removed (never a partial entry),
without fsync: a torn one fails its hash.

Entries are untrusted when read: opened below the checked folder without following a
symlink, a regular file owned by the root's owner or the user building (a shared root's
folder may be writable by others), laid out as a pack with the entry inside it and at most
``MAX_ENTRY_BYTES``, starting with ``MAGIC`` and the sha256 of the rest, holding its own
name (an entry copied under another name is foreign), sections of strictly checked types
whose byte ranges lie in the file and whose ``version`` is the sha256 of those bytes.
Anything else is ignored (and the file parsed again), never repaired.

Size: at most ``DOC_INDEX_PARSE_CACHE_MB`` MiB (default ``DEFAULT_MB``; 0 turns the
cache off). A build that parsed trims the folder afterwards: the least recently used packs
first (a hit refreshes its pack's modification time), down to three quarters of the cap.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from ..indexer.model import ParsedFile, ParsedSection
from .commit import (
    STAGING_DIR,
    KeyArea,
    open_checked,
    remove_below,
    root_of_staging,
    staging_root,
)

FORMAT = 1  # this module's entry layout
MAGIC = b"doc-index parsed sections 1\n"
DEFAULT_MB = 512
MAX_ENTRY_BYTES = 64 * 1024 * 1024
PACK_MAGIC = b"doc-index parsed pack 1\n"
FLUSH_BYTES = 16 * 1024 * 1024  # a worker holds at most this much before writing a pack
_ROW = 64 + 1 + 12 + 1 + 12 + 1  # "<name> <offset> <length>\n"
FOLDER = "parsed"
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = frozenset({"heading", "root", "part"})
_MAX_COUNT = 1 << 31  # counts and offsets (a file is at most 1 GiB)
_LIBRARIES = ("markdown_it", "docutils", "Stemmer")


def cap_bytes() -> int:
    """The size cap from ``DOC_INDEX_PARSE_CACHE_MB`` (default ``DEFAULT_MB``); a value
    that is not a whole number >= 0 is the default."""
    text = os.environ.get("DOC_INDEX_PARSE_CACHE_MB", "")
    mb = int(text) if text.isascii() and text.isdigit() and len(text) < 8 else DEFAULT_MB
    return mb * 1024 * 1024


def folder(root: Path) -> Path:
    return staging_root(root) / STAGING_DIR / FOLDER


_salt: bytes | None = None


def indexer_salt() -> bytes:
    """The digest of what a parse's output depends on besides the file (computed once
    per process; the workers of a build inherit it)."""
    global _salt
    if _salt is None:
        import importlib.util

        from ..indexer import versions

        digest = hashlib.sha256(repr((FORMAT, versions.ANALYZER_VERSION,
                                      versions.TOKENIZER_VERSION, versions.PART_TOKENS,
                                      versions.MAX_SECTIONS_PER_FILE)).encode())
        package = Path(versions.__file__).parent
        for module in sorted(p.name for p in package.iterdir() if p.suffix == ".py"):
            digest.update(module.encode() + b"\0" + (package / module).read_bytes())
        for name in _LIBRARIES:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
            info = os.stat(origin) if origin else None
            digest.update(repr((name, origin, info and (info.st_size, info.st_mtime_ns))
                               ).encode())
        _salt = digest.digest()
    return _salt


def entry_name(path: str, data: bytes) -> str:
    digest = hashlib.sha256(indexer_salt())
    digest.update(path.encode("utf-8") + b"\0")
    digest.update(data)
    return digest.hexdigest()


class ParseCache:
    """The parse cache of one root, opened once per process (``for_root``)."""

    def __init__(self, root: Path) -> None:
        self.fd = -1
        self._pending: list[tuple[str, bytes]] = []
        self._pending_bytes = 0
        self._writers: frozenset[int] = frozenset()
        if cap_bytes() == 0:
            return
        try:
            self.fd, owner = _open_folder(root, create=True)
        except OSError:  # not ours, a symlink, or no room: build without it
            self.fd = -1
            return
        # Whose entries are taken: the root's owner's and ours. (The folder may be writable
        # by others; an entry's name and hash are no proof of who parsed it.)
        self._writers = frozenset({owner, os.geteuid()})

    def get(self, path: str, data: bytes, raw: bytes) -> ParsedFile | None:
        """The entry for ``path`` with bytes ``data`` (normalized: ``raw``), if there is a
        sound one; None otherwise."""
        if self.fd < 0:
            return None
        name = entry_name(path, data)
        try:
            fd = os.open(name, _READ, dir_fd=self.fd)
        except OSError:
            return None
        try:
            blob = read_entry(fd, name) if os.fstat(fd).st_uid in self._writers else None
        except OSError:
            return None
        finally:
            os.close(fd)
        parsed = decode(blob, name, path, raw) if blob is not None else None
        if parsed is not None:
            try:  # least recently used goes first (``trim``)
                os.utime(name, dir_fd=self.fd, follow_symlinks=False)
            except OSError:
                pass
        return parsed

    def put(self, path: str, data: bytes, parsed: ParsedFile) -> None:
        """Keep ``parsed`` (its ``raw`` set) as the entry for ``path`` with bytes ``data``:
        held until ``flush`` writes the pack."""
        if self.fd < 0:
            return
        name = entry_name(path, data)
        blob = encode(name, parsed)
        if blob is None:
            return
        self._pending.append((name, blob))
        self._pending_bytes += len(blob)
        if self._pending_bytes > FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the held entries as one pack, each named by a link to it; quietly nothing
        when that fails (a full disk is the build's business, not the cache's)."""
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        if self.fd < 0 or not pending:
            return
        temporary = f"tmp.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o644, dir_fd=self.fd)
            try:
                view = memoryview(pack(pending))
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            for name, _ in pending:
                try:
                    os.link(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
                except FileExistsError:  # a damaged one (a sound one is never written)
                    os.unlink(name, dir_fd=self.fd)
                    os.link(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError:
            pass
        try:
            os.unlink(temporary, dir_fd=self.fd)
        except OSError:
            pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_current: tuple[str, ParseCache] | None = None


def for_build(staging: str) -> ParseCache:
    """The parse cache of the root a build (its staging directory) belongs to, opened once
    per build in each process that parses for it."""
    global _current
    if _current is None or _current[0] != staging:
        if _current is not None:
            _current[1].close()
        _current = (staging, ParseCache(root_of_staging(staging)))
    return _current[1]


def _open_folder(root: Path, *, create: bool) -> tuple[int, int]:
    """The entries' folder (made with ``create``), each level checked (``commit``), and
    the root's owner."""
    with KeyArea(root, STAGING_DIR, create=create) as area:
        return open_checked(area.fd, FOLDER, area.owner, folder(root), create), area.owner


def pack(entries: list[tuple[str, bytes]]) -> bytes:
    """A pack: ``PACK_MAGIC``, the entry count, one fixed-width row per entry (its name,
    offset and length in the pack), then the entries."""
    offset = len(PACK_MAGIC) + 9 + _ROW * len(entries)
    rows = []
    for name, blob in entries:
        rows.append(b"%s %012d %012d\n" % (name.encode(), offset, len(blob)))
        offset += len(blob)
    return b"".join([PACK_MAGIC, b"%08d\n" % len(entries), *rows, *(b for _, b in entries)])


def read_entry(fd: int, name: str) -> bytes | None:
    """The bytes of entry ``name`` in the pack open as ``fd`` if the pack is a regular file
    laid out as ``pack`` writes it, with that entry within it; None otherwise."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None
    top = len(PACK_MAGIC) + 9
    head = os.pread(fd, top, 0)
    count = head[len(PACK_MAGIC):top - 1]
    # A pack holds under FLUSH_BYTES + MAX_ENTRY_BYTES of entries, each over 200 bytes: its
    # row table is under 40 MB. (A sparse file of any size could claim one of 9 GB.)
    if (len(head) != top or not head.startswith(PACK_MAGIC) or not count.isdigit()
            or head[-1:] != b"\n" or top + _ROW * int(count) > info.st_size
            or _ROW * int(count) > MAX_ENTRY_BYTES):
        return None
    rows = os.pread(fd, _ROW * int(count), top)
    at = rows.find(name.encode() + b" ")
    while at >= 0 and at % _ROW:
        at = rows.find(name.encode() + b" ", at + 1)
    if at < 0:
        return None
    row = rows[at:at + _ROW]
    offset, length = row[65:77], row[78:90]
    if not (offset.isdigit() and length.isdigit() and row[-1:] == b"\n"):
        return None
    offset_n, length_n = int(offset), int(length)
    if length_n > MAX_ENTRY_BYTES or offset_n + length_n > info.st_size:
        return None
    blob = os.pread(fd, length_n, offset_n)
    return blob if len(blob) == length_n else None


def encode(name: str, parsed: ParsedFile) -> bytes | None:
    """An entry's bytes: ``MAGIC``, the sha256 of the body, the body (JSON)."""
    if len(parsed.raw) > MAX_ENTRY_BYTES or any(s.file != parsed.path for s in parsed.sections):
        return None
    body = json.dumps({
        "name": name, "path": parsed.path, "note": parsed.note,
        "raw_sha256": hashlib.sha256(parsed.raw).hexdigest(), "raw_bytes": len(parsed.raw),
        "sections": [[s.kind, s.title, s.depth, s.byte_offset, s.byte_length, s.line_count,
                      s.version, s.tokens, s.summary, s.keywords, s.dedup_hash,
                      s.parent_index, s.terms, s.total_words, list(s.lens)]
                     for s in parsed.sections],
    }, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    blob = MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    return blob if len(blob) <= MAX_ENTRY_BYTES else None


def decode(blob: bytes, name: str, path: str, raw: bytes) -> ParsedFile | None:
    """The ParsedFile an entry holds (``raw`` in it), or None unless every check passes."""
    head = len(MAGIC) + 65
    if not blob.startswith(MAGIC) or len(blob) < head or blob[head - 1:head] != b"\n":
        return None
    body = blob[head:]
    if hashlib.sha256(body).hexdigest().encode() != blob[len(MAGIC):head - 1]:
        return None
    try:
        fields = json.loads(body)
        if (not isinstance(fields, dict) or fields.get("name") != name
                or fields.get("path") != path or fields.get("raw_bytes") != len(raw)
                or fields.get("raw_sha256") != hashlib.sha256(raw).hexdigest()
                or not isinstance(fields.get("note"), str)
                or not isinstance(fields.get("sections"), list)):
            return None
        sections = [_section(path, raw, n, item) for n, item in enumerate(fields["sections"])]
    except (ValueError, TypeError, RecursionError):  # (nested too deeply: not an entry)
        return None
    return ParsedFile(path=path, raw=raw, sections=sections, note=fields["note"])


def _section(path: str, raw: bytes, n: int, item: Any) -> ParsedSection:
    """One section of an entry, every field checked (in bulk where a file has thousands
    of values: this runs per section of every file a build takes from the cache);
    ValueError otherwise."""
    if type(item) is not list or len(item) != 15:
        raise ValueError("not a section")
    (kind, title, depth, offset, length, lines, version, tokens, summary, keywords, dedup,
     parent, terms, words, lens) = item
    if type(lens) is not list or len(lens) != 3:
        raise ValueError("bad lens")
    counts = (depth, offset, length, lines, tokens, words, *lens)
    if (kind not in _KINDS or set(map(type, counts)) != {int} or min(counts) < 0
            or max(counts) >= _MAX_COUNT or offset + length > len(raw)
            or type(title) is not str or type(summary) is not str or type(dedup) is not str
            or type(version) is not str or type(keywords) is not list
            or type(terms) is not dict
            or (parent is not None and (type(parent) is not int or not 0 <= parent < n))
            or (keywords and set(map(type, keywords)) != {str})):
        raise ValueError("bad section")
    values = terms.values()
    if values and (set(map(type, values)) != {int} or min(values) < 0
                   or max(values) >= 1 << 32):
        raise ValueError("bad terms")
    if version != "sha256:" + hashlib.sha256(raw[offset:offset + length]).hexdigest():
        raise ValueError("bytes changed")
    return ParsedSection(
        file=path, kind=kind, title=title, depth=depth, byte_offset=offset,
        byte_length=length, line_count=lines, version=version, tokens=tokens,
        summary=summary, keywords=keywords, dedup_hash=dedup, parent_index=parent,
        terms=terms, total_words=words, lens=(lens[0], lens[1], lens[2]),
    )


def trim(root: Path) -> None:
    """Remove the least recently used packs (every name of one) while the folder is over
    its cap, down to three quarters of it; anything there that is not a regular file goes
    first."""
    cap = cap_bytes()
    try:
        fd, _ = _open_folder(root, create=False)
    except OSError:
        return
    try:
        _trim(fd, cap)
    except OSError:  # a folder that cannot be listed: the next build tries again
        pass
    finally:
        os.close(fd)


def _trim(fd: int, cap: int) -> None:
    """The trim of the folder open as ``fd`` (``trim``)."""
    packs: dict[int, tuple[int, int, list[str]]] = {}  # inode: (mtime, size, names)
    with os.scandir(fd) as found:
        for entry in found:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                remove_below(fd, entry.name)
                continue
            packs.setdefault(info.st_ino, (info.st_mtime_ns, info.st_size, []))[2].append(
                entry.name)
    total = sum(size for _, size, _ in packs.values())
    if total <= cap:
        return
    for _, size, names in sorted(packs.values()):
        if total <= cap * 3 // 4:
            break
        for name in names:
            try:
                os.unlink(name, dir_fd=fd)
            except OSError:
                pass
        total -= size
