"""Faults during builds: full disk, read-only roots, concurrent builds, readers mid-rebuild.

Every fault leaves the previous cache valid and byte-for-byte unchanged, the CLI prints one
``error:`` line (exit 6) and no traceback, and the next build leaves no staging leftovers.
Readers during a stream of rebuilds see generation A or generation B, never a mix, never
an error. The kill -9 loop lives in ``test_crash_safety.py``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import (
    SAFETY_TIMEOUT,
    build,
    cache_files,
    run_cli,
    store_leftovers,
    wait_for,
    without_indexed_at,
    write_tree,
)
from mcp_support import RawServer, python_argv

from doc_index.search import operations as search_tools
from doc_index.search.warm_caches import WarmCaches
from doc_index.server import spec_texts as tools
from doc_index.store import commit as commit_mod
from doc_index.store import parallel
from doc_index.store.cache_paths import resolve_cache_name
from doc_index.store.index_store import IndexStore
from doc_index.store.manifest import SectionSpool
from doc_index.store.native_cache import load_native_cache
from doc_index.store.search_index import IndexWriter

KEY = "local-src"
QUERY = "gamma retry setting"
BUDGET = 100_000


# --------------------------------------------------------------------------- helpers


def two_states(base: Path, files: int = 8) -> tuple[Path, Path]:
    """Two source trees with the same paths: some files equal, some different."""
    a, b = base / "a" / "src", base / "b" / "src"
    for state, target in ((0, a), (1, b)):
        tree: dict[str, str] = {}
        for i in range(files):
            changing = i % 2 == 0
            word = ("alpha", "omega")[state] if changing else "steady"
            tree[f"docs/page{i}.md"] = (
                f"# Page {i}\n\nIntro about the gamma setting of page {i}.\n\n"
                f"## Retry {i}\n\nThe retry setting is {word} {i} here; gamma applies.\n\n"
                + (f"## Extra {state}\n\ngamma retry extra {state}\n\n" if changing else "")
            )
        tree["guide/setup.rst"] = (
            "Setup\n=====\n\nThe gamma retry setting of the guide.\n\n"
            f"Details\n-------\n\nstate {['one', 'two'][state]} gamma\n"
        )
        write_tree(target, tree)
    return a, b


def clean_build(source: Path, tmp: Path) -> dict[str, bytes]:
    root = Path(tempfile.mkdtemp(dir=tmp))
    build(source, root, name="src", full=True)
    return without_indexed_at(cache_files(root / KEY))


def staging_is_empty(root: Path) -> bool:
    return not store_leftovers(root)


def one_error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The single ``error:`` line of a failed command (and nothing on stdout)."""
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.stdout == b"", proc.stdout
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def check_valid(cache_dir: Path) -> str:
    cache = load_native_cache(cache_dir)
    try:
        for i in range(len(cache.sections)):
            cache.section_text(i)
        return cache.cache_version
    finally:
        cache.close()


def cli_build(source: Path, root: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    # a and b are two states of one source: --replace lets the build swap them
    return run_cli("build", str(source), "--root", str(root), "--name", "local-src", "--replace",
                   *extra)


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    """A small tmpfs at ``mountpoint`` (needs root); the test is skipped when it cannot."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                           str(mountpoint)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)


def remount(mountpoint: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(mountpoint)], check=True,
                   capture_output=True)


# --------------------------------------------------------------------------- full disk


def _raise_enospc(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _fail_first_call(real: Callable[..., object]) -> Callable[..., object]:
    calls = {"n": 0}

    def wrapper(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 1:
            _raise_enospc()
        return real(*args, **kwargs)

    return wrapper


# (where, target object, attribute): every write the build makes before the swap.
WRITE_POINTS = [
    ("raw file", parallel, "write_raw"),
    ("section spool", SectionSpool, "add"),
    ("manifest", SectionSpool, "write_manifest"),
    ("search index", IndexWriter, "write"),
    ("fsync before the swap", commit_mod, "fsync_dir"),
    ("staging dir", commit_mod, "new_staging_dir"),
]


@pytest.mark.parametrize("where,target,attr", WRITE_POINTS, ids=[w[0] for w in WRITE_POINTS])
def test_enospc_at_each_write_leaves_previous_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, target: object, attr: str
) -> None:
    a, b = two_states(tmp_path)
    root = tmp_path / "root"
    build(a, root, name="src")
    before = cache_files(root / KEY)
    monkeypatch.setattr(target, attr, _fail_first_call(getattr(target, attr)))
    with pytest.raises(OSError) as info:
        build(b, root, name="src")
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert cache_files(root / KEY) == before
    check_valid(root / KEY)
    assert staging_is_empty(root)
    build(b, root, name="src")
    assert without_indexed_at(cache_files(root / KEY)) == clean_build(b, tmp_path)
    assert staging_is_empty(root)


_INJECT = """
import errno, os, sys
from doc_index.store.search_index import IndexWriter
def full(*a, **k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), sys.argv[-1])
IndexWriter.write = full
from doc_index.cli.command import main
sys.exit(main(sys.argv[1:-1]))
"""


def test_enospc_cli_prints_one_error_line(tmp_path: Path) -> None:
    a, b = two_states(tmp_path)
    root = tmp_path / "root"
    assert cli_build(a, root).returncode == 0
    before = cache_files(root / KEY)
    proc = subprocess.run(
        [sys.executable, "-c", _INJECT, "build", str(b), "--root", str(root), "--name", "local-src",
         "--replace", str(root / "search.idx")], capture_output=True, timeout=120)
    assert proc.returncode == 6
    assert "No space left on device" in one_error_line(proc)
    assert cache_files(root / KEY) == before
    assert staging_is_empty(root)


@pytest.mark.needs_root
def test_real_full_disk_on_tmpfs(tmp_path: Path) -> None:
    a, b = two_states(tmp_path)
    # A big but valid file that cannot fit next to the live cache.
    big = "".join(f"## Chunk {i}\n\ngamma words {i} " + "lorem ipsum dolor " * 40 + "\n\n"
                  for i in range(1500))
    write_tree(b, {"docs/big.md": big})
    with tmpfs(tmp_path / "disk", "1m") as disk:
        root = disk / "root"
        assert cli_build(a, root).returncode == 0
        before = cache_files(root / KEY)
        proc = cli_build(b, root)
        assert proc.returncode == 6, proc.stderr
        assert "No space left on device" in one_error_line(proc)
        assert cache_files(root / KEY) == before
        check_valid(root / KEY)
        assert staging_is_empty(root)
        # Space comes back: the next build succeeds and leaves nothing behind.
        (b / "docs" / "big.md").unlink()
        assert cli_build(b, root).returncode == 0
        assert without_indexed_at(cache_files(root / KEY)) == clean_build(b, tmp_path)
        assert staging_is_empty(root)


# --------------------------------------------------------------------------- read-only root


@pytest.mark.needs_root
def test_read_only_mount_build_fails_cleanly_and_serving_works(tmp_path: Path) -> None:
    a, b = two_states(tmp_path)
    with tmpfs(tmp_path / "ro", "4m") as disk:
        root = disk / "root"
        assert cli_build(a, root).returncode == 0
        expected = run_cli("resolve", "local-src", QUERY, "--budget", "500", "--root", str(root))
        assert expected.returncode == 0
        before = cache_files(root / KEY)
        remount(disk, "ro")
        try:
            proc = cli_build(b, root)
            assert proc.returncode == 6
            assert "Read-only file system" in one_error_line(proc)
            # A root that does not exist yet, on a read-only file system.
            proc = run_cli("build", str(b), "--root", str(disk / "new" / "root"))
            assert proc.returncode == 6
            one_error_line(proc)
            assert cache_files(root / KEY) == before
            # Serving never writes: every read command works on a read-only root.
            again = run_cli("resolve", "local-src", QUERY, "--budget", "500", "--root", str(root))
            assert again.returncode == 0 and again.stdout == expected.stdout
            ctx = run_cli("resolve", "--cache", str(root / KEY), "--query", QUERY, "--budget",
                          "500", module="doc_index.server.context_cli")
            assert ctx.returncode == 0 and ctx.stdout == expected.stdout
            for args in (("list", "--root", str(root)), ("inspect", KEY, "--root", str(root))):
                done = run_cli(*args)
                assert done.returncode == 0 and done.stderr == b"", done.stderr
            assert json.loads(run_cli("inspect", KEY, "--root", str(root), "--json").stdout)[
                "valid"]
        finally:
            remount(disk, "rw")
        assert cli_build(b, root).returncode == 0
        assert staging_is_empty(root)


@pytest.mark.unprivileged
def test_chmod_0555_root(tmp_path: Path) -> None:
    """A 0555 root refuses the build cleanly (one error line, the cache as it was) and still
    serves reads. As root the test runs without the permission bypass (``unprivileged``)."""
    a, b = two_states(tmp_path)
    root = tmp_path / "root"
    assert cli_build(a, root).returncode == 0
    before = cache_files(root / KEY)
    os.chmod(root, 0o555)
    os.chmod(root / KEY, 0o555)
    try:
        proc = cli_build(b, root)
        assert proc.returncode == 6, proc.stderr
        assert "Permission denied" in one_error_line(proc)
        assert cache_files(root / KEY) == before
        # Reading still works.
        proc = run_cli("resolve", KEY, QUERY, "--root", str(root))
        assert proc.returncode == 0, proc.stderr
    finally:
        os.chmod(root, 0o755)
        os.chmod(root / KEY, 0o755)


# --------------------------------------------------------------------------- concurrency


# ``doc-index build`` that says "lock busy" on stdout each time it finds a lock held.
_BUILD_REPORTING_A_BUSY_LOCK = """
import fcntl, sys
_flock = fcntl.flock
def flock(fd, operation):
    try:
        return _flock(fd, operation)
    except BlockingIOError:
        print("lock busy", flush=True)
        raise
fcntl.flock = flock
from doc_index.cli.command import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_held_lock_makes_the_second_build_wait(tmp_path: Path) -> None:
    a, b = two_states(tmp_path)
    root = tmp_path / "root"
    build(a, root, name="src")
    before = cache_files(root / KEY)
    builder = RawServer(python_argv(_BUILD_REPORTING_A_BUSY_LOCK) + [  # read line by line
        "build", str(b), "--root", str(root), "--name", "local-src", "--replace"])
    try:
        with IndexStore(root).lock(KEY):
            # Two refusals: the build reached the lock, found it held, and tried again
            # instead of going on.
            assert builder.recv_line() == b"lock busy\n"
            assert builder.recv_line() == b"lock busy\n"
            assert builder.proc.poll() is None
            assert cache_files(root / KEY) == before
        assert builder.proc.wait(timeout=SAFETY_TIMEOUT) == 0
    finally:
        builder.kill()
    assert without_indexed_at(cache_files(root / KEY)) == clean_build(b, tmp_path)


def _concurrent_builds(tmp_path: Path, rounds: int) -> int:
    a, b = two_states(tmp_path, files=24)
    root = tmp_path / "root"
    expected = [clean_build(a, tmp_path), clean_build(b, tmp_path)]
    for n in range(rounds):
        if n % 3 == 2:
            shutil.rmtree(root, ignore_errors=True)  # racing first builds too
        procs = [
            subprocess.Popen([sys.executable, "-m", "doc_index.cli", "build", str(src), "--root",
                              str(root), "--name", "local-src", "--replace",
                              *(["--full"] if n % 2 else [])],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for src in ((a, b) if n % 2 else (b, a))
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        check_valid(root / KEY)
        assert without_indexed_at(cache_files(root / KEY)) in expected
        assert staging_is_empty(root)
    return rounds


@pytest.mark.slow
def test_concurrent_builds_serialize_short(tmp_path: Path) -> None:
    assert _concurrent_builds(tmp_path, rounds=3) == 3


@pytest.mark.slow
def test_concurrent_builds_serialize_long(tmp_path: Path) -> None:
    rounds = _concurrent_builds(tmp_path, rounds=40)
    print(f"concurrent build pairs: {rounds}")


_BUILDER = """
import sys, time
from pathlib import Path
from doc_index.store.index_store import IndexStore
from doc_index.sources.walk import scan_directory
a, b, root, stop = (Path(p) for p in sys.argv[1:5])
store = IndexStore(root)
n = 0
while not stop.exists():
    n += 1
    store.update_index("local-src", "local", "src", scan_directory((a, b)[n % 2]),
                       full=n % 5 == 0)
    print(n, flush=True)
"""


class Rebuilder:
    """:data:`_BUILDER` in a subprocess, swapping A and B in ``root`` until stopped; counts
    the rebuilds it reports, so a test waits for rebuilds, not for time."""

    def __init__(self, a: Path, b: Path, root: Path, work: Path) -> None:
        self.stop = work / "stop"
        self.err_path = work / "builder.err"
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BUILDER, str(a), str(b), str(root), str(self.stop)],
                stdout=subprocess.PIPE, stderr=err)
        self.rebuilds = 0
        self._reader = threading.Thread(target=self._count, daemon=True)
        self._reader.start()

    def _count(self) -> None:
        assert self.proc.stdout is not None
        for _ in self.proc.stdout:
            self.rebuilds += 1

    def count(self) -> int:
        """Rebuilds so far (failing at once if the builder died)."""
        assert self.proc.poll() is None, self.err_path.read_bytes()
        return self.rebuilds

    def finish(self) -> tuple[int, bytes]:
        """Stop; (exit status, stderr)."""
        self.stop.touch()
        try:
            status = self.proc.wait(timeout=SAFETY_TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(SAFETY_TIMEOUT)
        return status, self.err_path.read_bytes()


class Readers:
    """Reader loops that record every answer (or failure) until told to stop."""

    def __init__(self, root: Path, answers: set[bytes], versions: set[str]) -> None:
        self.root = root
        self.answers = answers
        self.versions = versions
        self.stop = threading.Event()
        self.counts: dict[str, int] = {}
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def _record(self, who: str, problem: str | None) -> None:
        with self._lock:
            self.counts[who] = self.counts.get(who, 0) + 1
            if problem is not None and len(self.failures) < 20:
                self.failures.append(f"{who}: {problem}")

    def _check(self, who: str, out: bytes) -> None:
        self._record(who, None if out in self.answers else f"mixed answer {out[:300]!r}")

    def subprocess_loop(self, who: str, argv: list[str]) -> None:
        while not self.stop.is_set():
            proc = subprocess.run(argv, capture_output=True, timeout=120)
            if proc.returncode != 0 or proc.stderr:
                self._record(who, f"exit {proc.returncode}: {proc.stderr[-300:]!r}")
            else:
                self._check(who, proc.stdout)

    def warm_loop(self) -> None:
        warm = WarmCaches()
        while not self.stop.is_set():
            try:
                cache_dir = resolve_cache_name(self.root, KEY)
                out = tools.resolve(cache_dir, QUERY, BUDGET, warm=warm).encode()
            except Exception as exc:  # noqa: BLE001 - any failure is a finding
                self._record("warm", repr(exc) + repr(getattr(exc, "detail", "")))
            else:
                self._check("warm", out)

    def inspect_loop(self) -> None:
        while not self.stop.is_set():
            try:
                info = json.loads(tools.inspect_cache(self.root / KEY))
            except Exception as exc:  # noqa: BLE001
                self._record("inspect", repr(exc))
                continue
            ok = info["valid"] and info["cache_version"] in self.versions
            self._record("inspect", None if ok else f"inspect {info}")


def _readers_during_rebuilds(tmp_path: Path, rebuilds: int) -> dict[str, int]:
    """Every reader reads until ``rebuilds`` rebuilds have happened since they all started
    (and each has read at least 3 times)."""
    a, b = two_states(tmp_path, files=16)
    answers: set[bytes] = set()
    versions: set[str] = set()
    for src in (a, b):
        ref = Path(tempfile.mkdtemp(dir=tmp_path))
        build(src, ref, name="src")
        answers.add(tools.resolve(ref / KEY, QUERY, BUDGET).encode())
        versions.add(json.loads(tools.inspect_cache(ref / KEY))["cache_version"])
    assert len(answers) == 2 and len(versions) == 2
    root = tmp_path / "root"
    build(a, root, name="src")
    builder = Rebuilder(a, b, root, tmp_path)
    readers = Readers(root, answers, versions)
    threads = [
        threading.Thread(target=readers.subprocess_loop, args=(
            "context resolve",
            [sys.executable, "-m", "doc_index.server.context_cli", "resolve", "--cache",
             str(root / KEY), "--query", QUERY, "--budget", str(BUDGET)])),
        threading.Thread(target=readers.subprocess_loop, args=(
            "doc-index resolve",
            [sys.executable, "-m", "doc_index.cli", "resolve", KEY, QUERY, "--budget",
             str(BUDGET), "--root", str(root)])),
        threading.Thread(target=readers.warm_loop),
        threading.Thread(target=readers.inspect_loop),
    ]
    for t in threads:
        t.start()
    first = builder.rebuilds
    try:
        wait_for(lambda: builder.count() - first >= rebuilds and len(readers.counts) == 4
                 and min(readers.counts.values()) >= 3, f"{rebuilds} rebuilds while reading",
                 timeout=max(SAFETY_TIMEOUT, rebuilds * 2.0))
    finally:
        readers.stop.set()
        for t in threads:
            t.join(timeout=SAFETY_TIMEOUT)
        status, err = builder.finish()
    assert status == 0, err
    counts = dict(readers.counts, rebuilds=builder.rebuilds)
    assert not readers.failures, (counts, readers.failures)
    return counts


@pytest.mark.slow
def test_readers_during_rebuilds_short(tmp_path: Path) -> None:
    _readers_during_rebuilds(tmp_path, rebuilds=3)


@pytest.mark.slow
def test_readers_during_rebuilds_long(tmp_path: Path) -> None:
    counts = _readers_during_rebuilds(tmp_path, rebuilds=1000)
    print(f"readers during rebuilds: {counts}")


def test_inspect_reads_again_a_generation_replaced_while_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rebuilds land between inspect opening the cache and reading its manifest (the
    generation it opened is replaced, kept as the spare, then deleted by the next swap):
    inspect reads the new one, never says invalid."""
    a, b = two_states(tmp_path)
    ref = tmp_path / "ref"
    build(a, ref, name="src")
    expected = tools.inspect_cache(ref / KEY)
    root = tmp_path / "root"
    build(a, root, name="src")
    real_read = search_tools.read_regular
    rebuilt: list[int] = []

    def read_after_a_rebuild(dir_fd: int, relpath: str, **kwargs: object) -> bytes:
        if not rebuilt:
            rebuilt.extend(cli_build(state, root).returncode for state in (b, a))
        return real_read(dir_fd, relpath, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(search_tools, "read_regular", read_after_a_rebuild)
    assert tools.inspect_cache(root / KEY) == expected
    assert rebuilt == [0, 0]
