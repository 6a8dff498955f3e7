"""Loading a native doc-index cache for resolve.

Everything is read relative to one open handle on the cache directory, so a reader sees
one generation of the cache: the store swaps whole directories (``store.commit``), and a
generation that disappears under a reader shows up as ``CacheReplaced``, never as a mix.
Section bytes are checked against their ``version`` when they are read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..foundation.cache_names import MANIFEST_NAME, SEARCH_INDEX_NAME
from ..foundation.errors import CacheInvalid, CacheMissing, CacheReplaced, ContextError
from ..foundation.strict_json import parse_json_object_streaming
from .cache_files import open_regular, read_regular, swapped
from .index_store import CURRENT_INDEX_VERSION
from .manifest import (
    MAX_MANIFEST_BYTES,
    MAX_SEARCH_INDEX_BYTES,
    check_header,
    doc_file_set,
)
from .search_index import SearchIndex
from .section_table import SectionTable, SectionTableBuilder

_CHUNK = 1 << 20  # bytes per read when counting lines


@dataclass
class NativeCache:
    """A loaded native cache: its manifest's sections (in columns, see ``section_table``)
    and its search index. ``memory_bytes`` estimates what it holds in memory."""

    path: Path
    dir_fd: int
    identity: tuple[int, ...]
    cache_version: str
    document_count: int
    sections: SectionTable
    index: SearchIndex

    @property
    def memory_bytes(self) -> int:
        return self.sections.memory_bytes + self.index.memory_bytes

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass

    def _open_raw(self, file: str) -> int:
        """A descriptor on the raw file ``file`` (the caller closes it)."""
        try:
            return open_regular(self.dir_fd, file)
        except FileNotFoundError:
            # Gone from the generation we hold: a rebuild swapped it, or the cache is damaged.
            if self.replaced():
                raise CacheReplaced from None
            raise CacheInvalid(detail="raw file missing") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise CacheInvalid(detail="raw file is a symlink") from None
            raise

    def newlines(self, i: int, start: int, end: int) -> int:
        """The newlines in bytes ``start`` to ``end`` of section ``i``'s raw file (read in
        bounded chunks; provenance counts lines with it)."""
        fd = self._open_raw(self.sections.files[i])
        try:
            if end > os.fstat(fd).st_size:
                raise CacheInvalid(detail="section beyond the end of its raw file")
            count = 0
            while start < end:
                chunk = os.pread(fd, min(_CHUNK, end - start), start)
                if not chunk:  # the file shrank under us: a rebuild, or damage
                    if self.replaced():
                        raise CacheReplaced
                    raise CacheInvalid(detail="raw file shorter than its sections")
                count += chunk.count(b"\n")
                start += len(chunk)
            return count
        finally:
            os.close(fd)

    def section_text(self, i: int) -> str:
        """The text of section ``i``, checked against its version."""
        section = self.sections[i]
        fd = self._open_raw(section["file"])
        end = section["byte_offset"] + section["byte_length"]
        try:
            # A section past the end of its file is damage: never size a read from it.
            beyond = end > os.fstat(fd).st_size
            data = b"" if beyond else os.pread(fd, section["byte_length"], section["byte_offset"])
        finally:
            os.close(fd)
        if beyond or "sha256:" + hashlib.sha256(data).hexdigest() != section["version"]:
            if self.replaced():
                raise CacheReplaced
            detail = f"section {section['id']} does not match its version"
            raise CacheInvalid(detail=detail)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise CacheInvalid(detail="raw file is not UTF-8") from None

    def replaced(self) -> bool:
        """True when the directory at ``path`` is no longer the generation we hold."""
        try:
            return _identity(self.path) != self.identity
        except OSError:
            return True


def _identity(path: Path) -> tuple[int, ...]:
    st = os.stat(path)
    man = os.stat(path / MANIFEST_NAME)
    return (st.st_dev, st.st_ino, man.st_ino, man.st_size, man.st_mtime_ns)


def _read_manifest(dir_fd: int, builder: SectionTableBuilder,
                   ) -> tuple[dict[str, Any], int | None, os.stat_result]:
    """The manifest's header (checked), its section count and its stat; the sections go
    to ``builder``."""
    data = read_regular(dir_fd, MANIFEST_NAME, max_bytes=MAX_MANIFEST_BYTES)
    man_st = os.stat(MANIFEST_NAME, dir_fd=dir_fd)
    try:
        text = data.decode("utf-8")
        del data  # not kept while the text is parsed
        # The one strict parser, as every reader, handing the sections over one by one
        # into columns: they are never all in memory as dicts.
        manifest, count = parse_json_object_streaming(text, "sections", builder.add)
        del text
    except ValueError:
        raise CacheInvalid(detail="manifest is not JSON") from None
    problem = _manifest_problem(manifest, count)
    if problem:
        raise CacheInvalid(detail=problem)
    if manifest["index_version"] != CURRENT_INDEX_VERSION:
        raise CacheInvalid(detail="index_version is not this version's")
    return manifest, count, man_st


def _read_search_index(cache_dir: Path, dir_fd: int) -> SearchIndex:
    try:
        return SearchIndex.from_bytes(
            read_regular(dir_fd, SEARCH_INDEX_NAME, max_bytes=MAX_SEARCH_INDEX_BYTES))
    except FileNotFoundError:
        if swapped(cache_dir, dir_fd):  # a rebuild is deleting this generation
            raise CacheReplaced from None
        raise CacheInvalid(detail="search index missing") from None
    except (ValueError, KeyError, TypeError):
        raise CacheInvalid(detail="search index damaged") from None


def load_native_cache(cache_dir: Path) -> NativeCache:
    """Load and check a native cache; ContextError cache_missing / cache_invalid."""
    try:
        dir_fd = os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise CacheMissing() from None
    except NotADirectoryError:
        raise CacheMissing() from None
    try:
        st = os.fstat(dir_fd)
        builder = SectionTableBuilder()
        manifest, count, man_st = _read_manifest(dir_fd, builder)
        identity = (st.st_dev, st.st_ino, man_st.st_ino, man_st.st_size, man_st.st_mtime_ns)
        index = _read_search_index(cache_dir, dir_fd)
        if index.cache_version != manifest["cache_version"] or index.count != count:
            raise CacheInvalid(detail="search index does not match the manifest")
        files = doc_file_set(manifest["doc_files"])
        if files is None:
            raise CacheInvalid(detail="bad doc_files entry")
        sections = builder.finish(files)
        if builder.problem:
            raise CacheInvalid(detail=builder.problem)
        cache = NativeCache(
            path=Path(cache_dir), dir_fd=dir_fd, identity=identity,
            cache_version=manifest["cache_version"], document_count=manifest["document_count"],
            sections=sections, index=index,
        )
    except (ContextError, CacheReplaced):
        os.close(dir_fd)
        raise
    except FileNotFoundError:
        replaced = swapped(cache_dir, dir_fd)
        os.close(dir_fd)
        if replaced:
            raise CacheReplaced from None
        raise CacheMissing() from None
    except OSError:
        os.close(dir_fd)
        raise
    if not stat.S_ISDIR(st.st_mode):
        cache.close()
        raise CacheMissing()
    return cache


def _manifest_problem(manifest: Any, sections: int | None) -> str | None:
    """``store.manifest.check_manifest`` of a manifest whose ``sections`` were streamed
    (``sections``: how many, None when it had no such array)."""
    problem = check_header(manifest)
    if problem:
        return problem
    if sections is None:
        return "manifest field 'sections' is missing or has the wrong type"
    if manifest["document_count"] != sections:
        return "document_count does not match the sections"
    return None
