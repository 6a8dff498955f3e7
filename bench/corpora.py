"""The corpora the speed benchmarks build: the two real doc trees and scaled copies.

Every corpus is copied fresh under ``<work>/corpora/`` at the start of a run (the
one-file-changed builds edit a file, and the shared corpora are read-only). The scaled
corpora hold ``n`` copies of fastapi-docs in subfolders ``copy-01/ ...``: 20x is about
30 MB of Markdown.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPORA = REPO.parent / "shared" / "corpora"
WORK = REPO / "bench" / "work"
DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".rst")


@dataclass(frozen=True)
class Corpus:
    """One source tree to build: where it is, its cache key and what to query it with."""

    name: str  # also the directory name; the cache key (build --name) is local-<name>
    source: Path
    query_corpus: str  # which corpus of queries-dev.jsonl the questions come from
    copies: int  # 0 for the corpus itself, n for n copies in subfolders
    files: int
    bytes: int
    change_file: str  # the file the one-file-changed build edits (relative)

    @property
    def key(self) -> str:
        return f"local-{self.name}"

    @property
    def megabytes(self) -> float:
        return self.bytes / 1e6


def _doc_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in DOC_SUFFIXES)


def _change_target(root: Path) -> str:
    """A typical page to edit: the doc file of median size (ties by path)."""
    files = sorted(_doc_files(root), key=lambda p: (p.stat().st_size, p.as_posix()))
    return files[len(files) // 2].relative_to(root).as_posix()


def _describe(name: str, source: Path, query_corpus: str, copies: int) -> Corpus:
    files = _doc_files(source)
    return Corpus(name, source, query_corpus, copies, len(files),
                  sum(p.stat().st_size for p in files), _change_target(source))


def prepare(work: Path, scales: tuple[int, ...], real: tuple[str, ...] = ("fastapi-docs",
            "flask-docs"), shared: Path = SHARED_CORPORA) -> list[Corpus]:
    """Copy the corpora under ``work/corpora``; the real ones first, then the scaled ones."""
    base = work / "corpora"
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    out: list[Corpus] = []
    for name in real:
        target = base / name
        shutil.copytree(shared / name, target)
        out.append(_describe(name, target, name, 0))
    for n in scales:
        target = base / f"fastapi-x{n}"
        for i in range(1, n + 1):
            shutil.copytree(shared / "fastapi-docs", target / f"copy-{i:02d}")
        out.append(_describe(target.name, target, "fastapi-docs", n))
    return out


def queries_for(corpus: str, queries_file: Path) -> list[str]:
    """The ``query`` fields of ``queries_file`` for one corpus, in file order."""
    out = []
    for line in queries_file.read_text("utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            if item["corpus"] == corpus:
                out.append(item["query"])
    if not out:
        raise ValueError(f"no queries for {corpus} in {queries_file}")
    return out
