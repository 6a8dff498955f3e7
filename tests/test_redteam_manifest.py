"""Red-team regressions for hostile manifests read back by the readers and the build."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli, write_tree

DOC = {"guide.md": "# Guide\n\nHow to retry a request after a timeout.\n"}


def test_a_manifest_header_nested_too_deeply_is_invalid_not_an_internal_error(
        env: Path) -> None:
    root = env / "root"
    docs = write_tree(env / "docs", DOC)
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    path = root / "n" / "manifest.json"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(path.read_text().replace("{", '{"deep":' + deep + ",", 1))
    done = run_cli("resolve", "n", "retry", "--budget", "500", "--root", str(root))
    assert done.returncode == 5, done.stderr  # cache_invalid
    assert done.stderr.decode().splitlines() == ["error: Cache exists but is invalid"]
    done = run_cli("resolve", "--cache", str(root / "n"), "--query", "retry",
                   "--budget", "500", module="doc_index.server.context_cli")
    assert done.returncode == 5, done.stderr
    # a build over it is a usage error (its source is unknown), not an internal error, and
    # with --replace a build
    done = run_cli("build", str(docs), "--root", str(root), "--name", "n")
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.decode().splitlines()) == 1
    assert b"no readable doc-index manifest" in done.stderr
    done = run_cli("build", str(docs), "--root", str(root), "--name", "n", "--replace")
    assert done.returncode == 0, done.stderr
    done = run_cli("resolve", "n", "retry", "--budget", "500", "--root", str(root))
    assert done.returncode == 0, done.stderr
