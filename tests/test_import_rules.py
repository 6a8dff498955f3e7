"""The import rules the speed depends on: what a command must never import.

A build where nothing changed (the usual case after a pull) takes about 40 ms of work,
less than importing GitPython (about 130 ms) or the MCP SDK (about a second); importing
``dataclasses`` (``inspect`` with it) costs about 30 ms, a parser tens of milliseconds.
A cold resolve pays for every module it loads too. The code keeps these modules off those
paths (records are NamedTuples and plain classes, git is asked through its command, the
parsers load in the parse worker); these tests say which, in a fresh interpreter running
the real entry point, so a new import anywhere on the path fails here, not in a benchmark.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, SAMPLE_REPOS, run_cli

# Run ``python -m MODULE ARGS`` and write the names in sys.modules when the process ends
# (the commands leave through os._exit; forked parse workers do not report).
_REPORT_MODULES = """
import os, sys
report, module = sys.argv[1], sys.argv[2]
main_pid = os.getpid()
real_exit = os._exit

def write_modules():
    if os.getpid() == main_pid:
        with open(report, "w") as fh:
            fh.write("\\n".join(sorted(sys.modules)))

def exit_now(code):
    write_modules()
    real_exit(code)

os._exit = exit_now
sys.argv = [module, *sys.argv[3:]]
import runpy
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    write_modules()
"""

SDK = {"mcp": "the MCP SDK", "mcp_types": "the MCP SDK", "pydantic": "the MCP SDK"}
PARSERS = {"markdown_it": "a parser", "docutils": "a parser"}
GITPYTHON = {"git": "GitPython"}

# A build in which nothing changed: no parser (nothing is parsed), no dataclasses, no
# GitPython (a work tree's files and HEAD come from the git command), no SDK.
NO_CHANGE_BUILD_NEVER = {
    "dataclasses": "records are NamedTuples and plain classes",
    "inspect": "dataclasses brings it",
    **GITPYTHON, **PARSERS, **SDK,
}
# Any build, of a local directory, a work tree or a git URL: git runs through its command
# (sources/git_run.py), so no GitPython; no SDK.
BUILD_NEVER = {**GITPYTHON, **SDK}
# ``doc-index resolve`` and ``context resolve``: reading a cache, no build machinery.
RESOLVE_NEVER = {
    "doc_index.sources.walk": "the source scanners",
    "doc_index.store.parallel": "the parse workers",
    **GITPYTHON, **PARSERS, **SDK,
}
# The server module imports the SDK in ``run`` only, once bytecode writing is off (the
# server writes no file, not even a .pyc) and DOC_INDEX_SERVE_CACHE_MB was checked.
SERVE_MODULE_NEVER = {**SDK, "anyio": "the MCP SDK's event loop",
                      "doc_index.server.mcp_transport": "the SDK's stdio transport, wrapped"}


def modules_of(tmp_path: Path, module: str, *args: str) -> set[str]:
    """The modules ``python -m MODULE ARGS`` had imported when it exited (exit 0)."""
    report = tmp_path / "modules.txt"
    done = subprocess.run([sys.executable, "-c", _REPORT_MODULES, str(report), module, *args],
                          capture_output=True, timeout=SAFETY_TIMEOUT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return set(report.read_text().split("\n"))


def broken(imported: set[str], never: dict[str, str]) -> list[str]:
    return [f"{name} ({why})" for name, why in never.items() if name in imported]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   timeout=SAFETY_TIMEOUT)


def make_source(tmp_path: Path, kind: str) -> Path:
    """A copy of a sample repository: a plain folder, a git work tree, or a folder below a
    work tree's top."""
    top = tmp_path / "proj"
    source = top / "docs" if kind == "below-a-work-tree" else top
    shutil.copytree(SAMPLE_REPOS / "mdkit-docs", source)
    if kind != "directory":
        git(top, "init", "-q", "-b", "main")
        git(top, "add", "-A")
        git(top, "commit", "-q", "-m", "docs")
    if kind == "below-a-work-tree":  # named from its origin (source_identity), not GitPython
        git(top, "remote", "add", "origin", "https://github.com/acme/proj.git")
    return source


@pytest.mark.parametrize("kind", ["directory", "work-tree", "below-a-work-tree"])
def test_a_local_build_imports_no_gitpython_and_when_nothing_changed_no_parser(
        env: Path, kind: str) -> None:
    source = make_source(env, kind)
    root = env / "root"
    argv = ["build", str(source), "--root", str(root)]
    first = modules_of(env, "doc_index.cli", *argv)
    assert broken(first, BUILD_NEVER) == []
    again = modules_of(env, "doc_index.cli", *argv)
    assert broken(again, NO_CHANGE_BUILD_NEVER) == []
    assert "doc_index.store.index_store" in again  # the report covers the build itself


def test_resolve_imports_no_build_machinery(tmp_path: Path) -> None:
    root = tmp_path / "root"
    done = run_cli("build", str(SAMPLE_REPOS / "mdkit-docs"), "--root", str(root),
                   "--name", "local-mdkit-docs")
    assert done.returncode == 0, done.stderr
    cache = root / "local-mdkit-docs"
    for module, args in (
        ("doc_index.cli", ["resolve", cache.name, "retry timeout", "--root", str(root)]),
        ("doc_index.server.context_cli",
         ["resolve", "--cache", str(cache), "--query", "retry timeout", "--budget", "800"]),
    ):
        imported = modules_of(tmp_path, module, *args)
        assert "doc_index.search.native_selection" in imported  # it did resolve
        assert broken(imported, RESOLVE_NEVER) == [], module


def test_the_server_module_loads_without_the_sdk(tmp_path: Path) -> None:
    code = "import sys, doc_index.server.mcp_server; print('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=SAFETY_TIMEOUT, cwd=tmp_path, check=True)
    imported = set(done.stdout.split("\n"))
    assert broken(imported, SERVE_MODULE_NEVER) == []


def test_a_git_url_build_imports_no_gitpython(env: Path) -> None:
    source = make_source(env, "work-tree")
    bare = env / "proj.git"
    git(env, "clone", "-q", "--bare", str(source), str(bare))
    argv = ["build", bare.as_uri(), "--root", str(env / "root")]
    for _ in ("first", "nothing changed"):
        imported = modules_of(env, "doc_index.cli", *argv)
        assert "doc_index.store.index_store" in imported
        assert broken(imported, BUILD_NEVER) == []
