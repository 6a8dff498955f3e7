"""A hook whose build fails or would be refused says so in git's output.

Two clones of one repository both default to the same cache name. A real ``git pull``
in the second prints ONE line on its stderr naming the cause, the fix and the log, and
succeeds; ``hook install`` takes ``build``'s naming options (``--name``, ``--subdir``)
and the installed hooks remember them; a background build's failure is printed by the
next hook run, once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from test_git_hooks import (
    LOG_NAME,
    finished_runs,
    git,
    git_and_all_it_started,
    page,
    run_cli,
    setup_repos,
    tree_state,
    upstream_change,
    wait_runs,
)

from doc_index.hooks import HOOKS, is_ours


def second_clone(env: Path, name: str = "work2") -> Path:
    clone = env / name
    git(env, "clone", "-q", str(env / "up.git"), str(clone))
    return clone


def all_env() -> dict[str, str]:
    return dict(os.environ)


def test_two_clones_one_name_a_pull_says_so(env: Path) -> None:
    author, work = setup_repos(env)
    other = second_clone(env)
    root = env / "root"
    key = f"{env.name}-up"  # both clones' origin is <env>/up.git
    for clone in (work, other):
        assert run_cli("hook", "install", str(clone)).returncode == 0
    upstream_change(author)
    first = git_and_all_it_started(work, "pull", "-q", env=all_env())
    assert (first.returncode, first.stderr) == (0, "")
    assert "finished (exit 0)" in wait_runs(work, 1)
    built = (root / key / "manifest.json").read_bytes()

    pulled = git_and_all_it_started(other, "pull", "-q", env=all_env())
    log = other / ".git" / LOG_NAME
    assert pulled.returncode == 0
    assert pulled.stderr == (
        f"doc-index hook: cache '{key}' under {root} holds git work tree {work} (ref main), "
        f"not git work tree {other} (ref main): not rebuilt; fix: doc-index hook install "
        f"--name {key}-work2 {other} (log: {log})\n")
    assert (root / key / "manifest.json").read_bytes() == built  # the other clone's, kept
    assert finished_runs(other) == 0 and "post-merge: not started: cache" in log.read_text()

    # The fix it names works: the next pull builds the second clone's own cache.
    assert run_cli("hook", "install", "--name", f"{key}-work2", str(other)).returncode == 0
    (author / "docs" / "more.md").write_text(page("More", "Another page."))
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "C")
    git(author, "push", "-q", str(env / "up.git"), "main")
    again = git_and_all_it_started(other, "pull", "-q", env=all_env())
    assert (again.returncode, again.stderr) == (0, "")
    assert "finished (exit 0)" in wait_runs(other, 1)
    assert (root / f"{key}-work2" / "docs" / "more.md").is_file()
    assert (root / key / "manifest.json").read_bytes() == built


def test_install_refuses_a_name_another_clone_holds(env: Path) -> None:
    _, work = setup_repos(env)
    assert run_cli("build", str(work)).returncode == 0
    other = second_clone(env)
    hooks = other / ".git" / "hooks"
    before = tree_state(hooks)
    done = run_cli("hook", "install", str(other))
    key = f"{env.name}-up"
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: cache '{key}' under {env / 'root'} holds git work tree {work} (ref main), "
        f"not git work tree {other} (ref main): the hooks would never rebuild it; fix: "
        f"doc-index hook install --name {key}-work2 {other}; nothing was installed\n")
    assert tree_state(hooks) == before


def test_the_hooks_remember_the_naming_options(env: Path) -> None:
    author, work = setup_repos(env)
    root = env / "root"
    done = run_cli("hook", "install", str(work), "--name", "proj-docs", "--subdir", "docs")
    assert done.returncode == 0, done.stderr
    assert all(is_ours(work / ".git" / "hooks" / h) for h in HOOKS)
    upstream_change(author)
    assert git(work, "pull", "-q").stderr == ""
    log = wait_runs(work, 1)
    assert f"post-merge: doc-index build {work / 'docs'} --root {root} --name proj-docs" in log
    files = sorted(p.name for p in (root / "proj-docs").iterdir())
    assert files == ["faq.md", "guide.md", "intro.md", "manifest.json", "new.md", "search.idx"]
    # the same options again change nothing; others update the hooks
    again = run_cli("hook", "install", str(work), "--subdir", str(work / "docs"),
                    "--name", "proj-docs")
    assert again.returncode == 0 and again.stderr.count("unchanged") == 3
    other = run_cli("hook", "install", str(work))
    assert other.returncode == 0 and other.stderr.count("updated") == 3
    for bad, why in (("../elsewhere", "is not a folder inside the checkout"),
                     ("missing", "no such folder in the checkout")):
        (env / "elsewhere").mkdir(exist_ok=True)
        refused = run_cli("hook", "install", str(work), "--subdir", bad)
        assert refused.returncode == 1 and why in refused.stderr
        assert refused.stderr.count("\n") == 1


def test_a_failed_background_build_is_reported_by_the_next_hook(env: Path) -> None:
    """The build runs in the background (git never waits for it): its failure is printed
    once, by the next hook run, in that git command's output."""
    _, work = setup_repos(env)
    assert run_cli("hook", "install", str(work)).returncode == 0
    os.mkfifo(work / ".gitignore")  # the build's git ls-files blocks on it: killed, exit 6
    slow = {**all_env(), "DOC_INDEX_GIT_TIMEOUT": "1"}
    first = git_and_all_it_started(work, "checkout", "-q", "-b", "x", env=slow)
    assert (first.returncode, first.stderr) == (0, "")
    assert "finished (exit 6)" in wait_runs(work, 1)
    os.unlink(work / ".gitignore")
    second = git_and_all_it_started(work, "checkout", "-q", "main", env=all_env())
    log = work / ".git" / LOG_NAME
    assert second.returncode == 0
    assert re.fullmatch(
        r"doc-index hook: the cache rebuild after the last git checkout / git switch "
        r"\(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\) failed: git did not answer within 1 s for "
        + re.escape(str(work)) + r" \(killed\); [^\n]*; to see it again: doc-index build "
        + re.escape(f"{work} --root {env / 'root'} (log: {log})") + "\n",
        second.stderr), second.stderr
    assert "finished (exit 0)" in wait_runs(work, 2)
    third = git_and_all_it_started(work, "checkout", "-q", "x", env=all_env())
    assert (third.returncode, third.stderr) == (0, "")  # reported once; that build was fine
