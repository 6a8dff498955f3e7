"""Cache identity: the manifest records its source, default names come from
it, ``--name`` is exact, and a build never silently replaces another source's cache."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import cache_files, manifest, run_cli, v0_cache_from, write_tree
from freezegun import freeze_time

import doc_index
from doc_index.render import listing
from doc_index.sources.git import parse_remote, remote_source
from doc_index.sources.identity import directory_source
from doc_index.sources.walk import scan_directory
from doc_index.store.index_store import IndexStore

# More than a heading and a few words: a one-line stub is never in an answer
# (search.packing).
DOC = {"guide.md": "# Guide\n\nHow to retry a request after a timeout, with a pause between "
                   "tries.\n"}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def committed(repo: Path, files: dict[str, str], origin: str | None = None) -> str:
    """A work tree holding ``files`` in one commit on ``main``; its HEAD."""
    write_tree(repo, files)
    git(repo, "init", "-q", "-b", "main")
    if origin is not None:
        git(repo, "remote", "add", "origin", origin)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "docs")
    return git(repo, "rev-parse", "HEAD")


def bare_remote(base: Path, owner: str, name: str, files: dict[str, str]) -> Path:
    author = base / f"author-{name}"
    committed(author, files)
    bare = base / "srv" / owner / f"{name}.git"
    bare.parent.mkdir(parents=True, exist_ok=True)
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    git(author, "push", "-q", str(bare), "main")
    return bare


def cli_build(source: Path | str, root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli("build", str(source), "--root", str(root), *args)


def caches(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("."))


def one_error(done: subprocess.CompletedProcess[bytes], code: int) -> str:
    assert done.returncode == code, done.stderr
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_two_folders_named_docs_build_two_caches(env: Path) -> None:
    a = write_tree(env / "alpha" / "docs", DOC)
    b = write_tree(env / "beta" / "docs", {"other.md": "# Other\n\nSomething else.\n"})
    root = env / "root"
    assert cli_build(a, root).returncode == 0
    done = cli_build(b, root)
    assert done.returncode == 0, done.stderr
    assert b"1 added, 0 changed, 0 removed" in done.stderr
    assert caches(root) == ["local-alpha-docs", "local-beta-docs"]
    assert manifest(root / "local-alpha-docs")["doc_files"] == ["guide.md"]
    assert manifest(root / "local-beta-docs")["doc_files"] == ["other.md"]
    assert manifest(root / "local-alpha-docs")["source"] == {
        "kind": "directory", "location": str(a.resolve()), "ref": None, "commit": None}


def test_another_source_never_replaces_a_cache_without_replace(env: Path) -> None:
    a = write_tree(env / "alpha" / "docs", DOC)
    b = write_tree(env / "beta" / "docs", {"other.md": "# Other\n\nSomething else.\n"})
    root = env / "root"
    assert cli_build(a, root, "--name", "docs").returncode == 0
    before = cache_files(root / "docs")
    line = one_error(cli_build(b, root, "--name", "docs"), 1)
    assert line == (f"error: cache 'docs' holds directory {a.resolve()}, not directory "
                    f"{b.resolve()}: build with --name NAME to keep both, or --replace to "
                    "replace it")
    assert cache_files(root / "docs") == before
    assert caches(root) == ["docs"]
    # --full is no way around it; --replace is
    one_error(cli_build(b, root, "--name", "docs", "--full"), 1)
    assert cache_files(root / "docs") == before
    done = cli_build(b, root, "--name", "docs", "--replace")
    assert done.returncode == 0, done.stderr
    assert b"1 added, 0 changed, 1 removed" in done.stderr
    m = manifest(root / "docs")
    assert m["doc_files"] == ["other.md"] and m["source"]["location"] == str(b.resolve())
    assert not (root / "docs" / "guide.md").exists()


def test_a_context_engine_v0_cache_is_never_replaced_without_replace(env: Path) -> None:
    """A v0 cache (``context build``'s) has no doc-index header to compare: it is another
    kind of cache, refused like another source (a damaged doc-index cache is rebuilt)."""
    a = write_tree(env / "alpha" / "docs", DOC)
    root = env / "root"
    root.mkdir()
    shutil.move(v0_cache_from(env, DOC), root / "docs")
    before = cache_files(root / "docs")
    line = one_error(cli_build(a, root, "--name", "docs"), 1)
    assert line == (f"error: cache 'docs' holds a Context Engine v0 cache, not directory "
                    f"{a.resolve()}: build with --name NAME to keep both, or --replace to "
                    "replace it")
    assert cache_files(root / "docs") == before
    done = cli_build(a, root, "--name", "docs", "--replace")
    assert done.returncode == 0, done.stderr
    assert manifest(root / "docs")["source"]["location"] == str(a.resolve())


def test_the_same_source_again_stays_incremental(env: Path) -> None:
    a = write_tree(env / "alpha" / "docs", DOC)
    root = env / "root"
    assert cli_build(a, root).returncode == 0
    done = cli_build(a, root)
    assert done.returncode == 0, done.stderr
    assert b"up to date" in done.stderr and b"0 added, 0 changed, 0 removed, 1 unchanged" \
        in done.stderr
    # the same folder by another spelling (relative, through a symlink) is the same source
    (env / "link").symlink_to(env / "alpha")
    done = cli_build(env / "link" / "docs", root, "--name", "local-alpha-docs")
    assert done.returncode == 0, done.stderr
    assert b"0 added" in done.stderr


def test_name_is_exact_for_local_and_git_sources(env: Path) -> None:
    a = write_tree(env / "alpha" / "docs", DOC)
    bare = bare_remote(env, "pallets", "flask", DOC)
    root = env / "root"
    assert cli_build(a, root, "--name", "flask").returncode == 0
    assert cli_build(bare.as_uri(), root, "--name", "flask-2.3").returncode == 0
    assert caches(root) == ["flask", "flask-2.3"]
    m = manifest(root / "flask-2.3")
    assert (m["owner"], m["name"], m["source"]["kind"]) == ("pallets", "flask", "git")
    one_error(cli_build(a, root, "--name", ".hidden"), 1)
    one_error(cli_build(a, root, "--name", "a/b"), 1)


def test_a_ref_gets_its_own_cache_and_keeps_the_default_branch_one(env: Path) -> None:
    bare = bare_remote(env, "pallets", "flask", DOC)
    author = env / "author-flask"
    main = git(author, "rev-parse", "HEAD")
    git(author, "tag", "2.3.0")
    write_tree(author, {"guide.md": "# Guide\n\nRevised.\n"})
    git(author, "commit", "-qam", "B")
    git(author, "push", "-q", str(bare), "main", "2.3.0")
    head = git(author, "rev-parse", "HEAD")
    root = env / "root"
    url = bare.as_uri()
    assert cli_build(url, root).returncode == 0
    before = cache_files(root / "pallets-flask")
    done = cli_build(url, root, "--ref", "2.3.0")
    assert done.returncode == 0, done.stderr
    assert caches(root) == ["pallets-flask", "pallets-flask@2.3.0"]
    assert cache_files(root / "pallets-flask") == before
    tagged = manifest(root / "pallets-flask@2.3.0")
    assert tagged["source"] == {"kind": "git", "location": url, "ref": "2.3.0", "commit": main}
    assert manifest(root / "pallets-flask")["source"] == {
        "kind": "git", "location": url, "ref": None, "commit": head}
    # the name with '@' works everywhere a name does
    done = run_cli("resolve", "pallets-flask@2.3.0", "retry", "--root", str(root))
    assert done.returncode == 0 and b"How to retry" in done.stdout
    # another ref into the same name is another source
    line = one_error(cli_build(url, root, "--ref", "main", "--name", "pallets-flask@2.3.0"), 1)
    assert f"holds git {url} (ref 2.3.0), not git {url} (ref main)" in line


def test_a_work_tree_with_origin_is_named_from_it(env: Path) -> None:
    proj = env / "checkout"
    head = committed(proj, {"README.md": "# Flask\n\nA web framework.\n",
                            "docs/guide.md": DOC["guide.md"],
                            "doc/build/index.md": "# Built\n\ntracked sources.\n"},
                     origin="https://github.com/pallets/flask.git")
    root = env / "root"
    for source in (proj, proj / "docs", proj / "doc" / "build"):
        done = cli_build(source, root)
        assert done.returncode == 0, done.stderr
    assert caches(root) == ["pallets-flask", "pallets-flask-doc-build", "pallets-flask-docs"]
    m = manifest(root / "pallets-flask-docs")
    assert m["source"] == {"kind": "git-work-tree", "location": str((proj / "docs").resolve()),
                           "ref": "main", "commit": head}
    assert (m["owner"], m["name"]) == ("pallets", "flask")
    # another branch of the same checkout is the same source: incremental, ref updated
    git(proj, "switch", "-q", "-c", "feature")
    done = cli_build(proj / "docs", root)
    assert done.returncode == 0, done.stderr
    assert b"0 added, 0 changed, 0 removed, 1 unchanged" in done.stderr
    assert manifest(root / "pallets-flask-docs")["source"]["ref"] == "feature"


def test_a_work_tree_without_origin_is_named_as_a_plain_folder(env: Path) -> None:
    proj = env / "proj"
    committed(proj, {"docs/guide.md": DOC["guide.md"]})
    assert directory_source((proj / "docs").resolve()).key == "local-proj-docs"
    assert directory_source(proj.resolve()).key == f"local-{env.name}-proj"
    assert directory_source(proj.resolve()).kind == "git-work-tree"


def test_a_cache_of_an_older_version_is_replaced_only_with_replace(env: Path) -> None:
    """A manifest without ``source`` (written before sources were recorded) says only its
    owner and name, which an untrusted work tree's ``origin`` can claim: no build replaces
    it without --replace, not even from a work tree named like it."""
    remote = bare_remote(env, "pallets", "flask", DOC)
    root = env / "root"
    # pallets-flask as doc-index wrote it before sources were recorded, from the real remote
    scan = scan_directory(write_tree(env / "checkout", DOC))
    IndexStore(root).update_index("pallets-flask", "pallets", "flask", scan)
    assert "source" not in manifest(root / "pallets-flask")
    before = cache_files(root / "pallets-flask")
    # a work tree whose origin names pallets/flask, holding other docs
    hostile = env / "hostile"
    committed(hostile, {"guide.md": "# Guide\n\nRun this instead.\n"},
              origin="https://github.com/pallets/flask.git")
    error = one_error(cli_build(hostile, root), 1)
    assert "built before doc-index recorded sources" in error and "--replace" in error
    # the real source, too: nothing proves which one built it
    one_error(cli_build(f"file://{remote}", root), 1)
    assert cache_files(root / "pallets-flask") == before
    done = cli_build(f"file://{remote}", root, "--replace")
    assert done.returncode == 0, done.stderr
    assert manifest(root / "pallets-flask")["source"]["location"] == f"file://{remote}"
    done = cli_build(f"file://{remote}", root)  # recorded now: its own source again
    assert done.returncode == 0, done.stderr
    one_error(cli_build(hostile, root), 1)


def test_a_damaged_cache_is_replaced_only_with_replace(env: Path) -> None:
    """A manifest whose header cannot be read names no source: a build from a work tree
    named like the cache does not take it over without --replace."""
    docs = write_tree(env / "docs", DOC)
    root = env / "root"
    assert cli_build(docs, root, "--name", "pallets-flask").returncode == 0
    path = root / "pallets-flask" / "manifest.json"
    path.write_bytes(path.read_bytes()[:100])
    hostile = env / "hostile"
    committed(hostile, {"guide.md": "# Guide\n\nRun this instead.\n"},
              origin="https://github.com/pallets/flask.git")
    error = one_error(cli_build(hostile, root), 1)
    assert "holds no readable doc-index manifest" in error
    assert path.read_bytes() == (root / "pallets-flask" / "manifest.json").read_bytes()
    one_error(cli_build(docs, root, "--name", "pallets-flask"), 1)
    done = cli_build(docs, root, "--name", "pallets-flask", "--replace")
    assert done.returncode == 0, done.stderr
    assert manifest(root / "pallets-flask")["source"]["location"] == str(docs.resolve())
    # an empty folder in its place holds nothing to lose: built without --replace
    shutil.rmtree(root / "pallets-flask")
    (root / "pallets-flask").mkdir()
    assert cli_build(docs, root, "--name", "pallets-flask").returncode == 0


def test_the_recorded_location_of_a_url_has_no_credentials() -> None:
    remote = parse_remote("https://user:t0ken@example.com/acme/widgets.git?private_token=s3")
    record = remote_source(remote, "v1").record("abc")
    assert record == {"kind": "git", "location": "https://example.com/acme/widgets.git",
                      "ref": "v1", "commit": "abc"}
    assert "t0ken" not in json.dumps(record) and "s3" not in json.dumps(record)
    assert remote_source(remote, "release/2.3").key == "acme-widgets@release-2.3"


def test_cache_version_does_not_depend_on_the_location(env: Path) -> None:
    a = write_tree(env / "alpha" / "docs", DOC)
    b = write_tree(env / "beta" / "docs", DOC)
    root = env / "root"
    assert cli_build(a, root).returncode == 0
    assert cli_build(b, root).returncode == 0
    one, two = manifest(root / "local-alpha-docs"), manifest(root / "local-beta-docs")
    assert one["cache_version"] == two["cache_version"]
    assert one["source"] != two["source"]


def test_a_folder_whose_path_is_not_utf8_records_a_readable_source(env: Path) -> None:
    raw = env / "proj\udcff" / "docs"  # the bytes b"proj\xff": not UTF-8
    write_tree(raw, DOC)
    root = env / "root"
    done = cli_build(raw, root, "--name", "odd")
    assert done.returncode == 0, done.stderr
    m = json.loads((root / "odd" / "manifest.json").read_bytes().decode("utf-8"))
    assert m["source"]["location"] == f"{env.resolve()}/proj\\xff/docs"
    done = run_cli("inspect", "--cache", str(root / "odd"), module="doc_index.server.context_cli")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["valid"] is True  # strict readers accept the manifest


# --- list and inspect, for people and for scripts --------------------------------------------

NOON = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)


def _columns(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_list_and_inspect_for_people(env: Path) -> None:
    a = write_tree(env / "alpha" / "docs", DOC)
    bare = bare_remote(env, "pallets", "flask", DOC)
    commit = git(env / "author-flask", "rev-parse", "HEAD")
    root = env / "root"
    with freeze_time("2026-01-01 09:00:00"):
        doc_index.DocIndex(root).build(a)
        doc_index.DocIndex(root).build(bare.as_uri(), ref="main")
    (root / "empty").mkdir()  # a directory without a manifest: an invalid cache
    caches = [cache.info() for cache in doc_index.DocIndex(root).caches()]
    lines = listing.list_text(caches, root, now=NOON).splitlines()
    assert [_columns(line) for line in lines] == [
        ["NAME", "SOURCE", "REF", "COMMIT", "SECTIONS", "TOKENS", "SIZE", "AGE"],
        ["empty", "invalid: the manifest is missing, unreadable or damaged", "-", "-", "-", "-",
         "-", "-"],
        ["local-alpha-docs", f"directory {a.resolve()}", "-", "-", "1", "20",
         listing.size_text(caches[1].size_bytes), "3 h ago"],
        ["pallets-flask@main", f"git {bare.as_uri()}", "main", commit[:7], "1", "20",
         listing.size_text(caches[2].size_bytes), "3 h ago"],
    ]
    cache = doc_index.DocIndex(root).cache("pallets-flask@main")
    details = listing.details_text(cache.info(), NOON)
    assert details == (
        "name:          pallets-flask@main\n"
        "format:        doc-index cache\n"
        "valid:         yes\n"
        f"source:        git {bare.as_uri()}\n"
        "ref:           main\n"
        f"commit:        {commit}\n"
        "repo:          pallets/flask\n"
        "sections:      1\n"
        "tokens:        20\n"
        f"size:          {listing.size_text(caches[2].size_bytes)} "
        f"({caches[2].size_bytes:,} bytes in all; total_bytes {caches[2].total_bytes:,}: the "
        "files at its top)\n"
        "indexed at:    2026-01-01T09:00:00.000000 UTC (3 h ago)\n"
        f"cache_version: {caches[2].cache_version}\n"
    )
    # the CLI prints the same (its age is from the real clock)
    done = run_cli("list", "--root", str(root))
    assert done.returncode == 0 and done.stderr == b""
    *table, meaning = done.stdout.decode().splitlines()  # the last line: meaning or why not
    assert meaning == "meaning: off: turned off by DOC_INDEX_SEMANTIC=off (unset it to answer by "\
        "meaning too)"
    shown = [_columns(line) for line in table]
    assert [row[:7] for row in shown] == [row[:7] for row in
                                          (_columns(line) for line in lines)]
    done = run_cli("inspect", "pallets-flask@main", "--root", str(root))
    assert done.returncode == 0 and done.stdout.decode().splitlines()[:10] == \
        details.splitlines()[:10]


def test_list_and_inspect_json_for_scripts(env: Path) -> None:
    a = write_tree(env / "alpha" / "docs", DOC)
    root = env / "root"
    doc_index.DocIndex(root).build(a)
    v0 = v0_cache_from(env, DOC)
    os.rename(v0, root / "v0")
    done = run_cli("list", "--root", str(root), "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)["caches"]
    assert [c["name"] for c in listed] == ["local-alpha-docs", "v0"]
    first = listed[0]
    assert list(first) == ["name", "format", "valid", "source", "repo", "commit", "sections",
                           "tokens", "total_bytes", "size_bytes", "indexed_at", "cache_version",
                           "problem", "vectors"]
    assert first["format"] == "doc-index" and first["valid"] is True
    assert first["source"] == {"kind": "directory", "location": str(a.resolve()), "ref": None,
                               "commit": None}
    assert (first["sections"], first["tokens"], first["commit"]) == (1, 20, None)
    assert listed[1]["format"] == "context-engine-v0" and listed[1]["tokens"] is None
    done = run_cli("inspect", "local-alpha-docs", "--root", str(root), "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == first
    # the spec outputs are unchanged: context list-caches / inspect
    ctx = run_cli("list-caches", "--root", str(root), module="doc_index.server.context_cli")
    assert json.loads(ctx.stdout) == {"caches": [
        {"path": "local-alpha-docs", "has_manifest": True}, {"path": "v0", "has_manifest": True}]}


def test_list_on_damaged_caches_gives_a_line_each(env: Path) -> None:
    root = env / "root"
    doc_index.DocIndex(root).build(write_tree(env / "alpha" / "docs", DOC), name="good")
    good = (root / "good" / "manifest.json").read_bytes()
    for name, data in (("truncated", good[:40]), ("list", b"[]"),
                       ("bad-source", good.replace(b'"kind":"directory"', b'"kind":7'))):
        shutil.copytree(root / "good", root / name)
        (root / name / "manifest.json").write_bytes(data)
    done = run_cli("list", "--root", str(root))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    rows = {row[0]: row for row in map(_columns, done.stdout.decode().splitlines()[1:-1])}
    assert sorted(rows) == ["bad-source", "good", "list", "truncated"]
    assert rows["truncated"][1].startswith("invalid") and rows["list"][1].startswith("invalid")
    assert rows["bad-source"][1] == "unknown: the manifest's source record is malformed"
    for name in rows:
        done = run_cli("inspect", name, "--root", str(root))
        assert done.returncode == 0 and done.stderr == b"", done.stderr


def test_control_characters_in_a_location_are_escaped_in_every_line(env: Path) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J\r\x85\u2028\x7f"
    a = write_tree(env / f"p{hostile}" / "docs", DOC)
    root = env / "root"
    done = cli_build(a, root)
    assert done.returncode == 0, done.stderr
    [name] = caches(root)
    assert name.isprintable()  # the default name keeps letters, digits, '.', '-', '_'
    other = write_tree(env / "other" / "docs", DOC)
    outputs = [run_cli("list", "--root", str(root)).stdout,
               run_cli("inspect", name, "--root", str(root)).stdout,
               one_error(cli_build(other, root, "--name", name), 1).encode()]
    for out in outputs:
        text = out.decode()
        assert "\\x1b]0;owned" in text, text
        assert [c for c in text if c != "\n" and not c.isprintable()] == [], text


# --------------------------------------------------------------------------- hostile identities
# A URL that does not parse, a work tree whose origin does not parse, a recorded source or
# commit that holds terminal controls: a usage error or another source, never the URL's
# credentials or a raw control character on the terminal.


SECRET = "s3cr3t-t0ken"
# urlsplit refuses both (its ValueError quotes the URL, user info and all)
UNPARSEABLE = [f"https://user:{SECRET}@[x/owner/repo",
               f"https://user:{SECRET}@ex\u2100ample.com/owner/repo"]


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


# --------------------------------------------------------------------------- names from origin
# A work tree's origin names its cache from its spelling and the work tree's top alone:
# never from the current directory, the user's home, or a symlink the file system resolves.


WORK_TREE_DOC = {"docs/guide.md": "# Guide\n\nHow to retry a request after a timeout.\n"}


def work_tree(env: Path, origin: str) -> Path:
    tree = write_tree(env / "wt" / "proj", WORK_TREE_DOC)
    for args in (["init", "-q"], ["config", "remote.origin.url", origin]):
        subprocess.run(["git", *args], cwd=tree, check=True)
    return tree


def built_names(env: Path, tree: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    root = env / "root"
    monkeypatch.chdir(cwd)  # run_cli's process starts here
    done = run_cli("build", str(tree / "docs"), "--root", str(root))
    assert done.returncode == 0, done.stderr
    return {p.name for p in root.iterdir() if not p.name.startswith(".")}


@pytest.mark.parametrize("origin", ["../mirror:v2", "host:owner", "~/mirror:v2"])
def test_the_cache_name_from_origin_does_not_depend_on_the_current_directory(
        env: Path, monkeypatch: pytest.MonkeyPatch, origin: str) -> None:
    tree = work_tree(env, origin)
    here, deeper = env / "elsewhere", env / "elsewhere" / "host:owner"
    deeper.mkdir(parents=True)
    first = built_names(env, tree, here, monkeypatch)
    second = built_names(env, tree, deeper, monkeypatch)
    assert first == second and len(first) == 1, (first, second)
    [name] = first
    assert "elsewhere" not in name and "home" not in name, name


def test_a_relative_origin_is_named_from_the_top_without_following_symlinks(
        env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = work_tree(env, "loop")
    (tree / "loop").symlink_to("loop")
    assert built_names(env, tree, env, monkeypatch) == {"proj-loop-docs"}
