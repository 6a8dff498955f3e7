"""``python -m doc_index.demo ROOT CACHE QUERY BUDGET``: a resolve answer, for people.

Prints what ``doc-index resolve`` returns as a short table (id, score, tokens, first
line), then the exact JSON bytes' size: the demo's view of what an agent receives.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .printable import printable
from .server import tools
from .server.cache_paths import resolve_cache_name


def main(argv: list[str]) -> int:
    root, name, query, budget = Path(argv[0]), argv[1], argv[2], int(argv[3])
    out = tools.resolve(resolve_cache_name(root, name), query, budget)
    result = json.loads(out)
    sel = result["selection"]
    print(f'query: "{printable(query)}"  cache: {printable(name)}  budget: {budget}')
    for doc in result["documents"]:
        first = doc["content"].strip().splitlines()[0][:60] if doc["content"].strip() else ""
        print(f"  {doc['score']:.3f}  {doc['tokens']:>5} tok  {printable(doc['id']):<48} "
              f"{printable(first)}")
    print(
        f"  -> {sel['documents_selected']} selected, {sel['documents_excluded_by_budget']} "
        f"did not fit, {sel['tokens_used']}/{budget} tokens, {sel['documents_considered']} "
        f"sections considered; {len(out.encode())} bytes of JSON"
    )
    top = result["documents"][0]["why"] if result["documents"] else None
    if top:
        print(f"  why (top): {json.dumps(top)}")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
