"""What an agent reads of the MCP server on every session, in tokens.

Usage: ``.venv/bin/python -m bench.tool_cost``

Prints, for the tools/list answer (compact JSON) and the instructions (meaning off, no
package caches listed), the build's estimate (``indexer.tokens.estimate_tokens``) and the
real cl100k_base and o200k_base counts (``bpe-openai``, a bench dependency): all five
tools, the three v0 tools, the two navigation tools, each tool. docs/formats.md ("The MCP
server's tools and their cost") quotes it.
"""

from __future__ import annotations

import json

from doc_index.indexer.tokens import estimate_tokens
from doc_index.server.mcp_server import instructions
from doc_index.server.mcp_tools import tool_definitions

from doc_index.meaning_status import MeaningStatus


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def main() -> None:
    import bpe_openai

    encodings = [bpe_openai.get_encoding(name) for name in ("cl100k_base", "o200k_base")]
    tools = tool_definitions("dotted")
    parts = [("tools/list, all", _compact({"tools": tools})),
             ("the three v0 tools", _compact({"tools": tools[:3]})),
             ("the two navigation tools", _compact(tools[3:])),
             *[(tool["name"], _compact(tool)) for tool in tools],
             ("instructions", instructions("dotted", None, MeaningStatus(False, "")))]
    print(f"{'what':28} {'estimate':>8} {'cl100k':>7} {'o200k':>7}")
    for what, text in parts:
        real = [len(encoding.encode(text)) for encoding in encodings]
        print(f"{what:28} {estimate_tokens(text):8} {real[0]:7} {real[1]:7}")


if __name__ == "__main__":
    main()
