"""Whole answers against their budget, in real BPE tokens (issue 13: "the budget bounds
what the agent receives").

Usage::

    .venv/bin/python -m bench.answer_tokens [CORPORA_DIR] [QUERIES] [--work DIR]

Every dev question is answered on its corpus at budgets 500, 2,000 and 8,000 through
``tools.resolve`` (the exact bytes the CLI prints and an MCP tool result carries: every
document with its metadata and provenance, JSON punctuation and escapes, the selection
object, the trailing newline) and the text is counted with the real cl100k_base and
o200k_base tokenizers (``bpe-openai``, a bench-only dependency). Reported per budget and
tokenizer: the largest and the mean answer as a fraction of the budget (target: never over
1.0), how many answers went over, and the documents and excerpts returned.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from .quality import DEFAULT_CORPORA, build_cache, load_queries
from .token_accuracy import TOKENIZERS, real_counts

BUDGETS = (500, 2000, 8000)


def measure(cache_dirs: dict[str, Path], questions: list[dict[str, Any]],
            budgets: tuple[int, ...] = BUDGETS) -> dict[str, Any]:
    """Per budget: per tokenizer the max, mean and count over 1.0 of answer / budget."""
    from doc_index.server import spec_texts as tools

    out: dict[str, Any] = {"questions": len(questions), "budgets": {}}
    for budget in budgets:
        texts = [tools.resolve(cache_dirs[q["corpus"]], q["query"], budget) for q in questions]
        answers = [json.loads(t) for t in texts]
        entry: dict[str, Any] = {
            "documents": sum(len(a["documents"]) for a in answers),
            "excerpts": sum(1 for a in answers for d in a["documents"]
                            if "excerpt" in d.get("source", {})),
            "empty_answers": sum(1 for a in answers if not a["documents"]),
        }
        for tokenizer in TOKENIZERS:
            fractions = [n / budget for n in real_counts(texts, tokenizer)]
            entry[tokenizer] = {
                "max": round(max(fractions), 4),
                "mean": round(statistics.fmean(fractions), 4),
                "over": sum(1 for f in fractions if f > 1.0),
            }
        out["budgets"][str(budget)] = entry
    return out


def run(corpora_dir: Path, queries: Path, work: Path | None = None,
        caches: dict[str, Path] | None = None) -> dict[str, Any]:
    """Build (or reuse, from ``caches``) the corpora the questions name and measure."""
    questions = load_queries(Path(queries))
    names = sorted({q["corpus"] for q in questions})
    known = dict(caches or {})
    with tempfile.TemporaryDirectory(prefix="doc-index-answers-") as tmp:
        root = Path(work) if work is not None else Path(tmp)
        dirs = {name: known[name] if name in known and (known[name] / "manifest.json").is_file()
                else build_cache(root, Path(corpora_dir) / name) for name in names}
        return measure(dirs, questions)


def format_table(result: dict[str, Any]) -> str:
    head = f"{'budget':>7}  {'tokenizer':<12}{'max':>7}{'mean':>7}{'over':>6}  docs  excerpts"
    lines = [head, "-" * len(head)]
    for budget, entry in result["budgets"].items():
        for tokenizer in TOKENIZERS:
            t = entry[tokenizer]
            lines.append(f"{budget:>7}  {tokenizer:<12}{t['max']:>7.3f}{t['mean']:>7.3f}"
                         f"{t['over']:>6}  {entry['documents']:>4}  {entry['excerpts']:>8}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="?", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("queries", nargs="?", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=None, help="build root (default: temp)")
    args = parser.parse_args(argv)
    queries = args.queries or args.corpora / "queries-dev.jsonl"
    result = run(args.corpora, queries, args.work)
    print(f"{queries.name}: {result['questions']} questions; whole answer / budget")
    print(format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
