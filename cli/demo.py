"""``python -m doc_index.cli.demo ROOT CACHE QUERY BUDGET``: a resolve answer, for people.

Prints what ``doc-index resolve`` returns as a short table (id, score, tokens, first
line), then the exact JSON bytes' size: the demo's view of what an agent receives.
"""

from __future__ import annotations

import json
import sys

from ..foundation.printable import printable
from ..library import DocIndex
from ..render.spec_json import answer_text


def main(argv: list[str]) -> int:
    root, name, query, budget = argv[0], argv[1], argv[2], int(argv[3])
    answer = DocIndex(root).cache(name).resolve(query, budget)
    sel = answer.selection
    print(f'query: "{printable(query)}"  cache: {printable(name)}  budget: {budget}')
    for doc in answer.documents:
        first = doc["content"].strip().splitlines()[0][:60] if doc["content"].strip() else ""
        print(f"  {doc['score']:.3f}  {doc['tokens']:>5} tok  {printable(doc['id']):<48} "
              f"{printable(first)}")
    size = len(answer_text(answer).encode())
    print(
        f"  -> {sel['documents_selected']} selected, {sel['documents_excluded_by_budget']} "
        f"did not fit, {sel['tokens_used']}/{budget} tokens, {sel['documents_considered']} "
        f"sections considered; {size} bytes of JSON"
    )
    top = answer.documents[0]["why"] if answer.documents else None
    if top:
        print(f"  why (top): {json.dumps(top)}")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
