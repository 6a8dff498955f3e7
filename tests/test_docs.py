"""The docs are a reference checked against the code (datasette's way): each test reads a
list from the code and fails on the first entry the docs leave out or get wrong.

- every option of every ``doc-index`` and ``context`` command (read from their argparse
  parsers) is named in that command's section of docs/commands.md;
- every ``DOC_INDEX_*`` variable the library reads (string constants found with ``ast``,
  and ``$VAR`` in the hook scripts it writes) has a row in docs/commands.md's
  "Environment variables" table, and every row names one the code reads;
- the fields of ``list --json``/``inspect --json`` (``CacheDetails``) in their order;
- every file suffix the indexer parses is named in docs/formats.md, and every ranking rule
  (``search/ranking/rules.py``) in docs/search.md;
- every relative link of README.md and docs/ (decision records too) leads to a file of the
  repository;
- every ``docs/*.md`` page the code, bench, the Makefile or pyproject cites exists;
- CI (``.ci/run``) runs the command the README's "Tests" section gives;
- every module the guide names (``doc_index.x.y``, ``store/x.py``, ``python -m x``)
  exists. docs/decisions/ records what was decided when, in the names of the time, so it
  is checked for links only.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO

DOCS = REPO / "docs"
GUIDE = sorted(DOCS.glob("*.md"))
COMMANDS = DOCS / "commands.md"
# Where the CLI parsers are built: the first that exists (the doors may move).
PARSERS = {"doc-index": (("doc_index.cli.command", "build_parser"),
                         ("doc_index.cli.command", "_parser")),
           "context": (("doc_index.server.context_cli", "build_parser"),)}


def _parser(program: str) -> argparse.ArgumentParser:
    for module, name in PARSERS[program]:
        found = getattr(importlib.import_module(module), name, None)
        if found is not None:
            return found()
    raise AssertionError(f"no parser of {program} found in {PARSERS[program]}")


def _commands(parser: argparse.ArgumentParser, words: str) -> Iterator[tuple[str, set[str]]]:
    """(command words, its options) for every leaf command below ``parser``."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    options = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    if not subs:
        yield words, options - {"--help"}
        return
    for name, child in subs[0].choices.items():
        yield from _commands(child, f"{words} {name}")


def _sections(path: Path) -> dict[str, str]:
    """Each heading's line -> its text up to the next heading of its level or above."""
    lines = path.read_text(encoding="utf-8").splitlines()
    heads = [(i, len(line) - len(line.lstrip("#"))) for i, line in enumerate(lines)
             if re.match(r"#{1,6} ", line)]
    sections = {}
    for n, (start, level) in enumerate(heads):
        end = next((i for i, lv in heads[n + 1:] if lv <= level), len(lines))
        sections[lines[start]] = "\n".join(lines[start:end])
    return sections


def _section_of(path: Path, command: str) -> str:
    heads = [(h, text) for h, text in _sections(path).items() if f"`{command}`" in h]
    assert heads, f"{path.name} has no section headed `{command}`"
    return heads[0][1]


@pytest.mark.parametrize("program", sorted(PARSERS))
def test_every_command_option_is_in_its_section(program: str) -> None:
    parser = _parser(program)
    top = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    intro = COMMANDS.read_text(encoding="utf-8").split("\n## ")[0]
    missing = [f"{program} {o} (the introduction)" for o in sorted(top - {"--help"})
               if o not in intro]
    for command, options in _commands(parser, program):
        section = _section_of(COMMANDS, command)
        missing += [f"{command} {o}" for o in sorted(options - top)
                    if not re.search(rf"{re.escape(o)}(?![\w-])", section)]
    assert not missing, f"options not in docs/commands.md: {missing}"


def _library_files() -> Iterator[Path]:
    """The installed package's source files: every folder pyproject maps to doc_index."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    folders = set(re.findall(r'"doc_index[\w.]*"\s*=\s*"([\w/]+)"', text)) | {"doc_index"}
    for folder in sorted(folders):
        yield from sorted((REPO / folder).rglob("*.py"))


def _environment_variables() -> set[str]:
    found = set()
    for path in _library_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                # a name the code looks up, or one a shell script it writes expands
                found.update(re.findall(r"^(DOC_INDEX_[A-Z0-9_]+)$|\$\{?(DOC_INDEX_[A-Z0-9_]+)",
                                        node.value))
    return {name for pair in found for name in pair if name}


def test_every_environment_variable_has_a_row() -> None:
    variables = _environment_variables()
    assert "DOC_INDEX_ROOT" in variables  # the search finds what the code reads
    tables = [text for head, text in _sections(COMMANDS).items()
              if "Environment variables" in head]
    assert tables, "docs/commands.md has no section headed Environment variables"
    table = tables[0]
    rows = set(re.findall(r"^\| `(DOC_INDEX_\w+)`", table, flags=re.M))
    assert not variables - rows, f"undocumented: {sorted(variables - rows)}"
    assert not rows - variables, f"documented but never read: {sorted(rows - variables)}"


def test_inspect_json_fields_are_listed_in_order() -> None:
    from doc_index.search.cache_details import CacheDetails

    section = next(text for head, text in _sections(DOCS / "cache-format.md").items()
                   if "as JSON" in head)
    fields = section.split("Fields, in")[1]
    named = [n for n in re.findall(r"`(\w+)`", fields) if n in CacheDetails._fields]
    assert named == list(CacheDetails._fields)


def _format_suffixes() -> tuple[str, ...]:
    formats = importlib.import_module("doc_index.indexer.formats")
    return tuple(formats.DOC_SUFFIXES)


def test_every_format_is_documented() -> None:
    text = (DOCS / "formats.md").read_text(encoding="utf-8")
    suffixes = _format_suffixes()
    assert ".md" in suffixes and ".rst" in suffixes
    assert not [s for s in suffixes if f"`{s}`" not in text], "formats.md misses a suffix"


def test_every_ranking_rule_is_documented() -> None:
    from doc_index.search.ranking.rules import RULE_NAMES

    text = (DOCS / "search.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(\w+)` \|", text, flags=re.M))
    assert set(RULE_NAMES) <= rows, f"rules without a row: {sorted(set(RULE_NAMES) - rows)}"


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_links_lead_to_files(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        target = target.split("#")[0]
        if target and not re.match(r"[a-z]+:", target) \
                and not (page.parent / target).exists():
            broken.append(target)
    if page.name == "README.md":  # the README names this repository's pages as paths too
        broken += [t for t in re.findall(r"`(docs/[\w/-]+\.md)`", text)
                   if not (REPO / t).exists()]
    assert not broken, f"{page.name} links to missing files: {broken}"


def _python_folders() -> set[str]:
    return {p.name for p in REPO.iterdir() if p.is_dir() and any(p.glob("*.py"))}


def _module_exists(dotted: str) -> bool:
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is not None:
            rest = parts[n:]
            return not rest or hasattr(importlib.import_module(name), rest[0])
    return False


def _named_modules(text: str) -> Iterator[str]:
    folders = "|".join(sorted(_python_folders()))
    yield from re.findall(r"\b(doc_index(?:\.\w+)+)", text)
    yield from re.findall(r"python -m ([\w.]+)", text)
    yield from re.findall(rf"(?<![\w/.-])((?:{folders})/[\w/.-]*\w(?:\.py|/))", text)


@pytest.mark.parametrize("page", [REPO / "README.md", *GUIDE],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_named_modules_exist(page: Path) -> None:
    missing = []
    for name in _named_modules(page.read_text(encoding="utf-8")):
        exists = (REPO / name).exists() if "/" in name else _module_exists(name.rstrip("."))
        if not exists:
            missing.append(name)
    assert not missing, f"{page.name} names modules that do not exist: {sorted(set(missing))}"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tests = readme.split("\n## Tests\n")[1].split("\n## ")[0]
    commands = re.findall(r"^(make [\w-]+)", tests, flags=re.M)
    assert commands and commands[0] == "make test"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0] in ci, "the README's test command is not what CI runs"


def test_pages_the_code_cites_exist() -> None:
    cited = []
    files = [*_python_folders_files(), REPO / "Makefile", REPO / "pyproject.toml"]
    for path in files:
        for page in re.findall(r"\b(docs/[\w/-]+\.md)", path.read_text(encoding="utf-8")):
            if not (REPO / page).exists():
                cited.append(f"{path.relative_to(REPO)}: {page}")
    assert not cited, f"pages cited that do not exist: {cited}"


def _python_folders_files() -> Iterator[Path]:
    """The library's and bench's Python files (tests name fixture pages ``docs/x.md``)."""
    for folder in sorted(_python_folders() - {"tests"}):
        yield from sorted((REPO / folder).rglob("*.py"))
