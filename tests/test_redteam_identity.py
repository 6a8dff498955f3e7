"""Red-team regressions for cache identity (issue 13): hostile origin URLs, hostile source
records and commits in a cache's manifest, and look-alike folder locations."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli, write_tree

DOC = {"guide.md": "# Guide\n\nHow to retry a request after a timeout.\n"}
SECRET = "s3cr3t-t0ken"
# urlsplit refuses both (its ValueError quotes the URL, user info and all)
UNPARSEABLE = [f"https://user:{SECRET}@[x/owner/repo",
               f"https://user:{SECRET}@ex\u2100ample.com/owner/repo"]


def one_error(done: subprocess.CompletedProcess[bytes], code: int) -> str:
    assert done.returncode == code, done.stderr
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def edit_manifest(cache_dir: Path, edit: dict[str, str]) -> None:
    """Replace text in a cache's manifest as someone writing the root could."""
    path = cache_dir / "manifest.json"
    text = path.read_text()
    for old, new in edit.items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)


@pytest.mark.parametrize("url", UNPARSEABLE)
def test_an_unparseable_git_url_is_a_usage_error_without_its_credentials(
        env: Path, url: str) -> None:
    line = one_error(run_cli("build", url, "--root", str(env / "root")), 1)
    assert SECRET not in line and "internal error" not in line, line


@pytest.mark.parametrize("url", UNPARSEABLE)
def test_a_work_tree_whose_origin_does_not_parse_builds_as_a_plain_folder(
        env: Path, url: str) -> None:
    tree = write_tree(env / "proj", {"docs/" + k: v for k, v in DOC.items()})
    for args in (["init", "-q"], ["config", "remote.origin.url", url]):
        subprocess.run(["git", *args], cwd=tree, check=True)
    done = run_cli("build", str(tree / "docs"), "--root", str(env / "root"))
    assert done.returncode == 0, done.stderr
    assert SECRET.encode() not in done.stdout + done.stderr
    assert (env / "root" / "local-proj-docs").is_dir()


def test_a_recorded_file_url_that_does_not_parse_is_another_source(env: Path) -> None:
    root = env / "root"
    docs = write_tree(env / "docs", DOC)
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    edit_manifest(root / "n", {f'"location":"{docs}"': '"location":"file://[x"'})
    line = one_error(run_cli("build", str(docs), "--root", str(root), "--name", "n"), 1)
    assert "--replace" in line and "internal error" not in line, line


def test_a_folder_named_like_a_bare_repository_is_not_the_folder_without_git(
        env: Path) -> None:
    root = env / "root"
    first = write_tree(env / "d.git", DOC)
    second = write_tree(env / "d", {"other.md": "# Other\n\nSomething else.\n"})
    assert run_cli("build", str(first), "--root", str(root), "--name", "n").returncode == 0
    line = one_error(run_cli("build", str(second), "--root", str(root), "--name", "n"), 1)
    assert "--replace" in line, line
    shown = run_cli("inspect", "n", "--root", str(root)).stdout.decode()
    assert f"directory {first}" in shown, shown


def test_a_hostile_commit_and_source_record_never_reach_the_terminal_raw(env: Path) -> None:
    root = env / "root"
    docs = write_tree(env / "docs", DOC)
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    edit_manifest(root / "n", {
        '"commit_hash":""': '"commit_hash":"\\u001b[2J\\u001b]0;owned\\u0007"',
        '"commit":null}': '"commit":null,"extra":1e999,"more":"\\u009b31m"}',
    })
    for args in (["list"], ["inspect", "n"]):
        text = run_cli(*args, "--root", str(root)).stdout.decode()
        assert "\\x1b[2J" in text, text
        assert [c for c in text if c != "\n" and not c.isprintable()] == [], text
    for args in (["list", "--json"], ["inspect", "n", "--json"]):
        out = run_cli(*args, "--root", str(root)).stdout
        assert b"Infinity" not in out, out  # (json.loads would take it)
        value = json.loads(out)
        cache = value["caches"][0] if "caches" in value else value
        assert sorted(cache["source"]) == ["commit", "kind", "location", "ref"], cache


def test_a_default_name_too_long_for_a_file_name_asks_for_name(env: Path) -> None:
    root = env / "root"
    tree = write_tree(env / "proj", {"docs/" + k: v for k, v in DOC.items()})
    long_origin = "https://example.com/" + "o" * 200 + "/" + "r" * 200
    for args in (["init", "-q"], ["config", "remote.origin.url", long_origin]):
        subprocess.run(["git", *args], cwd=tree, check=True)
    line = one_error(run_cli("build", str(tree / "docs"), "--root", str(root)), 1)
    assert "--name NAME" in line and "o" * 200 not in line, line
    assert not root.exists() or not any(p for p in root.iterdir() if p.name[0] != ".")
    done = run_cli("build", str(tree / "docs"), "--root", str(root), "--name", "short")
    assert done.returncode == 0, done.stderr
    line = one_error(run_cli("build", str(tree / "docs"), "--root", str(root),
                             "--name", "n" * 256), 1)
    assert "longer than a file name can be" in line, line
