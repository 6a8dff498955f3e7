"""The shape of the library code: no function longer than a screen.

A function over 60 lines (``def`` line to last line, docstring and nested functions
included) does several jobs at once; split it into named steps. The library code is
everything installed as ``doc_index``: the folders below, not tests or bench.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO
from test_layers import library_folders  # pyproject's package-dir: the one list of folders

MAX_FUNCTION_LINES = 60


def library_files() -> list[Path]:
    return sorted(p for d in library_folders() for p in (REPO / d).rglob("*.py"))


def long_functions(source: str, name: str) -> list[str]:
    """``file:line name (N lines)`` of every function in ``source`` over the limit."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_the_check_sees_a_long_function_and_a_long_method() -> None:
    def body(indent: str, lines: int) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(lines))

    source = (f"def short():\n{body('    ', MAX_FUNCTION_LINES - 1)}\n"
              f"class C:\n    async def long(self):\n{body('        ', MAX_FUNCTION_LINES)}")
    assert long_functions(source, "m.py") == [f"m.py:{MAX_FUNCTION_LINES + 3} long (61 lines)"]


def test_no_function_in_library_code_is_over_60_lines() -> None:
    files = library_files()
    assert len(files) > 100  # the folders are where this test thinks
    found = [hit for path in files
             for hit in long_functions(path.read_text(encoding="utf-8"),
                                       str(path.relative_to(REPO)))]
    assert found == [], "split these into named steps:\n" + "\n".join(found)
