"""The ``context`` CLI and the tools behind it: arguments, exit codes, output bytes,
inspect_cache and list_caches. v0 semantics are in ``tests/compat``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import build, write_tree

from doc_index.foundation.errors import ContextError, spec_message
from doc_index.server import context_cli
from doc_index.server import spec_texts as tools
from doc_index.store.v0_build import build_v0_cache

COMPAT_CACHES = Path(__file__).parent / "compat" / "context-engine-compat" / "fixtures" / "v0"
MINIMAL = COMPAT_CACHES / "caches" / "minimal"
CLI = [sys.executable, "-m", "doc_index.server.context_cli"]


def run(*args: str | os.PathLike[str], **env: str) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [*CLI, *(os.fspath(arg) for arg in args)], capture_output=True, env=full_env, timeout=120
    )


def main(capfdbinary: pytest.CaptureFixture[bytes], *args: str | Path) -> tuple[int, bytes, bytes]:
    code = context_cli.main([os.fspath(arg) for arg in args])
    out, err = capfdbinary.readouterr()
    return code, out, err


# --- usage and exit codes ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["frob"],
        ["resolve"],
        ["resolve", "--cache", "c", "--query", "q"],
        ["resolve", "--cache", "c", "--query", "q", "--budget", "1", "--format", "xml"],
        ["resolve", "--cach", "c", "--query", "q", "--budget", "1"],
        ["inspect", "--cache", "c", "--extra"],
        ["list-caches"],
        ["build", "--sources", "s"],
        ["resolve", "--cache", "c", "--query", "q", "--budget", "--format"],
    ],
)
def test_usage_errors_exit_1_with_one_error_line(
    capfdbinary: pytest.CaptureFixture[bytes], args: list[str]
) -> None:
    code, out, err = main(capfdbinary, *args)
    assert code == 1
    assert out == b""
    assert err.startswith(b"error: ")
    assert err.count(b"\n") == 1 and err.endswith(b"\n")


def test_usage_error_in_a_real_process() -> None:
    proc = run("resolve", "--cache", "c")
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert proc.stderr == b"error: the following arguments are required: --query, --budget\n"


def test_help_exits_0(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = main(capfdbinary, "resolve", "--help")
    assert code == 0
    assert b"--budget" in out


@pytest.mark.parametrize(
    "budget", ["abc", "-1", "10000001", "1.5", "1e3", "", " 5", "99999999999999999999999", "٣"]
)
def test_bad_budget_exits_3(capfdbinary: pytest.CaptureFixture[bytes], budget: str) -> None:
    code, out, err = main(
        capfdbinary, "resolve", "--cache", MINIMAL, "--query", "q", "--budget", budget
    )
    assert (code, out, err) == (3, b"", b"error: Budget is invalid\n")


def test_budget_is_checked_before_the_cache(tmp_path: Path) -> None:
    proc = run("resolve", "--cache", tmp_path / "missing", "--query", "q", "--budget", "-1")
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, b"", b"error: Budget is invalid\n")


@pytest.mark.parametrize("budget", ["0", "10000000", "007"])
def test_budget_bounds(capfdbinary: pytest.CaptureFixture[bytes], budget: str) -> None:
    code, out, _ = main(
        capfdbinary, "resolve", "--cache", MINIMAL, "--query", "", "--budget", budget
    )
    assert code == 0
    assert json.loads(out)["selection"]["budget"] == int(budget)


def test_pretty_format(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    args = ("resolve", "--cache", MINIMAL, "--query", "hello", "--budget", "50")
    _, compact, _ = main(capfdbinary, *args)
    code, pretty, _ = main(capfdbinary, *args, "--format", "pretty")
    assert code == 0
    expected = json.dumps(json.loads(compact), indent=2, ensure_ascii=False) + "\n"
    assert pretty == expected.encode()
    assert compact == tools.resolve(MINIMAL, "hello", 50).encode()


def test_output_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "café.md").write_bytes("Ünïcødé café 日本".encode())
    build_v0_cache(tmp_path / "src", tmp_path / "c", force=False)
    proc = run(
        "resolve", "--cache", tmp_path / "c", "--query", "CAFÉ", "--budget", "100",
        LC_ALL="C", LANG="C", PYTHONIOENCODING="ascii", PYTHONUTF8="0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert '"content":"Ünïcødé café 日本"'.encode() in proc.stdout
    assert '"query":"CAFÉ"'.encode() in proc.stdout
    assert proc.stdout == tools.resolve(tmp_path / "c", "CAFÉ", 100).encode()


def test_query_that_is_not_utf8_is_invalid_query() -> None:
    proc = subprocess.run(
        [*map(os.fsencode, CLI), b"resolve", b"--cache", bytes(MINIMAL), b"--query", b"\xff",
         b"--budget", b"5"],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, b"", b"error: Query is invalid\n")


def test_unexpected_exception_is_internal_error_without_traceback(
    capfdbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> str:
        raise RuntimeError("bug")

    monkeypatch.setattr(tools, "list_caches", boom)
    code, out, err = main(capfdbinary, "list-caches", "--root", ".")
    assert (code, out, err) == (7, b"", b"error: Internal error\n")


def test_os_error_is_io_error(
    capfdbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*args: object, **kwargs: object) -> str:
        raise PermissionError(13, "denied")

    monkeypatch.setattr(tools, "inspect_cache", unreadable)
    code, out, err = main(capfdbinary, "inspect", "--cache", ".")
    assert (code, out, err) == (6, b"", b"error: I/O error occurred\n")


def test_closed_stdout_gives_no_traceback() -> None:
    proc = subprocess.Popen(
        [*CLI, "resolve", "--cache", os.fspath(MINIMAL), "--query", "x", "--budget", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) in (0, 6)
    assert b"Traceback" not in err


def test_context_error_messages_are_canonical(
    capfdbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    (tmp_path / "manifest.json").write_bytes(b"{")
    code, out, err = main(
        capfdbinary, "resolve", "--cache", tmp_path, "--query", "", "--budget", "1"
    )
    assert (code, out, err) == (5, b"", b"error: Cache exists but is invalid\n")
    assert spec_message("cache_invalid") == "Cache exists but is invalid"


# --- inspect_cache -----------------------------------------------------------------------


def inspect(cache: Path) -> dict[str, object]:
    text = tools.inspect_cache(cache)
    assert text.endswith("\n") and "\n" not in text[:-1] and ": " not in text
    return json.loads(text)


def test_inspect_counts_regular_files_directly_in_the_cache(tmp_path: Path) -> None:
    manifest = b'{"cache_version": "sha256:abc", "document_count": 7, "extra": 1}'
    (tmp_path / "manifest.json").write_bytes(manifest)
    (tmp_path / "data.bin").write_bytes(b"x" * 100)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ignored").write_bytes(b"x" * 1000)
    os.symlink(tmp_path / "data.bin", tmp_path / "link")
    text = tools.inspect_cache(tmp_path)
    assert text == (
        '{"cache_version":"sha256:abc","document_count":7,'
        f'"total_bytes":{len(manifest) + 100},"valid":true}}\n'
    )


def test_inspect_is_the_cli_bytes(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, err = main(capfdbinary, "inspect", "--cache", MINIMAL)
    assert (code, err) == (0, b"")
    assert out == tools.inspect_cache(MINIMAL).encode()


@pytest.mark.parametrize(
    ("manifest", "version", "count"),
    [
        (None, "", 0),
        (b"not json", "", 0),
        (b"[1]", "", 0),
        (b'{"document_count": 3}', "", 3),
        (b'{"cache_version": "v"}', "v", 0),
        (b'{"cache_version": "v", "document_count": -1}', "v", 0),
        (b'{"cache_version": "v", "document_count": true}', "v", 0),
        (b'{"cache_version": 5, "document_count": 2}', "", 2),
    ],
)
def test_inspect_bad_manifest_is_not_valid(
    tmp_path: Path, manifest: bytes | None, version: str, count: int
) -> None:
    if manifest is not None:
        (tmp_path / "manifest.json").write_bytes(manifest)
    size = len(manifest or b"")
    assert inspect(tmp_path) == {
        "cache_version": version,
        "document_count": count,
        "total_bytes": size,
        "valid": False,
    }


def test_inspect_manifest_symlink_is_read_but_not_counted(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_bytes(b'{"cache_version": "v", "document_count": 1}')
    (tmp_path / "c").mkdir()
    os.symlink(tmp_path / "real.json", tmp_path / "c" / "manifest.json")
    assert inspect(tmp_path / "c") == {
        "cache_version": "v",
        "document_count": 1,
        "total_bytes": 0,
        "valid": True,
    }


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_inspect_missing_cache(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        (tmp_path / "c").write_bytes(b"{}")
    with pytest.raises(ContextError) as caught:
        tools.inspect_cache(tmp_path / "c")
    assert caught.value.code == "cache_missing"
    proc = run("inspect", "--cache", tmp_path / "c")
    assert (proc.returncode, proc.stdout, proc.stderr) == (4, b"", b"error: Cache does not exist\n")


# --- list_caches -------------------------------------------------------------------------


def test_list_caches(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for name in ["b", "a", "é", "Z", "a-b", ".doc-index-tmp", "with-dir-manifest", "with-link"]:
        (root / name).mkdir(parents=True)
    (root / "a" / "manifest.json").write_bytes(b"not even json")
    (root / "with-dir-manifest" / "manifest.json").mkdir()
    os.symlink(root / "a" / "manifest.json", root / "with-link" / "manifest.json")
    (root / "file.json").write_bytes(b"{}")
    (root / "x.lock").write_bytes(b"")
    os.symlink(root / "a", root / "linked-dir")
    os.mkdir(os.path.join(os.fsencode(root), b"bad-\xff"))
    text = tools.list_caches(root)
    assert json.loads(text) == {
        "caches": [
            {"path": "Z", "has_manifest": False},
            {"path": "a", "has_manifest": True},
            {"path": "a-b", "has_manifest": False},
            {"path": "b", "has_manifest": False},
            {"path": "with-dir-manifest", "has_manifest": False},
            {"path": "with-link", "has_manifest": False},
            {"path": "é", "has_manifest": False},
        ]
    }
    assert text.startswith('{"caches":[{"path":"Z","has_manifest":false},')
    assert '"é"' in text


def test_list_caches_empty_root(tmp_path: Path) -> None:
    assert tools.list_caches(tmp_path) == '{"caches":[]}\n'


def test_list_caches_cli(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = main(capfdbinary, "list-caches", "--root", MINIMAL.parent)
    assert code == 0
    assert out == tools.list_caches(MINIMAL.parent).encode()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_list_caches_missing_root(
    capfdbinary: pytest.CaptureFixture[bytes], tmp_path: Path, kind: str
) -> None:
    if kind == "file":
        (tmp_path / "root").write_bytes(b"")
    code, out, err = main(capfdbinary, "list-caches", "--root", tmp_path / "root")
    assert (code, out, err) == (4, b"", b"error: Cache does not exist\n")


def test_list_caches_leaves_out_the_stores_staging_area(
    capfdbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    """A build leaves the store's staging area (its locks) in the root: a directory, not a
    cache, so ``list-caches`` never names it."""
    root = tmp_path / "root"
    build(write_tree(tmp_path / "docs", {"a.md": "# A\n\ntext\n"}), root, name="a")
    folders = [p.name for p in root.iterdir() if p.is_dir()]
    assert len(folders) == 2 and "local-a" in folders  # the cache and the staging area
    code, out, err = main(capfdbinary, "list-caches", "--root", root)
    assert (code, out, err) == (0, b'{"caches":[{"path":"local-a","has_manifest":true}]}\n', b"")


# --- build -------------------------------------------------------------------------------


def test_build_reports_on_stderr_only(
    capfdbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    code, out, err = main(
        capfdbinary,
        "build",
        "--sources",
        COMPAT_CACHES / "documents" / "minimal",
        "--cache",
        tmp_path / "c",
    )
    version = json.loads((MINIMAL / "manifest.json").read_bytes())["cache_version"]
    assert (code, out) == (0, b"")
    assert err == f"Built cache: 2 documents, version {version}\n".encode()


# --- warm caches and native caches -------------------------------------------------------


def test_warm_resolve_reuses_the_load_and_notices_a_rebuild(tmp_path: Path) -> None:
    from doc_index.search.warm_caches import WarmCaches

    documents = COMPAT_CACHES / "documents"
    cache = tmp_path / "c"
    build_v0_cache(documents / "minimal", cache, force=False)
    warm = WarmCaches()
    cold = tools.resolve(cache, "hello", 100)
    assert tools.resolve(cache, "hello", 100, warm=warm) == cold
    assert tools.resolve(cache, "hello", 100, warm=warm) == cold
    assert (warm.loads, warm.hits) == (1, 1)
    build_v0_cache(documents / "tie_break", cache, force=True)
    rebuilt = tools.resolve(cache, "hello", 100, warm=warm)
    assert rebuilt == tools.resolve(cache, "hello", 100) != cold
    assert warm.loads == 2


def test_native_cache_through_the_cli(
    capfdbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    from conftest import SAMPLE_REPOS, build

    build(SAMPLE_REPOS / "mdkit-docs", tmp_path)
    cache = tmp_path / "local-mdkit-docs"
    code, out, err = main(
        capfdbinary, "resolve", "--cache", cache, "--query", "retry timeout", "--budget", "800"
    )
    assert (code, err) == (0, b"")
    assert out == tools.resolve(cache, "retry timeout", 800).encode()
    assert json.loads(out)["documents"]
    assert json.loads(tools.inspect_cache(cache))["valid"] is True
    assert json.loads(tools.list_caches(tmp_path))["caches"] == [
        {"path": "local-mdkit-docs", "has_manifest": True}
    ]


# --- build --force: only a Context Engine cache is replaced ------------------------------


def _not_caches(tmp_path: Path) -> dict[str, Path]:
    """Existing --cache targets that --force must leave alone, each holding a file."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "precious.txt").write_bytes(b"keep me")
    web = tmp_path / "web-app"  # a manifest.json that is not a v0 manifest
    web.mkdir()
    (web / "manifest.json").write_bytes(b'{"name": "app", "icons": []}')
    native = tmp_path / "native"  # a doc-index cache: not a Context Engine v0 cache
    native.mkdir()
    (native / "manifest.json").write_bytes(b'{"index_version": 1, "sections": []}')
    link = tmp_path / "link"  # a symlink to a real v0 cache: the link is not the cache
    build_v0_cache(COMPAT_CACHES / "documents" / "minimal", tmp_path / "real", force=False)
    link.symlink_to(tmp_path / "real")
    file = tmp_path / "file"
    file.write_bytes(b"keep me")
    return {"plain": plain, "web": web, "native": native, "link": link, "file": file}


@pytest.mark.parametrize("kind", ["plain", "web", "native", "link", "file"])
def test_force_replaces_only_a_context_engine_cache(tmp_path: Path, kind: str) -> None:
    target = _not_caches(tmp_path)[kind]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = run("build", "--sources", COMPAT_CACHES / "documents" / "tie_break",
               "--cache", target, "--force")
    assert (proc.returncode, proc.stdout) == (6, b""), proc.stderr
    line = proc.stderr.decode()
    assert line.count("\n") == 1 and line.startswith("error: "), line
    assert str(target) in line and "not a Context Engine cache" in line and "--cache" in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing deleted or added
    if kind in ("plain", "file"):
        precious = target / "precious.txt" if kind == "plain" else target
        assert precious.read_bytes() == b"keep me"


def test_force_still_replaces_a_context_engine_cache(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    build_v0_cache(COMPAT_CACHES / "documents" / "minimal", cache, force=False)
    proc = run("build", "--sources", COMPAT_CACHES / "documents" / "tie_break",
               "--cache", cache, "--force")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((cache / "manifest.json").read_bytes())["document_count"] == len(
        list((COMPAT_CACHES / "documents" / "tie_break").rglob("*.md"))
    )
