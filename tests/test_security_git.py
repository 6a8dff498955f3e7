"""Untrusted git repositories.

Real repositories, real ``doc-index build`` processes: a crafted tree cannot write outside
the cache root, a work tree's ``.git/config`` cannot make git run a command, an inherited
``GIT_DIR`` does not point the build at another repository, a URL's token is neither
printed nor stored, and a directory below a work tree's top takes git's view.
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, input=input,
                          check=False, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr!r}"
    return done.stdout.decode().strip()


def make_repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "A")
    return git(path, "rev-parse", "HEAD")


def manifest(cache: Path) -> dict:
    return json.loads((cache / "manifest.json").read_bytes())


def everything_under(top: Path) -> set[str]:
    return {p.relative_to(top).as_posix() for p in top.rglob("*")}


# --- a work tree's git config runs nothing --------------------------------------------

HOOK_NAMES = ("reference-transaction", "post-index-change", "pre-commit", "post-checkout",
              "post-merge", "pre-auto-gc", "fsmonitor-watchman")


def poisoned_work_tree(base: Path, markers: Path) -> Path:
    """A work tree whose ``.git/config`` points every command-running option at a script
    that leaves a marker file named after the option."""
    markers.mkdir()
    proj = base / "proj"
    make_repo(proj, {"README.md": "# Project\n\nHello.\n", "docs/guide.md": "# Guide\n\nText.\n"})
    hooks = base / "evil-hooks"
    hooks.mkdir()

    def script(name: str) -> str:
        path = base / f"evil-{name}.sh"
        path.write_text(f"#!/bin/sh\ntouch '{markers}/{name}'\ncat >/dev/null\nexit 0\n")
        path.chmod(0o755)
        return str(path)

    for hook in HOOK_NAMES:
        (hooks / hook).write_text(f"#!/bin/sh\ntouch '{markers}/hook-{hook}'\n")
        (hooks / hook).chmod(0o755)
    for key in ("core.fsmonitor", "diff.external", "core.pager", "core.sshCommand",
                "core.askPass", "credential.helper", "core.editor", "sequence.editor",
                "gpg.program"):
        git(proj, "config", key, script(key))
    git(proj, "config", "core.hooksPath", str(hooks))
    git(proj, "config", "pager.ls-files", script("pager.ls-files"))
    return proj


def test_work_tree_config_runs_no_command(env: Path) -> None:
    markers = env / "markers"
    proj = poisoned_work_tree(env, markers)
    # the poison is live: plain git on this work tree runs it
    subprocess.run(["git", "ls-files"], cwd=proj, capture_output=True, check=False, timeout=60)
    assert (markers / "core.fsmonitor").exists()
    (markers / "core.fsmonitor").unlink()

    root = env / "root"
    for source in (proj, proj / "docs"):  # the top, and a directory below it
        done = run_cli("build", str(source), "--root", str(root), "--name", f"local-{source.name}")
        assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(markers)) == []
    m = manifest(root / "local-proj")
    assert m["doc_files"] == ["README.md", "docs/guide.md"]
    assert m["commit_hash"] == git(proj, "rev-parse", "HEAD")


# --- an inherited GIT_DIR ---------------------------------------------------------------------

def test_inherited_git_dir_points_nowhere(env: Path) -> None:
    """As inside a git hook or ``git rebase -x``: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE and
    GIT_CONFIG_* of another repository reach neither a git-URL build nor a local one."""
    author = env / "author"
    head = make_repo(author, {"README.md": "# Widgets\n\nWidgets for all.\n"})
    bare = env / "srv" / "acme" / "widgets.git"
    bare.parent.mkdir(parents=True)
    git(env, "clone", "-q", "--bare", str(author), str(bare))
    other = env / "other"
    make_repo(other, {"OTHER.md": "# Other\n\nNot this one.\n"})
    foreign = {
        "GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other),
        "GIT_INDEX_FILE": str(other / ".git" / "index"),
        "GIT_OBJECT_DIRECTORY": str(other / ".git" / "objects"),
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": f"touch {env / 'marker'}",
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='touch {env / 'marker2'}'",
    }
    root = env / "root"
    done = run_cli("build", bare.as_uri(), "--root", str(root), env=foreign)
    assert done.returncode == 0, done.stderr
    m = manifest(root / "acme-widgets")
    assert (m["commit_hash"], m["doc_files"]) == (head, ["README.md"])
    done = run_cli("build", str(author), "--root", str(root), "--name", "local-author",
                   env=foreign)
    assert done.returncode == 0, done.stderr
    m = manifest(root / "local-author")
    assert (m["commit_hash"], m["doc_files"]) == (head, ["README.md"])
    assert not (env / "marker").exists() and not (env / "marker2").exists()


# --- a crafted tree cannot write outside the root -------------------------------------

def _tree(repo: Path, entries: list[tuple[bytes, bytes, str]]) -> str:
    """A tree object written as given (``--literally``: git checks nothing), entries in
    git's order (a subtree sorts as if its name ended with ``/``)."""
    def order(entry: tuple[bytes, bytes, str]) -> bytes:
        return entry[1] + (b"/" if entry[0] == b"40000" else b"")

    data = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha)
                    for mode, name, sha in sorted(entries, key=order))
    return git(repo, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", input=data)


def _nested(repo: Path, components: list[bytes], blob: str) -> tuple[bytes, bytes, str]:
    """The tree entry for ``components[0]/.../components[-1]`` as nested trees."""
    if len(components) == 1:
        return (b"100644", components[0], blob)
    inner = _nested(repo, components[1:], blob)
    return (b"40000", components[0], _tree(repo, [inner]))


def evil_repo(base: Path, target: Path) -> Path:
    """A bare repository whose one commit holds ``good.md`` beside entries that name files
    in ``target`` (outside anything doc-index owns): one entry named
    ``../../…/<target>/PWNED.md``, one ``/<target>/ABS.md``, a ``docs`` tree with a chain
    of ``..`` subtrees down to ``<target>/NESTED.md``, and a name with an ESC in it."""
    bare = base / "srv" / "mallory" / "evil.git"
    bare.parent.mkdir(parents=True)
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    pwned = git(bare, "hash-object", "-w", "--stdin", input=b"# Pwned\n\nOutside.\n")
    good = git(bare, "hash-object", "-w", "--stdin", input=b"# Good\n\nA good page.\n")
    up = "../" * 16  # more than enough to reach / from anywhere
    inside = str(target).lstrip("/").encode()
    entries = [
        (b"100644", f"{up}{target.relative_to('/')}/PWNED.md".encode(), pwned),
        (b"100644", f"{target}/ABS.md".encode(), pwned),
        (b"100644", b"good.md", good),
        _nested(bare, [b"docs"] + [b".."] * 16 + inside.split(b"/") + [b"NESTED.md"], pwned),
        (b"100644", b"\x1b[2J/../esc.md", pwned),
    ]
    commit = git(bare, "commit-tree", _tree(bare, entries), "-m", "evil", input=b"")
    git(bare, "update-ref", "refs/heads/main", commit)
    return bare


def _ask_for_fsck(home: Path) -> None:
    """The user's own git config asks git to fsck what it fetches."""
    (home / ".gitconfig").write_text("[transfer]\n\tfsckObjects = true\n")


def test_fsck_the_user_asks_for_refuses_with_one_line(env: Path) -> None:
    target = env / "x"
    bare = evil_repo(env, target)
    _ask_for_fsck(env / "home")
    root = env / "root"
    done = run_cli("build", bare.as_uri(), "--root", str(root))
    assert done.returncode == 6, done.stderr
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: refused file://"), lines
    assert "your git config asks for fsck" in lines[0] and "Traceback" not in lines[0]
    assert not target.exists()
    assert not (root / "mallory-evil").exists()


def test_crafted_tree_entries_are_skipped_and_reported(env: Path) -> None:
    """No git configuration: git does not fsck the crafted tree (doc-index does not force
    it), doc-index's own check of every name holds."""
    target = env / "x"
    bare = evil_repo(env, target)
    root = env / "root"
    for _ in range(2):  # and every rebuild
        done = run_cli("build", bare.as_uri(), "--root", str(root), "--all")
        assert done.returncode == 0, done.stderr
        assert not target.exists()
    err = done.stderr.decode()
    up = "../" * 16
    assert f"skipped {up}{str(target)[1:]}/PWNED.md: file name leaves its directory" in err
    assert f"skipped {target}/ABS.md: absolute file name" in err
    assert f"skipped docs/{up}{str(target)[1:]}/NESTED.md: file name leaves" in err
    assert "skipped '\\x1b[2J/../esc.md': file name leaves its directory" in err
    assert "\x1b" not in err
    assert manifest(root / "mallory-evil-all")["doc_files"] == ["good.md"]
    assert not [p for p in everything_under(env) if p.endswith(("PWNED.md", "ABS.md",
                                                                 "NESTED.md"))]


def test_scan_commit_validates_every_entry(env: Path) -> None:
    from doc_index.sources.git import BlobReader, scan_commit

    target = env / "x"
    bare = evil_repo(env, target)
    blobs = BlobReader(bare)
    try:
        scan = scan_commit(bare, git(bare, "rev-parse", "main"), blobs)
        assert [f.path for f in scan.files] == ["good.md"]
        assert scan.files[0].read() == b"# Good\n\nA good page.\n"
    finally:
        blobs.close()
    reasons = dict(scan.skipped)
    assert reasons[f"{target}/ABS.md"] == "absolute file name"
    assert len(scan.skipped) == 4
    assert {r for r in reasons.values()} == {"absolute file name",
                                             "file name leaves its directory"}


# --- credentials ------------------------------------------------------------------------------


class _DumbGitWithAuth(http.server.SimpleHTTPRequestHandler):
    """Serves bare repositories over git's dumb HTTP protocol, to Basic auth only."""

    expected = ""
    authorized: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        if self.headers.get("Authorization") != f"Basic {self.expected}":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.authorized.append(self.path)
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def dumb_server(env: Path) -> Iterator[tuple[str, Path]]:
    srv = env / "srv"
    srv.mkdir()
    _DumbGitWithAuth.expected = base64.b64encode(b"user:s3cret").decode()
    handler = functools.partial(_DumbGitWithAuth, directory=str(srv))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", srv
    finally:
        server.shutdown()
        server.server_close()


def test_token_is_used_per_fetch_and_never_stored(env: Path,
                                                  dumb_server: tuple[str, Path]) -> None:
    where, srv = dumb_server
    author = env / "author"
    make_repo(author, {"README.md": "# Widgets\n\nWidgets for all.\n"})
    bare = srv / "acme" / "widgets.git"
    bare.parent.mkdir(parents=True)
    git(env, "clone", "-q", "--bare", str(author), str(bare))
    git(bare, "update-server-info")
    root = env / "root"
    url = f"http://user:s3cret@{where}/acme/widgets.git"
    for _ in range(2):  # the first clone, then a fetch into it
        done = run_cli("build", url, "--root", str(root))
        assert done.returncode == 0, done.stderr
        assert b"s3cret" not in done.stderr
    assert _DumbGitWithAuth.authorized  # the token did reach the server
    (clone,) = (env / "xdg" / "doc-index" / "clones").iterdir()
    assert git(clone, "config", "--get", "remote.origin.url") == f"http://{where}/acme/widgets.git"
    for path in [*clone.rglob("*"), *root.rglob("*")]:
        if path.is_file():
            assert b"s3cret" not in path.read_bytes(), path
    assert not stat.S_IMODE((clone / "config").stat().st_mode) & 0o022


# --- a directory below a work tree's top ------------------------------------------------------

def test_directory_below_work_tree_top_takes_gits_view(env: Path) -> None:
    proj = env / "proj"
    head = make_repo(proj, {".gitignore": "docs/draft.md\ndocs/private/\n",
                            "README.md": "# Project\n",
                            "docs/guide.md": "# Guide\n\nTracked.\n"})
    (proj / "docs" / "draft.md").write_text("# Draft\n\nIgnored.\n")
    (proj / "docs" / "private").mkdir()
    (proj / "docs" / "private" / "notes.md").write_text("# Notes\n\nIgnored.\n")
    (proj / "docs" / "new.md").write_text("# New\n\nUntracked, not ignored.\n")
    root = env / "root"
    work = env / "elsewhere"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "doc_index.cli", "build", "../proj/docs", "--root", str(root)],
        cwd=work, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    m = manifest(root / "local-proj-docs")  # no origin: named from its parent and itself
    assert m["doc_files"] == ["guide.md", "new.md"]
    assert m["commit_hash"] == head


# --- a partial clone's lazy fetch runs nothing ------------------------------------------------

def lazy_fetching_work_tree(base: Path, marker: Path) -> Path:
    """A sparse-index work tree of a partial clone whose ``sub/`` tree is missing: git
    fetches it from the promisor remote, whose ``uploadpack`` leaves ``marker``; the
    repository allows the file protocol itself (``protocol.file.allow=always``)."""
    proj = base / "wt"
    make_repo(proj, {"sub/s.md": "# S\n", "other/o.md": "# O\n", "README.md": "# R\n"})
    git(proj, "config", "index.sparse", "true")
    git(proj, "sparse-checkout", "set", "--cone", "other")
    missing = {git(proj, "rev-parse", "HEAD:sub"), git(proj, "rev-parse", "HEAD:sub/s.md")}
    kept = [sha for sha in git(proj, "cat-file", "--batch-all-objects",
                               "--batch-check=%(objectname)").split() if sha not in missing]
    git(proj, "pack-objects", "-q", ".git/objects/pack/pack", input="\n".join(kept).encode())
    for loose in (proj / ".git" / "objects").glob("??"):
        for obj in loose.iterdir():
            obj.unlink()
        loose.rmdir()
    for key, value in (("core.repositoryformatversion", "1"),
                       ("extensions.partialClone", "origin"),
                       ("remote.origin.promisor", "true"),
                       ("remote.origin.url", (base / "nowhere").as_uri()),
                       ("remote.origin.uploadpack", f"touch '{marker}'; false"),
                       ("protocol.file.allow", "always")):
        git(proj, "config", key, value)
    return proj


def test_partial_clone_lazy_fetch_runs_nothing(env: Path) -> None:
    from doc_index.sources.git_run import run_git

    marker = env / "PWNED"
    proj = lazy_fetching_work_tree(env, marker)
    # the poison is live: plain git expanding the sparse index runs the command
    subprocess.run(["git", "ls-files"], cwd=proj, capture_output=True, check=False, timeout=60)
    assert marker.exists()
    marker.unlink()

    root = env / "root"
    done = run_cli("build", str(proj), "--root", str(root), "--name", "local-wt")
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert manifest(root / "local-wt")["doc_files"] == ["README.md", "other/o.md"]
    # the runner itself allows no transport: ls-files expanding the index fetches nothing
    run_git(["ls-files"], cwd=proj)
    assert not marker.exists()


# --- git that never answers stops a local build -----------------------------------------------

@pytest.mark.parametrize("where", [".gitignore", ".git/info/exclude", "core.excludesFile"])
def test_fifo_ignore_file_stops_build_with_one_error(env: Path, where: str) -> None:
    proj = env / "proj"
    make_repo(proj, {"README.md": "# Project\n"})
    if where == "core.excludesFile":
        fifo = env / "excludes"
        git(proj, "config", "core.excludesFile", str(fifo))
    else:
        fifo = proj / where
        fifo.parent.mkdir(exist_ok=True)
        fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    root = env / "root"
    # git blocks forever opening the FIFO, so any deadline fires: 1 s decides nothing
    done = run_cli("build", str(proj), "--root", str(root), env={"DOC_INDEX_GIT_TIMEOUT": "1"})
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 6, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: git did not answer"), lines
    assert str(proj) in lines[0] and "DOC_INDEX_GIT_TIMEOUT" in lines[0]
    assert not (root / "local-proj").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-5", "inf", "nan", ""])
def test_git_timeout_must_be_a_positive_number(env: Path, value: str) -> None:
    proj = env / "proj"
    make_repo(proj, {"README.md": "# Project\n"})
    done = run_cli("build", str(proj), "--root", str(env / "root"),
                   env={"DOC_INDEX_GIT_TIMEOUT": value})
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and "invalid DOC_INDEX_GIT_TIMEOUT" in lines[0], lines
