"""Git sources: ``doc-index build <git-url>`` and its incremental update.

Real repositories made with real git commands; the remote is a bare repository reached by
a ``file://`` URL or by its path. HOME, XDG_CACHE_HOME and DOC_INDEX_ROOT point into the
test's tmp directory, so nothing outside it is read or written.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_index.build import build_from_git
from doc_index.foundation.errors import GitSourceError
from doc_index.sources import git as git_source
from doc_index.sources.git import parse_remote
from doc_index.store.index_store import IndexStore

MAIN = Path(__file__).resolve().parents[1]


# --- helpers --------------------------------------------------------------------------------

def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def write(repo: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)


def doc(title: str, body: str) -> str:
    return (f"# {title}\n\n{body}\n\n## Install\n\nRun `pip install {title.lower()}`.\n\n"
            f"## Usage\n\nCall the {title} client and read the {body} result.\n")


FILES_A: dict[str, str | bytes] = {
    "README.md": doc("Widgets", "widgets for everyone"),
    "docs/guide.md": doc("Guide", "a guided tour"),
    "docs/old.md": doc("Old", "a page that will be renamed"),
    "docs/gone.md": doc("Gone", "a page that will be deleted"),
    "docs/same.rst": "Same\n====\n\nThis page never changes.\n\nDetails\n-------\n\nMore text.\n",
    "docs/api/client.md": doc("Client", "the client api"),
    "src/widgets.py": "print('not documentation')\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
}


def make_remote(base: Path, files: dict[str, str | bytes] = FILES_A,
                owner: str = "acme", name: str = "widgets") -> tuple[Path, Path]:
    """An author repository with one commit, pushed to the bare ``<owner>/<name>.git``."""
    author = base / "author"
    author.mkdir()
    git(author, "init", "-q", "-b", "main")
    write(author, files)
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "A")
    bare = base / "srv" / owner / f"{name}.git"
    bare.parent.mkdir(parents=True)
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    git(author, "push", "-q", str(bare), "main")
    return author, bare


def advance(author: Path, bare: Path) -> str:
    """Commit B: added, modified, deleted and renamed docs (and a non-doc change)."""
    write(author, {
        "docs/guide.md": doc("Guide", "a guided tour, revised with retries"),
        "docs/new.md": doc("New", "a brand new page"),
        "src/widgets.py": "print('still not documentation')\n",
    })
    git(author, "rm", "-q", "docs/gone.md")
    git(author, "mv", "docs/old.md", "docs/moved.md")
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "B")
    git(author, "push", "-q", str(bare), "main")
    return git(author, "rev-parse", "HEAD")


def snapshot(cache_dir: Path) -> dict[str, object]:
    """Every file of a cache; the manifest parsed, without ``indexed_at``."""
    out: dict[str, object] = {}
    for path in sorted(cache_dir.rglob("*")):
        if path.is_file():
            rel = path.relative_to(cache_dir).as_posix()
            if rel == "manifest.json":
                manifest = json.loads(path.read_bytes())
                del manifest["indexed_at"]
                out[rel] = manifest
            else:
                out[rel] = path.read_bytes()
    return out


def manifest(cache_dir: Path) -> dict:
    return json.loads((cache_dir / "manifest.json").read_bytes())


def blob_shas(repo: Path, commit: str, paths: list[str]) -> dict[str, str]:
    return {p: git(repo, "rev-parse", f"{commit}:{p}") for p in paths}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doc_index.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=MAIN, check=False)


def entries(path: Path) -> list[str]:
    return sorted(os.listdir(path)) if path.exists() else []


# --- cache keys and URLs ------------------------------------------------------------------

@pytest.mark.parametrize(("source", "owner", "name"), [
    ("https://github.com/pallets/flask.git", "pallets", "flask"),
    ("https://github.com/pallets/flask", "pallets", "flask"),
    ("https://token:x-oauth@github.com/pallets/flask.git/", "pallets", "flask"),
    ("ssh://git@github.com:22/pallets/flask.git", "pallets", "flask"),
    ("git@github.com:pallets/flask.git", "pallets", "flask"),
    ("file:///srv/git/acme/widgets.git", "acme", "widgets"),
    ("file:///srv/git/acme/widgets/.git", "acme", "widgets"),
    ("/srv/git/acme/widgets.git", "acme", "widgets"),
    ("https://example.com/only.git", "example.com", "only"),
])
def test_owner_and_name_from_url(source: str, owner: str, name: str) -> None:
    remote = parse_remote(source)
    assert (remote.owner, remote.name) == (owner, name)
    assert "x-oauth" not in remote.display and "token" not in remote.display


def test_one_clone_per_remote_whatever_the_spelling() -> None:
    names = {parse_remote(s).clone_dir_name for s in (
        "file:///srv/acme/widgets.git", "/srv/acme/widgets.git", "/srv/acme/widgets.git/")}
    assert len(names) == 1
    assert parse_remote("https://u:p@h/a/b.git").clone_dir_name == \
        parse_remote("https://h/a/b").clone_dir_name


# --- builds ---------------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["file-url", "bare-path"])
def test_pull_reindexes_only_changed_files_and_equals_fresh_build(
    env: Path, spelling: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    author, bare = make_remote(env)
    source = bare.as_uri() if spelling == "file-url" else str(bare)
    commit_a = git(author, "rev-parse", "HEAD")
    store = IndexStore(env / "root")

    first = build_from_git(store, source)
    docs_a = ["README.md", "docs/api/client.md", "docs/gone.md", "docs/guide.md", "docs/old.md",
              "docs/same.rst"]
    assert first.key == "acme-widgets" and first.full and first.written
    assert first.parsed == docs_a
    cache = env / "root" / "acme-widgets"
    m = manifest(cache)
    assert (m["owner"], m["name"], m["repo"]) == ("acme", "widgets", "acme/widgets")
    assert m["commit_hash"] == commit_a
    assert m["file_hashes"] == blob_shas(author, commit_a, docs_a)  # git blob SHAs
    clones = env / "xdg" / "doc-index" / "clones"
    assert len(entries(clones)) == 1 and not (env / "home" / ".doc-index").exists()

    commit_b = advance(author, bare)
    read: list[str] = []
    real_read = git_source.BlobReader.read

    def counting_read(blobs: git_source.BlobReader, sha: str) -> bytes:
        read.append(sha)
        return real_read(blobs, sha)

    monkeypatch.setattr(git_source.BlobReader, "read", counting_read)
    second = build_from_git(store, source)
    changed = ["docs/guide.md", "docs/moved.md", "docs/new.md"]
    assert second.parsed == changed  # a rename is a delete plus an add
    assert sorted(read) == sorted(blob_shas(author, commit_b, changed).values())
    assert (second.added, second.changed) == (["docs/moved.md", "docs/new.md"], ["docs/guide.md"])
    assert second.removed == ["docs/gone.md", "docs/old.md"]
    assert second.unchanged == ["README.md", "docs/api/client.md", "docs/same.rst"]
    assert not second.full and second.written
    assert manifest(cache)["commit_hash"] == commit_b

    # A fresh build of B (own clone area, own root) gives the same cache.
    monkeypatch.setenv("XDG_CACHE_HOME", str(env / "xdg-fresh"))
    fresh = build_from_git(IndexStore(env / "root-fresh"), source, full=True)
    assert fresh.full
    assert snapshot(cache) == snapshot(env / "root-fresh" / "acme-widgets")
    docs_b = sorted(set(docs_a) - {"docs/gone.md", "docs/old.md"} | {"docs/moved.md",
                                                                     "docs/new.md"})
    assert manifest(cache)["file_hashes"] == blob_shas(author, commit_b, docs_b)
    assert sorted(p for p in snapshot(cache) if p not in ("manifest.json", "search.idx")) == docs_b

    read.clear()
    third = build_from_git(store, source)
    assert third.parsed == [] and not third.written and read == []


def test_ref_branch_tag_and_commit(env: Path) -> None:
    author, bare = make_remote(env)
    commit_a = git(author, "rev-parse", "HEAD")
    git(author, "tag", "-a", "v1", "-m", "v1")
    git(author, "push", "-q", str(bare), "v1")
    commit_b = advance(author, bare)
    git(author, "branch", "stable", commit_a)
    git(author, "push", "-q", str(bare), "stable")
    store = IndexStore(env / "root")
    url = bare.as_uri()

    # each ref its own cache (source_identity); --replace moves one cache to another ref
    assert build_from_git(store, url, ref="v1").key == "acme-widgets@v1"
    assert manifest(env / "root" / "acme-widgets@v1")["commit_hash"] == commit_a
    assert build_from_git(store, url).key == "acme-widgets"  # the remote HEAD (main) = B
    assert manifest(env / "root" / "acme-widgets")["commit_hash"] == commit_b
    back = build_from_git(store, url, ref="stable", name="acme-widgets", replace=True)
    assert back.parsed == ["docs/gone.md", "docs/guide.md", "docs/old.md"]  # incremental
    assert manifest(env / "root" / "acme-widgets")["commit_hash"] == commit_a
    named = build_from_git(store, url, ref=commit_b[:10], name="pinned")
    assert named.key == "pinned"
    m = manifest(env / "root" / "pinned")
    assert (m["commit_hash"], m["owner"], m["name"]) == (commit_b, "acme", "widgets")


def test_skips_symlinks_submodules_and_big_files(env: Path) -> None:
    files = dict(FILES_A)
    big = "# Big\n\n" + "word " * 400 + "\n"
    files["docs/big.md"] = big
    author, bare = make_remote(env, files)
    os.symlink("../README.md", author / "docs/link.md")
    os.symlink("/etc/hostname", author / "docs/outside.md")
    git(author, "add", "-A")
    head = git(author, "rev-parse", "HEAD")
    git(author, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/lib")
    git(author, "commit", "-q", "-m", "links")
    git(author, "push", "-q", str(bare), "main")

    report = build_from_git(IndexStore(env / "root"), bare.as_uri(), max_bytes=1000,
                            everything=True)  # (vendor/ is no documentation folder)
    assert report.skipped == [
        ("docs/big.md", f"over the size cap ({len(big)} > 1000 bytes)"),
        ("docs/link.md", "symlink not followed"),
        ("docs/outside.md", "symlink not followed"),
        ("vendor/lib", "submodule not indexed"),
    ]
    assert "docs/link.md" not in manifest(env / "root" / "acme-widgets-all")["doc_files"]


def test_crlf_and_local_edits_do_not_leak(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (env / "home" / ".gitconfig").write_text("[core]\n\tautocrlf = true\n")
    files = dict(FILES_A)
    files[".gitattributes"] = "*.md text eol=crlf\ncrlf-blob.md -text\n"
    files["crlf-blob.md"] = "# Windows\r\n\r\nCommitted with CRLF.\r\n\r\n## Part\r\n\r\nText.\r\n"
    author, bare = make_remote(env, files)
    head = git(author, "rev-parse", "HEAD")
    # A checkout under this configuration has CRLF files: what must not leak.
    checkout = env / "checkout"
    git(env, "clone", "-q", str(bare), str(checkout))
    assert b"\r\n" in (checkout / "docs/guide.md").read_bytes()
    # Local edits in the source's work tree, staged and not, must not leak either.
    (author / "docs/guide.md").write_text("# Uncommitted\n\nlocal edit\n")
    git(author, "add", "docs/guide.md")
    (author / "README.md").write_text("# Dirty\n")

    build_from_git(IndexStore(env / "root"), author.as_uri(), everything=True)
    cache = env / "root" / f"{env.name}-author-all"  # owner: the URL's parent directory
    m = manifest(cache)
    assert m["commit_hash"] == head
    for path in m["doc_files"]:
        raw = (cache / path).read_bytes()
        assert b"\r" not in raw
        committed = subprocess.run(["git", "cat-file", "blob", f"{head}:{path}"], cwd=author,
                                   capture_output=True, check=True).stdout
        assert raw == committed.replace(b"\r\n", b"\n")
        assert m["file_hashes"][path] == git(author, "rev-parse", f"{head}:{path}")
    assert (cache / "crlf-blob.md").read_bytes().startswith(b"# Windows\n\nCommitted")

    # Same commit built without autocrlf: the same cache.
    (env / "home" / ".gitconfig").write_text("[core]\n\tautocrlf = false\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(env / "xdg2"))
    build_from_git(IndexStore(env / "root2"), author.as_uri(), everything=True)
    assert snapshot(cache) == snapshot(env / "root2" / f"{env.name}-author-all")


def test_failed_update_leaves_cache_and_clone_alone(env: Path) -> None:
    author, bare = make_remote(env)
    store = IndexStore(env / "root")
    build_from_git(store, bare.as_uri())
    cache = env / "root" / "acme-widgets"
    before = snapshot(cache)
    advance(author, bare)
    with pytest.raises(GitSourceError, match="ref not found: nope"):
        build_from_git(store, bare.as_uri(), ref="nope")
    moved = bare.with_name("elsewhere.git")
    bare.rename(moved)
    with pytest.raises(GitSourceError, match="not a git repository"):
        build_from_git(store, bare.as_uri())
    assert snapshot(cache) == before
    moved.rename(bare)
    assert build_from_git(store, bare.as_uri()).parsed == ["docs/guide.md", "docs/moved.md",
                                                           "docs/new.md"]


def test_damaged_clone_is_replaced(env: Path) -> None:
    _, bare = make_remote(env)
    store = IndexStore(env / "root")
    build_from_git(store, bare.as_uri())
    clones = env / "xdg" / "doc-index" / "clones"
    (clone,) = clones.iterdir()
    (clone / "HEAD").unlink()
    (clone / "objects").rename(clone / "broken")
    report = build_from_git(store, bare.as_uri(), full=True)
    assert report.written and entries(clones) == [clone.name]


# --- the command line: errors are one line -------------------------------------------------

class _AuthRequired(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def auth_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AuthRequired)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _assert_one_line_error(done: subprocess.CompletedProcess[str], code: int, text: str,
                           env: Path) -> None:
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert text in lines[0]
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr
    assert "tok3n" not in done.stderr
    assert entries(env / "root") == []  # no cache, no lock
    assert entries(env / "xdg" / "doc-index" / "clones") == []  # no half clone


def test_cli_not_a_repository(env: Path) -> None:
    plain = env / "srv" / "acme" / "plain"
    plain.mkdir(parents=True)
    (plain / "README.md").write_text("# Hi\n")
    _assert_one_line_error(run_cli("build", plain.as_uri()), 6, "not a git repository", env)
    _assert_one_line_error(run_cli("build", (env / "missing.git").as_uri()), 6,
                           "not a git repository", env)


def test_cli_unreachable_url(env: Path) -> None:
    done = run_cli("build", "http://user:s3cret@127.0.0.1:1/acme/widgets.git")
    _assert_one_line_error(done, 6, "cannot reach http://127.0.0.1:1/acme/widgets.git", env)


def test_cli_authentication_failure_never_prompts(env: Path, auth_server: str) -> None:
    done = run_cli("build", f"http://{auth_server}/acme/private.git")
    _assert_one_line_error(done, 6, "authentication failed", env)
    done = run_cli("build", f"http://tok3n@{auth_server}/acme/private.git")
    _assert_one_line_error(done, 6, "authentication failed", env)


def test_cli_missing_ref(env: Path) -> None:
    _, bare = make_remote(env)
    done = run_cli("build", bare.as_uri(), "--ref", "no-such-branch")
    _assert_one_line_error(done, 6, "ref not found: no-such-branch", env)
    done = run_cli("build", bare.as_uri(), f"--ref=--upload-pack=touch {env / 'pwned'}")
    _assert_one_line_error(done, 6, "ref not found", env)
    assert not (env / "pwned").exists()


def test_cli_bad_name_is_usage_error(env: Path) -> None:
    _, bare = make_remote(env)
    _assert_one_line_error(run_cli("build", bare.as_uri(), "--name", "../x"), 1,
                           "invalid cache name", env)


def test_cli_build_and_update(env: Path) -> None:
    author, bare = make_remote(env)
    done = run_cli("build", str(bare))
    assert done.returncode == 0, done.stderr
    assert "acme-widgets: built (full)" in done.stderr and "6 added" in done.stderr
    advance(author, bare)
    done = run_cli("build", bare.as_uri())
    assert done.returncode == 0, done.stderr
    assert "2 added, 1 changed, 2 removed, 3 unchanged" in done.stderr


def test_concurrent_first_builds_share_one_clone(env: Path) -> None:
    _, bare = make_remote(env)
    cmd = [sys.executable, "-m", "doc_index.cli", "build", bare.as_uri()]
    procs = [subprocess.Popen(cmd, cwd=MAIN, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], results
    assert len(entries(env / "xdg" / "doc-index" / "clones")) == 1
    # The build lock goes with the builds (the store's area keeps the parse cache).
    assert [e for e in entries(env / "root") if e != ".doc-index-tmp"] == ["acme-widgets"]


def test_scp_like_urls_are_git_sources(env: Path) -> None:
    from doc_index.build import looks_like_git

    assert looks_like_git("deploy@git.example.com:team/docs.git")
    assert looks_like_git("git@github.com:pallets/flask.git")
    odd = env / "me@host:dir"
    odd.mkdir()
    assert not looks_like_git(str(odd))  # an existing directory stays a directory
