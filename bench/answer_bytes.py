"""The exact bytes of every benchmark answer, as a digest file: a refactor's safety net.

Usage::

    .venv/bin/python -m bench.answer_bytes write FILE [--corpora DIR] [--work DIR]
    .venv/bin/python -m bench.answer_bytes check FILE [--corpora DIR] [--work DIR]

Every question of the dev set (``CORPORA_DIR/queries-dev.jsonl``) and of
``bench/questions/*.jsonl`` whose corpus is present (``CORPORA_DIR``, ``bench/corpora``) is
answered by ``server.tools.resolve`` (the text the CLI prints and MCP returns) at the
budgets 500, 2,000 and 8,000. ``write`` records one line per answer, the SHA-256 of its
bytes and what was asked; ``check`` answers again and lists every line that differs (exit
1), so a change meant to keep answers byte-identical is checked on every question, not on
a score. Record on the code before the change, check after each step.

Caches are built afresh in a temporary folder; ``--work DIR`` keeps them there and later
runs update them (an incremental build: nothing is parsed when the corpora did not
change). Use a fresh ``--work`` (or none) when the change touches the indexer or the
store, since an incremental build does not rebuild what the code would now build
differently.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from . import quality

BUDGETS = (500, 2000, 8000)
HEADER = "# sha256 budget set corpus query (bench/answer_bytes.py)"


def question_sets(corpora_dir: Path) -> list[tuple[str, Path, list[str], list[str]]]:
    """(set name, corpora folder, corpora, queries) of every set whose corpora are present;
    ``queries`` and ``corpora`` are parallel lists."""
    sets = [("dev", corpora_dir, corpora_dir / "queries-dev.jsonl")]
    sets += [(name, quality.SET_CORPORA.get(name, corpora_dir), path)
             for name, path in quality.FRESH_SETS.items()]
    out = []
    for name, folder, path in sets:
        if not path.is_file():
            continue
        qs = quality.load_queries(path)
        if all((folder / q["corpus"]).is_dir() for q in qs):
            out.append((name, folder, [q["corpus"] for q in qs], [q["query"] for q in qs]))
    return out


def answers(corpora_dir: Path, work: Path) -> Iterator[str]:
    """One digest line per (question, budget), in file order."""
    from doc_index.search.warm_caches import WarmCaches
    from doc_index.server.spec_texts import resolve

    built: dict[Path, Path] = {}
    warm = WarmCaches()
    for name, folder, corpora, queries in question_sets(corpora_dir):
        for corpus, query in zip(corpora, queries):
            source = folder / corpus
            if source not in built:
                built[source] = quality.build_cache(work, source, full=False)
            for budget in BUDGETS:
                text = resolve(built[source], query, budget, warm=warm)
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                yield (f"{digest} {budget} {name} {corpus} "
                       f"{json.dumps(query, ensure_ascii=False)}")


def _run(corpora_dir: Path, work: Path | None) -> list[str]:
    if work is not None:
        work.mkdir(parents=True, exist_ok=True)
        return list(answers(corpora_dir, work))
    with tempfile.TemporaryDirectory(prefix="doc-index-answer-bytes-") as tmp:
        return list(answers(corpora_dir, Path(tmp)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("write", "check"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--corpora", type=Path, default=quality.DEFAULT_CORPORA)
    parser.add_argument("--work", type=Path, default=None, help="keep the caches here")
    args = parser.parse_args(argv)
    lines = _run(args.corpora, args.work)
    if args.mode == "write":
        args.file.write_text("\n".join([HEADER, *lines]) + "\n", "utf-8")
        print(f"{len(lines)} answers recorded in {args.file}")
        return 0
    recorded = [line for line in args.file.read_text("utf-8").splitlines()
                if not line.startswith("#")]
    changed = [(old, new) for old, new in zip(recorded, lines) if old != new]
    for old, new in changed:
        print(f"- {old}\n+ {new}")
    if len(recorded) != len(lines):
        print(f"{len(recorded)} answers recorded, {len(lines)} answered now")
        return 1
    print(f"{len(lines)} answers, {len(changed)} differ")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
