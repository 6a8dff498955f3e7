"""The parse cache: one file's parsed sections, kept by content, for every cache of a root.

Parsing is most of a full build, and a file's sections depend only on its path, its
bytes and the indexer (ids are global: the id pass still runs over all files). So the
parse workers keep what they parse in ``<root>/.doc-index-tmp/.doc-index-tmp/parsed/``,
one entry per file, named by the sha256 of what the parse depends on:

- the file's repository-relative path and its bytes as read;
- the indexer: the versions its output is built from (``indexer.versions``, this
  module's ``FORMAT``), the bytes of every module of the ``indexer`` package, the parser
  libraries' installed files (markdown-it-py, docutils, PyStemmer: every file's path,
  size and modification time, read without importing them), and the Python running it
  (its version and its Unicode database: what a word character and a line break are).

Building another ref, a fork, or the same docs under a new name then parses only what
differs. ``.doc-index-tmp`` is the one name no cache can have (``cache_names``), so the
folder can never be a cache's own area; it lives under the root and is never shared
across roots.

A worker writes the entries of a batch of files as one *pack* (``pack``), and each entry's
name is a hard link to its pack: a new file costs about 0.7 ms on the benchmark machine,
a link 10 us, so one file per entry made a first build 15-25 % slower. Packs are written
under a temporary name, linked, then the temporary name removed (never a partial entry),
without fsync: a torn one fails its hash. A pack's rows are an open-addressing hash table
keyed by the entry names (random hex): a hit reads one run of rows, whatever the pack's
size (a sorted or unordered table was read whole on every hit, quadratic in a pack's
entries).

Entries are untrusted when read: opened below the checked folder without following a
symlink, a regular file owned by the root's owner or the user building (a shared root's
folder may be writable by others), laid out as a pack with the entry inside it and at most
``MAX_ENTRY_BYTES``, starting with ``MAGIC`` and the sha256 of the rest, holding its own
name (an entry copied under another name is foreign), sections of strictly checked types
whose byte ranges lie in the file and whose ``version`` is the sha256 of those bytes.
Anything else is ignored (and the file parsed again), never repaired.

Size: at most ``DOC_INDEX_PARSE_CACHE_MB`` MiB (default ``DEFAULT_MB``; 0 turns the
cache off). A build that parsed trims the folder afterwards: the least recently used packs
first (a hit refreshes its pack's modification time, once per pack and process), down to
three quarters of the cap.

Each build has its own ``ParseCache`` in each process that parses for it (``for_build``,
``release``): two builds in one process never share or close each other's.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..foundation.cache_names import STAGING_DIR
from ..indexer.model import PageStats, ParsedFile, ParsedSection
from .commit import (
    KeyArea,
    open_checked,
    remove_below,
    root_of_staging,
    staging_root,
)

FORMAT = 1  # this module's entry layout
MAGIC = b"doc-index parsed sections 1\n"
EXPANDED_MAGIC = b"doc-index parsed expanded page 1\n"
DEPS_MAGIC = b"doc-index page dependencies 1\n"
DEFAULT_MB = 512
MAX_ENTRY_BYTES = 64 * 1024 * 1024
PACK_MAGIC = b"doc-index parsed pack 2\n"
FLUSH_BYTES = 16 * 1024 * 1024  # a worker holds at most this much before writing a pack
_ROW = 64 + 1 + 12 + 1 + 12 + 1  # "<name> <offset> <length>\n"
_FREE_ROW = b" " * (_ROW - 1) + b"\n"  # a slot of the row table that holds no entry
_PROBE_ROWS = 8  # rows read at once while looking for a name
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
        import unicodedata

        from ..indexer import versions

        digest = hashlib.sha256(repr((FORMAT, versions.ANALYZER_VERSION,
                                      versions.TOKENIZER_VERSION, versions.PART_TOKENS,
                                      versions.MAX_SECTIONS_PER_FILE, sys.version,
                                      sys.implementation.cache_tag,
                                      unicodedata.unidata_version)).encode())
        package = Path(versions.__file__).parent
        for module in sorted(p.name for p in package.iterdir() if p.suffix == ".py"):
            digest.update(module.encode() + b"\0" + (package / module).read_bytes())
        for name in _LIBRARIES:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
            digest.update(repr((name, origin)).encode())
            if spec is not None and origin:
                for path, info in _installed_files(origin, spec.submodule_search_locations):
                    digest.update(repr((path, info.st_size, info.st_mtime_ns)).encode())
        _salt = digest.digest()
    return _salt


def _installed_files(origin: str, package_dirs: Any) -> list[tuple[str, os.stat_result]]:
    """A library's installed files with their stat: every file below its package folder
    (a change to any module, not only to ``__init__``, is a new indexer), or its one
    module file."""
    if not package_dirs:
        return [(origin, os.stat(origin))]
    found = []
    for top in package_dirs:
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(folder, name)
                found.append((path, os.stat(path)))
    return found


def entry_name(path: str, data: bytes) -> str:
    digest = hashlib.sha256(indexer_salt())
    digest.update(path.encode("utf-8") + b"\0")
    digest.update(data)
    return digest.hexdigest()


def dependency_list_name(path: str, data: bytes) -> str:
    """The name of the entry listing the files an expanded page last depended on."""
    digest = hashlib.sha256(indexer_salt() + b"dependencies\0")
    digest.update(path.encode("utf-8") + b"\0")
    digest.update(data)
    return digest.hexdigest()


def expanded_entry_name(path: str, data: bytes,
                        dependencies: tuple[tuple[str, str | None], ...]) -> str:
    """The name of an expanded page's entry: its path, bytes, and every file it read (or
    looked for) with that file's hash (None: not there)."""
    digest = hashlib.sha256(indexer_salt() + b"expanded\0")
    digest.update(path.encode("utf-8") + b"\0")
    digest.update(hashlib.sha256(data).digest())
    digest.update(json.dumps(dependencies, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()


def _with_digest(magic: bytes, body: bytes) -> bytes:
    return magic + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def _checked_body(blob: bytes, magic: bytes) -> Any:
    """The JSON an entry ``magic`` + sha256 + body holds, None when it does not check."""
    head = len(magic) + 65
    if not blob.startswith(magic) or len(blob) < head or blob[head - 1:head] != b"\n":
        return None
    body = blob[head:]
    if hashlib.sha256(body).hexdigest().encode() != blob[len(magic):head - 1]:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


class ParseCache:
    """The parse cache of one root, opened once per process (``for_root``)."""

    def __init__(self, root: Path) -> None:
        self.fd = -1
        self._pending: list[tuple[str, bytes]] = []
        self._pending_bytes = 0
        self._writers: frozenset[int] = frozenset()
        self._touched: set[int] = set()  # the packs (inodes) whose time a hit refreshed
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
        return self._read_named(name, lambda blob: decode(blob, name, path, raw))

    def _read_named(self, name: str, take: Callable[[bytes], Any] = bytes) -> Any:
        """``take`` of the bytes of entry ``name`` if there is one written by a trusted
        owner, else None; an entry ``take`` keeps is marked used (``trim`` drops the least
        recently used first)."""
        try:
            fd = os.open(name, _READ, dir_fd=self.fd)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            blob = read_entry(fd, name) if info.st_uid in self._writers else None
            taken = take(blob) if blob is not None else None
            if taken is not None and info.st_ino not in self._touched:
                self._touched.add(info.st_ino)
                os.utime(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        return taken

    def get_expanded(self, path: str, data: bytes,
                     state: Callable[[str], str | None]) -> ParsedFile | None:
        """The entry of page ``path`` (bytes ``data``) expanded with its dependencies as
        they are now (``state``: a dependency's hash, None when absent), if there is one.
        Two steps: the page's last dependency list (by page and bytes), then the entry
        named by the page, its bytes and those dependencies with their hashes."""
        if self.fd < 0:
            return None
        listed = self._read_named(dependency_list_name(path, data))
        paths = _checked_body(listed, DEPS_MAGIC) if listed is not None else None
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            return None
        dependencies = tuple((p, state(p)) for p in paths)
        name = expanded_entry_name(path, data, dependencies)
        blob = self._read_named(name)
        return decode_expanded(blob, name, path, dependencies) if blob is not None else None

    def put_expanded(self, path: str, data: bytes, parsed: ParsedFile) -> None:
        """Keep an expanded page: its dependency list and its entry (``get_expanded``)."""
        if self.fd < 0:
            return
        paths = [p for p, _ in parsed.dependencies]
        name = expanded_entry_name(path, data, parsed.dependencies)
        try:
            blob = encode(name, parsed, expanded=True)
            listed = _with_digest(DEPS_MAGIC, json.dumps(paths, ensure_ascii=False).encode())
        except MemoryError:
            return
        if blob is None:
            return
        for item in ((dependency_list_name(path, data), listed), (name, blob)):
            self._pending.append(item)
            self._pending_bytes += len(item[1])
        if self._pending_bytes > FLUSH_BYTES:
            self.flush()

    def put(self, path: str, data: bytes, parsed: ParsedFile) -> None:
        """Keep ``parsed`` (its ``raw`` set) as the entry for ``path`` with bytes ``data``:
        held until ``flush`` writes the pack."""
        if self.fd < 0:
            return
        name = entry_name(path, data)
        try:
            blob = encode(name, parsed)
        except MemoryError:  # a parse worker at its limit: the file is parsed, not kept
            return
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
        except (OSError, MemoryError):  # (a full disk, a parse worker at its limit)
            pass
        try:
            os.unlink(temporary, dir_fd=self.fd)
        except OSError:
            pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_open: dict[str, ParseCache] = {}  # by the staging directory of the build using it


def for_build(staging: str) -> ParseCache:
    """The parse cache of the root a build (its staging directory) belongs to, opened once
    per build in each process that parses for it; ``release`` closes it."""
    cache = _open.get(staging)
    if cache is None:
        new = ParseCache(root_of_staging(staging))
        cache = _open.setdefault(staging, new)  # (another thread may have opened one)
        if cache is not new:
            new.close()
    return cache


def release(staging: str) -> None:
    """Write what a build's parse cache holds and close it (in this process)."""
    cache = _open.pop(staging, None)
    if cache is not None:
        cache.flush()
        cache.close()


def _open_folder(root: Path, *, create: bool) -> tuple[int, int]:
    """The entries' folder (made with ``create``), each level checked (``commit``), and
    the root's owner."""
    with KeyArea(root, STAGING_DIR, create=create) as area:
        return open_checked(area.fd, FOLDER, area.owner, folder(root), create), area.owner


def _slots(count: int) -> int:
    """The size of a pack's row table for ``count`` entries: a power of two, at least
    twice the entries (so a probe meets a free slot after two rows on average)."""
    return 1 << max(3, (2 * count - 1).bit_length())


def _slot(name: bytes, slots: int) -> int:
    return int(name[:15], 16) & (slots - 1)


def pack(entries: list[tuple[str, bytes]]) -> bytes:
    """A pack: ``PACK_MAGIC``, the entry count, a row table of ``_slots(count)`` fixed-width
    rows (an entry's name, offset and length in the pack, in the first free slot from the
    one its name picks, ``_FREE_ROW`` elsewhere), then the entries."""
    slots = _slots(len(entries))
    table = [_FREE_ROW] * slots
    offset = len(PACK_MAGIC) + 9 + _ROW * slots
    for name, blob in entries:
        key = name.encode()
        at = _slot(key, slots)
        while table[at] is not _FREE_ROW:
            at = (at + 1) & (slots - 1)
        table[at] = b"%s %012d %012d\n" % (key, offset, len(blob))
        offset += len(blob)
    return b"".join([PACK_MAGIC, b"%08d\n" % len(entries), *table, *(b for _, b in entries)])


def read_entry(fd: int, name: str) -> bytes | None:
    """The bytes of entry ``name`` in the pack open as ``fd`` if the pack is a regular file
    laid out as ``pack`` writes it, with that entry within it; None otherwise. Reads the
    rows from the name's slot to the first free one: a few rows, not the table."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None
    top = len(PACK_MAGIC) + 9
    head = os.pread(fd, top, 0)
    count = head[len(PACK_MAGIC):top - 1]
    if (len(head) != top or not head.startswith(PACK_MAGIC) or not count.isdigit()
            or head[-1:] != b"\n"):
        return None
    slots = _slots(int(count))
    # A pack holds under FLUSH_BYTES + MAX_ENTRY_BYTES of entries, each over 200 bytes: its
    # row table is under 80 MB. (A sparse file of any size could claim one of 18 GB.)
    key = name.encode()
    if top + _ROW * slots > info.st_size or _ROW * slots > 2 * MAX_ENTRY_BYTES or len(key) != 64:
        return None
    row = _find_row(fd, key, top, slots)
    if row is None:
        return None
    offset, length = row[65:77], row[78:90]
    if not (offset.isdigit() and length.isdigit() and row[-1:] == b"\n"):
        return None
    offset_n, length_n = int(offset), int(length)
    if length_n > MAX_ENTRY_BYTES or offset_n + length_n > info.st_size:
        return None
    blob = os.pread(fd, length_n, offset_n)
    return blob if len(blob) == length_n else None


def _find_row(fd: int, key: bytes, top: int, slots: int) -> bytes | None:
    """The row of ``key`` in the row table at ``top`` (``slots`` rows), probing from its
    slot; None at the first free row, or after every row (a table with no free row)."""
    at = _slot(key, slots)
    seen = 0
    while seen < slots:
        n = min(_PROBE_ROWS, slots - at, slots - seen)
        rows = os.pread(fd, _ROW * n, top + _ROW * at)
        if len(rows) != _ROW * n:
            return None
        for i in range(0, len(rows), _ROW):
            row = rows[i:i + _ROW]
            if row.startswith(key) and row[64:65] == b" ":
                return row
            if row == _FREE_ROW:
                return None
        seen += n
        at = (at + n) & (slots - 1)
    return None


def encode(name: str, parsed: ParsedFile, *, expanded: bool = False) -> bytes | None:
    """An entry's bytes: ``MAGIC``, the sha256 of the body, the body (JSON). An expanded
    page's entry (``EXPANDED_MAGIC``) also holds its raw text (the expansion, which its
    source bytes do not give), its sections' origins and what the expansion did."""
    if len(parsed.raw) > MAX_ENTRY_BYTES or any(s.file != parsed.path for s in parsed.sections):
        return None
    fields: dict[str, Any] = {
        "name": name, "path": parsed.path, "note": parsed.note,
        "raw_sha256": hashlib.sha256(parsed.raw).hexdigest(), "raw_bytes": len(parsed.raw),
        "sections": [[s.kind, s.title, s.depth, s.byte_offset, s.byte_length, s.line_count,
                      s.version, s.tokens, s.summary, s.keywords, s.dedup_hash,
                      s.parent_index, s.terms, s.total_words, list(s.lens)]
                     for s in parsed.sections],
    }
    if expanded:
        stats = parsed.expansion or PageStats()
        fields.update({
            "raw": parsed.raw.decode("utf-8"),
            "origins": [[list(o) for o in s.origins] for s in parsed.sections],
            "dependencies": [list(d) for d in parsed.dependencies],
            "expansion": [stats.documented, stats.objects, list(stats.unresolved),
                          stats.includes, list(stats.notes)],
        })
    body = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    blob = _with_digest(EXPANDED_MAGIC if expanded else MAGIC, body)
    return blob if len(blob) <= MAX_ENTRY_BYTES else None


def decode_expanded(blob: bytes, name: str, path: str,
                    dependencies: tuple[tuple[str, str | None], ...]) -> ParsedFile | None:
    """The ParsedFile an expanded page's entry holds, or None unless every check passes
    (those of ``decode``, on the raw text it holds)."""
    fields = _checked_body(blob, EXPANDED_MAGIC)
    try:
        if not isinstance(fields, dict) or not isinstance(fields.get("raw"), str):
            return None
        raw = fields["raw"].encode("utf-8")
        parsed = _decoded(fields, name, path, raw)
        origins, listed, stats = fields["origins"], fields["dependencies"], fields["expansion"]
        if (parsed is None or type(origins) is not list
                or len(origins) != len(parsed.sections)
                or [tuple(d) for d in listed] != [tuple(d) for d in dependencies]):
            return None
        sections = [s._replace(origins=tuple(_origin(o) for o in found))
                    for s, found in zip(parsed.sections, origins)]
        documented, objects, unresolved, includes, notes = stats
        page = PageStats(_count(documented), _count(objects), _strings(unresolved),
                         _count(includes), _strings(notes))
    except (KeyError, ValueError, TypeError):
        return None
    return parsed._replace(sections=sections, dependencies=dependencies, expansion=page)


def _origin(item: Any) -> tuple[str, int, int]:
    file, first, last = item
    if type(file) is not str or type(first) is not int or type(last) is not int:
        raise ValueError("bad origin")
    return file, first, last


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError("bad count")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    if type(value) is not list or not all(type(v) is str for v in value):
        raise ValueError("bad strings")
    return tuple(value)


def decode(blob: bytes, name: str, path: str, raw: bytes) -> ParsedFile | None:
    """The ParsedFile an entry holds (``raw`` in it), or None unless every check passes."""
    fields = _checked_body(blob, MAGIC)
    if fields is None:
        return None
    return _decoded(fields, name, path, raw)


def _decoded(fields: Any, name: str, path: str, raw: bytes) -> ParsedFile | None:
    try:
        if (not isinstance(fields, dict) or fields.get("name") != name
                or fields.get("path") != path or fields.get("raw_bytes") != len(raw)
                or fields.get("raw_sha256") != hashlib.sha256(raw).hexdigest()
                or not isinstance(fields.get("note"), str)
                or not isinstance(fields.get("sections"), list)):
            return None
        sections = [_section(path, raw, n, item) for n, item in enumerate(fields["sections"])]
    except (ValueError, TypeError):
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
