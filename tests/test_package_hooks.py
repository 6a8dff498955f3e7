"""``hook install`` in a project also syncs when a lockfile changes in a pull: a real git
repository, a real pull, the hook's background run, an index on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import caches_only, run_cli, wait_for
from package_servers import SimpleIndex, sdist
from test_git_hooks import finished_runs, git
from test_package_build import pkg_env  # noqa: F401 (a fixture)

from doc_index.hooks import LOG_NAME


def test_pull_that_changes_a_lockfile_syncs(pkg_env: Path,  # noqa: F811
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with SimpleIndex() as index:
        for version in ("1.0.0", "1.1.0"):
            index.add("alpha", f"alpha-{version}.tar.gz",
                      sdist("alpha", version, {"README.md": f"# alpha {version}\n\nText.\n"}))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        author = pkg_env / "author"
        author.mkdir()
        git(author, "init", "-q", "-b", "main")
        (author / "README.md").write_text("# App\n\nThe app.\n")
        (author / "requirements.txt").write_text("alpha==1.0.0\n")
        git(author, "add", "-A")
        git(author, "commit", "-q", "-m", "A")
        up = pkg_env / "up.git"
        git(pkg_env, "init", "-q", "--bare", "-b", "main", str(up))
        git(author, "push", "-q", str(up), "main")
        work = pkg_env / "work"
        git(pkg_env, "clone", "-q", str(up), str(work))
        root = pkg_env / "root"
        done = run_cli("hook", "install", str(work))
        assert done.returncode == 0, done.stderr
        assert b"lockfiles: a pull or checkout that changes them" in done.stderr

        (author / "README.md").write_text("# App\n\nThe app, changed.\n")
        git(author, "commit", "-qam", "B")
        git(author, "push", "-q", str(up), "main")
        git(work, "pull", "-q")
        wait_for(lambda: finished_runs(work) >= 1, "hook run #1")
        log = (work / ".git" / LOG_NAME).read_text()
        assert "lockfiles changed" not in log  # a pull that leaves them alone: no sync
        assert [k for k in caches_only(root) if "@" in k] == []

        (author / "requirements.txt").write_text("alpha==1.1.0\n")
        git(author, "commit", "-qam", "C")
        git(author, "push", "-q", str(up), "main")
        git(work, "pull", "-q")
        wait_for(lambda: finished_runs(work) >= 2, "hook run #2")
        log = (work / ".git" / LOG_NAME).read_text()
        assert "post-merge: lockfiles changed: doc-index sync" in log, log
        assert "built      alpha@1.1.0" in log
        assert "alpha@1.1.0" in caches_only(root)
