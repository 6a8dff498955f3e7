"""``doc-index hook install|uninstall``: a real ``git pull`` in a clone updates the cache.

The hooks start the build in the background, so the tests wait for the hook log to say a
build finished. HOME, XDG_CACHE_HOME and DOC_INDEX_ROOT point into the tmp directory.
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, wait_for

from doc_index.foundation.file_lock import BuildLock
from doc_index.hooks import HOOKS, LOCK_NAME, LOG_NAME, ORIG_SUFFIX, hook_script, is_ours

MAIN = Path(__file__).resolve().parents[1]


def git(cwd: Path, *args: str, check: bool = True,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, input=stdin,
                          check=False, timeout=60)
    if check:
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doc_index.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=MAIN, check=False)


def page(title: str, body: str) -> str:
    return f"# {title}\n\n{body}\n\n## Details\n\nMore about {title}.\n"


def setup_repos(base: Path) -> tuple[Path, Path]:
    """``author`` pushes to the bare ``up.git``; ``work`` is the user's clone of it."""
    author = base / "author"
    author.mkdir()
    git(author, "init", "-q", "-b", "main")
    (author / "docs").mkdir()
    for name in ("intro", "guide", "faq"):
        (author / "docs" / f"{name}.md").write_text(page(name.title(), f"The {name} page."))
    (author / "README.md").write_text(page("Project", "Read me first."))
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "A")
    up = base / "up.git"
    git(base, "init", "-q", "--bare", "-b", "main", str(up))
    git(author, "push", "-q", str(up), "main")
    work = base / "work"
    git(base, "clone", "-q", str(up), str(work))
    return author, work


def upstream_change(author: Path) -> None:
    (author / "docs" / "guide.md").write_text(page("Guide", "The guide page, now with retries."))
    (author / "docs" / "new.md").write_text(page("New", "A new page about webhooks."))
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "B")
    git(author, "push", "-q", str(author.parent / "up.git"), "main")


def finished_runs(work: Path) -> int:
    log = work / ".git" / LOG_NAME
    return log.read_text().count(": finished (exit ") if log.exists() else 0


def wait_runs(work: Path, count: int) -> str:
    wait_for(lambda: finished_runs(work) >= count, f"hook build #{count} finished")
    return (work / ".git" / LOG_NAME).read_text()


def git_and_all_it_started(cwd: Path, *args: str,
                           env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``git ARGS``, returning once git and every process it started (a hook's background
    build included) have exited: they all inherit the write end of a pipe, whose read end
    sees EOF when the last of them is gone."""
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              pass_fds=(write_end,), check=False, timeout=SAFETY_TIMEOUT)
        os.close(write_end)
        ready, _, _ = select.select([read_end], [], [], SAFETY_TIMEOUT)
        assert ready and os.read(read_end, 1) == b"", "a process started by git is still running"
    finally:
        os.close(read_end)
    return done


def only_cache(root: Path) -> Path:
    """The one cache under ``root``: the hook rebuilds the cache ``doc-index build
    <checkout>`` made (named from the checkout's origin), never a second one."""
    caches = [p for p in root.iterdir() if not p.name.startswith(".")]
    assert len(caches) == 1, caches
    return caches[0]


def manifest(root: Path) -> dict:
    return json.loads((only_cache(root) / "manifest.json").read_bytes())


def tree_state(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Name -> (bytes or link target, mode) of every entry of a hooks directory."""
    state: dict[str, tuple[bytes, int]] = {}
    if not directory.exists():
        return state
    for entry in sorted(directory.iterdir()):
        st = entry.lstat()
        if stat.S_ISLNK(st.st_mode):
            state[entry.name] = (os.readlink(entry).encode(), st.st_mode)
        else:
            state[entry.name] = (entry.read_bytes(), st.st_mode)
    return state


def test_pull_runs_incremental_build(env: Path) -> None:
    author, work = setup_repos(env)
    root = env / "root"
    assert run_cli("build", str(work)).returncode == 0
    done = run_cli("hook", "install", str(work))
    assert done.returncode == 0, done.stderr
    for hook in HOOKS:
        path = work / ".git" / "hooks" / hook
        assert is_ours(path) and os.access(path, os.X_OK)
        text = path.read_text()
        assert f"'{sys.executable}'" in text or f" {sys.executable} " in text
        assert str(root) in text  # the root is fixed at install time

    upstream_change(author)
    # The pull returns while the build it started cannot even begin: the build runs in
    # the background, git never waits for it.
    with BuildLock(work / ".git" / LOCK_NAME):
        pulled = git(work, "pull", "-q")
        assert pulled.returncode == 0
        assert finished_runs(work) == 0
    log = wait_runs(work, 1)
    assert "post-merge: doc-index build" in log
    assert "1 added, 1 changed, 0 removed, 3 unchanged" in log
    m = manifest(root)
    assert m["commit_hash"] == git(work, "rev-parse", "HEAD").stdout.strip()
    assert "docs/new.md" in m["doc_files"]
    assert b"retries" in (only_cache(root) / "docs" / "guide.md").read_bytes()
    assert only_cache(root).name == f"{env.name}-up"  # origin <env>/up.git


def test_existing_hooks_are_chained_and_restored(env: Path) -> None:
    author, work = setup_repos(env)
    hooks = work / ".git" / "hooks"
    calls = env / "calls.txt"
    (hooks / "post-merge").write_text(f'#!/bin/sh\necho "merge $*" >> {calls}\n')
    (hooks / "post-checkout").write_text("#!/bin/sh\nexit 3\n")
    (hooks / "post-rewrite").write_text(
        f'#!/bin/sh\necho "rewrite $*" >> {calls}\ncat >> {calls}\n')
    for hook in HOOKS:
        (hooks / hook).chmod(0o750)
    before = tree_state(hooks)
    # Without doc-index a failing post-checkout makes git checkout fail.
    failing = git(work, "checkout", "-q", "-b", "probe", check=False).returncode
    assert failing != 0

    assert run_cli("hook", "install", str(work)).returncode == 0
    for hook in HOOKS:
        assert (hooks / (hook + ORIG_SUFFIX)).read_bytes() == before[hook][0]
        assert is_ours(hooks / hook)

    upstream_change(author)
    assert git(work, "checkout", "-q", "main", check=False).returncode == failing
    wait_runs(work, 1)
    assert git(work, "pull", "-q").returncode == 0
    wait_runs(work, 2)
    assert "merge 0" in calls.read_text()  # the previous post-merge ran, with its argument
    old_head = git(work, "rev-parse", "HEAD").stdout.strip()
    assert git(work, "commit", "-q", "--amend", "-m", "B amended").returncode == 0
    new_head = git(work, "rev-parse", "HEAD").stdout.strip()
    assert f"{old_head} {new_head}" in calls.read_text()  # its stdin reached it
    assert git(work, "checkout", "-q", "-b", "other", check=False).returncode == failing
    log = wait_runs(work, 4)
    assert log.count("finished (exit 0)") == 4
    m = manifest(env / "root")
    assert m["commit_hash"] == new_head and "docs/new.md" in m["doc_files"]

    done = run_cli("hook", "uninstall", str(work))
    assert done.returncode == 0, done.stderr
    assert "restored" in done.stderr
    assert tree_state(hooks) == before
    assert not (work / ".git" / LOG_NAME).exists()


def test_install_is_idempotent_and_uninstall_restores(env: Path) -> None:
    _, work = setup_repos(env)
    hooks = work / ".git" / "hooks"
    pristine = tree_state(hooks)
    assert run_cli("hook", "install", str(work)).returncode == 0
    once = tree_state(hooks)
    inodes = {h: (hooks / h).stat().st_ino for h in HOOKS}
    done = run_cli("hook", "install", str(work))
    assert done.returncode == 0 and done.stderr.count("unchanged") == 3
    assert tree_state(hooks) == once
    assert {h: (hooks / h).stat().st_ino for h in HOOKS} == inodes
    assert not any(name.endswith(ORIG_SUFFIX) for name in once)

    done = run_cli("hook", "uninstall", str(work))
    assert done.returncode == 0 and done.stderr.count("removed") == 3
    assert tree_state(hooks) == pristine
    done = run_cli("hook", "uninstall", str(work))
    assert done.returncode == 0 and done.stderr.count("not installed") == 3


def test_install_refreshes_an_older_wrapper_and_keeps_foreign_hooks(env: Path) -> None:
    _, work = setup_repos(env)
    hooks = work / ".git" / "hooks"
    assert run_cli("hook", "install", str(work), "--root", str(env / "r1")).returncode == 0
    done = run_cli("hook", "install", str(work), "--root", str(env / "r2"))
    assert done.returncode == 0 and done.stderr.count("updated") == 3
    assert str(env / "r2") in (hooks / "post-merge").read_text()
    # A foreign tool replaced our wrapper while our saved hook is still there: refuse.
    (hooks / "post-merge.doc-index-orig").write_text("#!/bin/sh\n")
    (hooks / "post-merge").write_text("#!/bin/sh\necho foreign\n")
    before = tree_state(hooks)
    done = run_cli("hook", "install", str(work))
    assert done.returncode == 6 and done.stderr.startswith("error: cannot install post-merge")
    assert len(done.stderr.splitlines()) == 1
    assert tree_state(hooks) == before  # nothing changed, not even the other hooks
    done = run_cli("hook", "uninstall", str(work))
    assert "post-merge: left alone" in done.stderr
    assert (hooks / "post-merge").read_text() == "#!/bin/sh\necho foreign\n"


def test_core_hooks_path_is_respected(env: Path) -> None:
    author, work = setup_repos(env)
    git(work, "config", "core.hooksPath", ".githooks")
    default = tree_state(work / ".git" / "hooks")
    done = run_cli("hook", "install", str(work / "docs"))  # any directory of the checkout
    assert done.returncode == 0, done.stderr
    assert all(is_ours(work / ".githooks" / h) for h in HOOKS)
    assert tree_state(work / ".git" / "hooks") == default
    upstream_change(author)
    git(work, "pull", "-q")
    wait_runs(work, 1)
    assert "docs/new.md" in manifest(env / "root")["doc_files"]
    assert run_cli("hook", "uninstall", str(work)).returncode == 0
    assert not (work / ".githooks").exists()  # install created it, uninstall removed it


def test_failing_build_never_fails_git(env: Path) -> None:
    """A root the build cannot use: ``hook install`` refuses it (nothing installed); one
    that turns bad later is one line in git's output, and git succeeds."""
    author, work = setup_repos(env)
    hooks = work / ".git" / "hooks"
    pristine = tree_state(hooks)
    blocker = env / "not-a-dir"
    blocker.write_text("a file where the root should be")
    refused = run_cli("hook", "install", str(work), "--root", str(blocker / "root"))
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        f"error: the cache root {blocker / 'root'} cannot be made: {blocker} is no directory: "
        f"the hooks would never rebuild it; fix: doc-index hook install --root DIR {work}; "
        "nothing was installed\n")
    assert tree_state(hooks) == pristine
    root = env / "later-a-file"
    assert run_cli("hook", "install", str(work), "--root", str(root)).returncode == 0
    root.write_text("a file where the root should be")
    upstream_change(author)
    pulled = git_and_all_it_started(work, "pull", "-q", env=dict(os.environ))
    log_path = work / ".git" / LOG_NAME
    assert pulled.returncode == 0 and pulled.stderr == (
        f"doc-index hook: the cache root {root} is not a directory: not rebuilt; fix: "
        f"doc-index hook install --root DIR {work} (log: {log_path})\n")
    assert finished_runs(work) == 0 and "post-merge: not started: the cache root" in \
        log_path.read_text()
    # DOC_INDEX_HOOK=0 skips the build entirely.
    env_off = dict(os.environ, DOC_INDEX_HOOK="0")
    done = git_and_all_it_started(work, "checkout", "-q", "-b", "x", env=env_off)
    assert (done.returncode, done.stderr) == (0, "")
    assert log_path.read_text().count("not started") == 1


def test_hook_command_errors(env: Path) -> None:
    plain = env / "plain"
    plain.mkdir()
    bare = env / "bare.git"
    git(env, "init", "-q", "--bare", str(bare))
    for target, text in ((plain, "not a git repository"), (env / "missing", "not a git repo"),
                         (bare, "not a git checkout")):
        done = run_cli("hook", "install", str(target))
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1
        assert text in done.stderr


def test_script_quotes_paths() -> None:
    text = hook_script("post-merge", "/opt/my env/bin/python", Path("/tmp/it's root"))
    assert "'/opt/my env/bin/python' -I -m doc_index.cli.hook_runner run" in text
    assert "'/tmp/it'\"'\"'s root'" in text


# The runner's names in hooks earlier doc-index versions installed (tests/test_layers.py's
# compatibility entry points): each still runs the runner.
OLD_RUNNERS = ("doc_index.store.git_hooks", "doc_index.hook_runner")


@pytest.mark.parametrize("old_runner", OLD_RUNNERS)
def test_hooks_an_earlier_doc_index_installed_still_rebuild(env: Path, old_runner: str) -> None:
    """Hooks installed before the runner moved name an older module: that module still
    runs the hook runner, so a pull still rebuilds the cache."""
    author, work = setup_repos(env)
    root = env / "root"
    assert run_cli("hook", "install", str(work)).returncode == 0
    for hook in HOOKS:
        path = work / ".git" / "hooks" / hook
        text = path.read_text()
        assert "-m doc_index.cli.hook_runner " in text
        path.write_text(text.replace("-m doc_index.cli.hook_runner ", f"-m {old_runner} "))
    (author / "docs" / "new.md").write_text(page("New", "A page added upstream."))
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "new page")
    git(author, "push", "-q", str(author.parent / "up.git"), "main")
    done = git(work, "pull", "-q")
    assert done.returncode == 0 and "doc-index" not in done.stderr, done.stderr
    assert "finished (exit 0)" in wait_runs(work, 1)
    assert "docs/new.md" in manifest(root)["doc_files"]


# Modules a pulled repository could plant at its top to be imported by a hook started there:
# stdlib modules the hook and the build import, doc-index's own package, its dependencies.
_PLANTED = ("argparse.py", "shlex.py", "signal.py", "subprocess.py", "json.py", "hashlib.py",
            "tempfile.py", "dataclasses.py", "typing.py", "pathlib.py", "sitecustomize.py",
            "doc_index/__init__.py", "git/__init__.py", "markdown_it/__init__.py",
            "docutils/__init__.py")


def test_hook_never_imports_the_work_trees_code(env: Path) -> None:
    """A pull brings modules that would shadow the stdlib and doc-index itself; the hook's
    build runs the installed doc-index (``python -I`` from /) and none of them runs."""
    author, work = setup_repos(env)
    root = env / "root"
    markers = env / "markers"
    markers.mkdir()
    assert run_cli("hook", "install", str(work)).returncode == 0
    for rel in _PLANTED:
        path = author / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        name = rel.replace("/", "_")
        path.write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    (author / "docs" / "planted.md").write_text(page("Planted", "A page next to the modules."))
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "plant")
    git(author, "push", "-q", str(author.parent / "up.git"), "main")
    assert git(work, "pull", "-q").returncode == 0
    wait_for(lambda: finished_runs(work) >= 1 or os.listdir(markers),
             "hook build finished or planted module run")
    assert sorted(os.listdir(markers)) == []
    assert "finished (exit 0)" in wait_runs(work, 1)
    assert "docs/planted.md" in manifest(root)["doc_files"]
    assert (work / "argparse.py").exists()  # the modules were there to be found


def test_hook_run_does_not_import_the_cli(env: Path) -> None:
    _, work = setup_repos(env)
    root = env / "root"
    probe = ("import sys\nfrom pathlib import Path\nfrom doc_index.cli import hook_runner\n"
             f"rc = hook_runner.run_hook('probe', Path({str(root)!r}), Path({str(work)!r}))\n"
             "print(rc, 'doc_index.cli.command' in sys.modules,"
             " 'doc_index.cli.build_command' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True,
                          cwd="/", timeout=120, check=False)
    assert done.stdout.splitlines()[-1] == "0 False False", done.stdout + done.stderr
    assert manifest(root)["doc_files"]


def test_hook_build_stuck_on_git_ends(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO ``.gitignore`` blocks the build's ``git ls-files`` forever; the deadline kills
    it, so the hook's build ends (exit 6) and releases the per-checkout lock."""
    _, work = setup_repos(env)
    assert run_cli("hook", "install", str(work), "--root", str(env / "root")).returncode == 0
    os.mkfifo(work / ".gitignore")
    monkeypatch.setenv("DOC_INDEX_GIT_TIMEOUT", "1")  # git never answers: any deadline fires
    done = git_and_all_it_started(work, "checkout", "-q", "-b", "x", env=dict(os.environ))
    assert done.returncode == 0
    log = wait_runs(work, 1)
    assert "git did not answer" in log and "finished (exit 6)" in log
