"""Test files are named by the rule or behaviour they check, never by their history.

A name like ``test_markdown_fast.py`` or ``test_issue_21.py`` tells a reader when and
why the file was written, not what breaks when it fails; a merge leftover (``.orig``,
``.rej``) is dead code that looks alive. The module docstring of a test file says what
it checks; an issue number there is history, which git log keeps.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# A word of history in a name: how fast it was made, which issue it came from.
HISTORY_WORDS = re.compile(r"(?:^|_)(?:fast|faster|speed|speedup|issue|issues|regression)"
                           r"(?:_|\.|$)")
# A number standing alone in a name (test_21.py, test_issue21, test_i21_x): an issue's.
ISSUE_NUMBER = re.compile(r"(?:^|_)(?:i|issue|gh|bug)?\d+(?:_|\.|$)")
LEFTOVERS = (".orig", ".rej", ".bak", ".swp", "~")
ISSUE_CITED = re.compile(r"\bissues? \d+|\b(?:item|finding) \d+", re.IGNORECASE)


def name_problem(name: str) -> str | None:
    """Why ``name`` (a file in tests/) is not a name by behaviour, or None."""
    if name.endswith(LEFTOVERS):
        return "a merge or editor leftover: delete it"
    if not name.startswith("test_"):
        return None
    if HISTORY_WORDS.search(name):
        return "says how it came to be (fast, speed, issue), not what it checks"
    if ISSUE_NUMBER.search(name):
        return "holds a number, an issue's: name the behaviour instead"
    return None


@pytest.mark.parametrize(("name", "bad"), [
    ("test_markdown_headings.py", False), ("test_utf8_names.py", False),
    ("test_markdown_fast.py", True), ("test_analysis_speed.py", True),
    ("test_issue_21.py", True), ("test_i21_limits.py", True), ("test_21.py", True),
    ("test_cli_messages.py.orig", True), ("conftest.py.rej", True),
    ("test_fastapi_docs.py", False), ("test_breakfast.py", False),
])
def test_the_name_rule(name: str, bad: bool) -> None:
    assert (name_problem(name) is not None) == bad


def test_every_test_file_is_named_by_behaviour() -> None:
    problems = {path.relative_to(TESTS).as_posix(): problem
                for path in sorted(TESTS.rglob("*"))
                if ".venv" not in path.parts and "node_modules" not in path.parts
                and (problem := name_problem(path.name)) is not None}
    assert problems == {}


def test_no_test_file_docstring_cites_an_issue() -> None:
    cited = {}
    for path in sorted(TESTS.glob("test_*.py")):
        doc = ast.get_docstring(ast.parse(path.read_bytes())) or ""
        found = ISSUE_CITED.findall(doc)
        if found:
            cited[path.name] = found
    assert cited == {}
