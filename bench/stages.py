"""Where a full build's CPU goes, stage by stage, and the floor of what the parsers cost.

In this one process, over every doc file of each corpus, the build's own functions are
called in the build's order, each stage timed with ``time.process_time``:

- walk: ``scan_directory`` (the source walk; hashes every file);
- read: each file's bytes, normalized (``normalize_source``) and decoded;
- parse: ``find_blocks`` and ``cap_blocks``, the Markdown or RST parse into blocks;
- sections: ``analyze_blocks`` (lines, hashes, tokens, summary, keywords, search terms);
- ids: the id pass and the manifest entries with their postings (``_fresh_file``);
- sidecar: the search index written (``IndexWriter.write``);
- write: the raw files hashed and written, and the manifest.

A real build runs read to sections in worker processes; here they add up in one. The floor,
in the same run: a bare parse of the same files, docutils' own (``Parser().parse``, every
directive and inline markup; messages silenced) for RST and markdown-it-py's
``MarkdownIt("commonmark").parse`` for Markdown, and ``python -c pass`` as a whole process.
One warm-up round (imports, parser set-up) is not counted; each figure is the median of
the rounds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .corpora import SHARED_CORPORA
from .stats import Summary

STAGES = ("walk", "read", "parse", "sections", "ids", "sidecar", "write")
CORPORA = ("flask-docs", "sqlalchemy-docs", "fastapi-docs", "httpx-docs", "click-docs")


def _one_round(source: Path, target: Path) -> dict[str, float]:
    """CPU seconds of each stage of a full build of ``source`` into ``target``."""
    import hashlib

    from doc_index.foundation.cache_names import MANIFEST_NAME, SEARCH_INDEX_NAME
    from doc_index.indexer.document import (
        NotIndexable,
        analyze_blocks,
        cap_blocks,
        find_blocks,
        normalize_source,
    )
    from doc_index.indexer.ids import IdAssigner
    from doc_index.indexer.model import ParsedFile
    from doc_index.indexer.versions import ANALYZER_VERSION, MAX_SECTIONS_PER_FILE
    from doc_index.sources.walk import scan_directory
    from doc_index.store.index_store import BUILD_CONFIG, CURRENT_INDEX_VERSION, _fresh_file
    from doc_index.store.manifest import (
        CacheVersion,
        SectionSpool,
        manifest_header,
        utc_timestamp,
    )
    from doc_index.store.parallel import write_raw
    from doc_index.store.search_index import IndexWriter

    clock = time.process_time
    spent = dict.fromkeys(STAGES, 0.0)
    start = clock()
    scan = scan_directory(source)
    spent["walk"] = clock() - start
    parsed: list[ParsedFile] = []
    for source_file in scan.files:
        t0 = clock()
        try:
            raw = normalize_source(source_file.read())
        except NotIndexable:
            continue
        text = raw.decode("utf-8")
        t1 = clock()
        blocks, note = cap_blocks(find_blocks(source_file.path, text, raw,
                                              MAX_SECTIONS_PER_FILE), raw, MAX_SECTIONS_PER_FILE)
        t2 = clock()
        sections = analyze_blocks(source_file.path, raw, blocks)
        t3 = clock()
        spent["read"] += t1 - t0
        spent["parse"] += t2 - t1
        spent["sections"] += t3 - t2
        parsed.append(ParsedFile(path=source_file.path, raw=raw, sections=sections, note=note))
    start = clock()
    digests = []
    for result in parsed:
        write_raw(target, result.path, result.raw)
        digests.append(hashlib.sha256(result.raw).hexdigest())
    spent["write"] = clock() - start
    start = clock()
    ids, writer, version = IdAssigner(), IndexWriter(), CacheVersion(BUILD_CONFIG)
    spool = SectionSpool(target / ".sections.spool")
    tokens = 0
    for result, raw_digest in zip(parsed, digests):
        writer.add_file(raw_digest, len(result.sections))
        for entry in _fresh_file(result, ids, writer):
            version.add(entry["id"], entry["version"])
            tokens += entry["tokens"]
            spool.add(entry)
    spent["ids"] = clock() - start
    start = clock()
    header = manifest_header(
        cache_version=version.value(), document_count=spool.count,
        index_version=CURRENT_INDEX_VERSION, owner="local", name=source.name,
        indexed_at=utc_timestamp(), commit_hash=scan.commit_hash,
        file_hashes={f.path: f.digest for f in scan.files}, doc_files=[r.path for r in parsed])
    digest = spool.write_manifest(target / MANIFEST_NAME, header)
    spent["write"] += clock() - start
    start = clock()
    writer.write(target / SEARCH_INDEX_NAME, header["cache_version"], ANALYZER_VERSION,
                 BUILD_CONFIG, digest, tokens)
    spent["sidecar"] = clock() - start
    return spent


def _bare_parse(source: Path) -> dict[str, float]:
    """CPU seconds of docutils' and markdown-it-py's own parse of the corpus' files."""
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document
    from markdown_it import MarkdownIt

    settings = get_default_settings(Parser)
    settings.report_level = settings.halt_level = 5  # parse on, as doc-index does
    settings.warning_stream = False
    settings.file_insertion_enabled = settings.raw_enabled = False
    settings.syntax_highlight = "none"
    rst_parser, md = Parser(), MarkdownIt("commonmark")
    out = {"docutils": 0.0, "markdown_it": 0.0}
    for path in sorted(source.rglob("*")):
        if path.suffix not in (".rst", ".md", ".markdown", ".mdx") or not path.is_file():
            continue
        text = path.read_text("utf-8", errors="replace")
        start = time.process_time()
        if path.suffix == ".rst":
            rst_parser.parse(text, new_document(str(path), settings))
            out["docutils"] += time.process_time() - start
        else:
            md.parse(text)
            out["markdown_it"] += time.process_time() - start
    return out


def _python_pass(runs: int) -> dict[str, Any]:
    walls = []
    for _ in range(runs + 1):  # the first is a warm-up
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - start)
    return Summary.of(walls[1:]).as_dict()


def run(rounds: int, shared: Path = SHARED_CORPORA) -> dict[str, Any]:
    """Per corpus: the median CPU seconds of each stage and of the bare parsers."""
    out: dict[str, Any] = {"rounds": rounds, "python_pass_s": _python_pass(5), "corpora": {}}
    for name in CORPORA:
        source = shared / name
        if not source.is_dir():
            continue
        print(f"  stages: {name}", file=sys.stderr, flush=True)
        samples: list[dict[str, float]] = []
        for n in range(rounds + 1):
            target = Path(tempfile.mkdtemp(prefix="doc-index-stages-"))
            try:
                spent = _one_round(source, target)
            finally:
                shutil.rmtree(target)
            if n:  # round 0 pays the imports and the parsers' set-up
                samples.append({**spent, **_bare_parse(source)})
        files = [p for p in source.rglob("*") if p.is_file()
                 and p.suffix in (".rst", ".md", ".markdown", ".mdx")]
        out["corpora"][name] = {
            "files": len(files), "bytes": sum(p.stat().st_size for p in files),
            "cpu_s": {key: Summary.of(s[key] for s in samples).median for key in samples[0]},
        }
    return out


def render(stages: dict[str, Any]) -> str:
    """The report's per-stage table."""
    from .report import table

    rows = []
    for name, c in stages["corpora"].items():
        cpu = c["cpu_s"]
        total = sum(cpu[s] for s in STAGES)
        bare = cpu["docutils"] + cpu["markdown_it"]
        rows.append((name, f"{c['bytes'] / 1e6:.1f}", str(c["files"]),
                     *(f"{1000 * cpu[s]:.0f}" for s in STAGES), f"{1000 * total:.0f}",
                     f"{1000 * bare:.0f}", f"{cpu['parse'] / bare:.2f}x" if bare else "n/a"))
    rounds = f"{stages['rounds']} round{'s' if stages['rounds'] > 1 else ''}"
    return "\n\n".join([
        f"**Where a full build's CPU goes** (`bench/stages.py`: the build's stage functions "
        f"called in order in one process, CPU ms, median of {rounds} after a warm-up; a real "
        f"build runs read to sections in its workers). *bare parser*: "
        f"docutils' own parse (every directive and inline markup) or markdown-it-py's "
        f"`commonmark` parse of the same files, the floor the *parse* column compares with.",
        table(("corpus", "MB", "files", *STAGES, "total", "bare parser", "parse / bare"), rows),
        f"`python -c pass` in the same run: "
        f"{1000 * stages['python_pass_s']['median']:.0f} ms wall.",
    ])
