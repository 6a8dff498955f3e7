"""The build's parse pool (``store/parallel.py``): small files go in batches and the
results are the same, in job order, as parsing them one by one (unreadable files and big
ones included); the bytes in flight stay bounded; a worker that dies ends the build with an
error, never a hang, and only the pool's own workers are watched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, cache_files

from doc_index.store import parallel
from doc_index.store.parallel import Job, _parse_in_pool


def _jobs() -> list[Job]:
    jobs: list[Job] = []
    for i in range(400):
        text = f"# Page {i}\n\nbody {i} " + "word " * (i % 50) + "\n\n## More\n\nx\n"
        data = text.encode()
        jobs.append((f"d{i % 3}/p{i:03d}.md", lambda data=data: data, len(data)))
    big = ("# Big\n\n" + "many words here\n" * 40_000).encode()  # parsed first, on its own
    jobs.append(("e/big.md", lambda: big, len(big)))

    def unreadable() -> bytes:
        raise PermissionError("no")

    jobs.insert(123, ("d0/unreadable.md", unreadable, 10))
    return sorted(jobs, key=lambda job: job[0])


def test_batched_pool_results_equal_one_by_one(tmp_path: Path) -> None:
    jobs = _jobs()
    (tmp_path / "pool").mkdir()
    (tmp_path / "serial").mkdir()
    pooled = list(_parse_in_pool(jobs, tmp_path / "pool", 2))
    serial = list(_parse_in_pool(jobs, tmp_path / "serial", 0))
    assert [path for path, _ in pooled] == [path for path, _, _ in jobs]
    assert pooled == serial
    assert dict(pooled)["d0/unreadable.md"] == "unreadable (PermissionError)"
    assert cache_files(tmp_path / "pool") == cache_files(tmp_path / "serial")


def test_pool_reads_ahead_while_the_first_result_is_taken(tmp_path: Path) -> None:
    """The main process hands out batches only as it takes results: with a short window
    the workers waited on it (a fifth of a 30 MB build idle), so at least 8 batches per
    worker are out before the first result is taken."""
    reads: list[str] = []
    page = ("# Page\n\n" + "word " * 14_000 + "\n").encode()  # over BATCH_BYTES: one a batch

    def job(path: str) -> Job:
        def read() -> bytes:
            reads.append(path)
            return page
        return (path, read, len(page))

    results = _parse_in_pool([job(f"p{i:03d}.md") for i in range(60)], tmp_path, 2)
    first_path, _ = next(results)
    results.close()
    assert first_path == "p000.md"
    assert len(reads) >= 2 * 8


# --------------------------------------------------------------------------- a dead worker
# A parse worker killed while idle waits holding the pool's task-queue lock: leaving the
# pool must not take that lock (Pool.terminate does), or the build hangs holding its lock.


IDLE_KILL = r'''
import os, signal, sys, time
from pathlib import Path
from doc_index.store import parallel

def waits_for_a_task(pid):
    try:
        wchan = open(f"/proc/{pid}/wchan").read()
    except OSError:
        return True  # (no wchan here: kill it whatever it waits for)
    return wchan in ("", "0") or wchan.endswith("pipe_read")

def holding(batch, where):  # in the worker given the one batch: kill the other, idle one
    me, parent = os.getpid(), os.getppid()
    [other] = [int(p) for p in open(f"/proc/{parent}/task/{parent}/children").read().split()
               if int(p) != me]
    while not waits_for_a_task(other):  # until it waits for a task, the queue's lock held
        time.sleep(0.01)
    os.kill(other, signal.SIGKILL)
    while True:  # this batch never ends: only the watch can end the build
        time.sleep(1)

parallel.parse_batch = holding
page = b"# Page\n\n" + b"x" * 1000 + b"\n"
try:
    list(parallel._parse_in_pool([("p.md", lambda: page, len(page))], Path(sys.argv[1]), 2))
except ChildProcessError as exc:
    sys.exit(f"error: {exc}")
'''


def test_a_worker_killed_while_idle_ends_the_build_with_an_error(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", IDLE_KILL, str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=SAFETY_TIMEOUT)  # (before: for ever)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 1, err
    assert err.decode().splitlines() == ["error: a parse worker died"], err


# --------------------------------------------------------------------------- whose child
# The dead-worker watch watches the pool's own workers only: another multiprocessing child
# started meanwhile (a second library build's pool in the same process) exits normally
# without failing the build.


# A pool build where, while the pool starts, another multiprocessing child starts (as
# another thread's would) and exits normally while the build waits for its first result:
# the workers hold every result until that child has exited, and the helper thread lets
# it exit only once the build waits in ``_next``.
OTHER_CHILD_EXITS = """
import multiprocessing, os, sys, threading, time
from pathlib import Path
from doc_index.store import parallel

staging = Path(sys.argv[1])
go = staging.parent / "go"
parse = parallel.parse_batch


def held(batch, where):
    while not go.exists():
        time.sleep(0.01)
    return parse(batch, where)


parallel.parse_batch = held
read_end, write_end = os.pipe()
ctx = multiprocessing.get_context("fork")
pool = type(ctx).Pool
other = []


def pool_and_other_child(self, *args, **kwargs):
    child = ctx.Process(target=os.read, args=(read_end, 1))
    child.start()
    other.append(child)
    return pool(self, *args, **kwargs)


type(ctx).Pool = pool_and_other_child
main = threading.main_thread().ident


def waiting_in_next():
    frame = sys._current_frames().get(main)
    while frame is not None and frame.f_code.co_name != "_next":
        frame = frame.f_back
    return frame is not None


def let_the_other_child_exit():
    while not waiting_in_next():
        time.sleep(0.01)
    os.write(write_end, b"x")
    other[0].join()
    go.touch()


threading.Thread(target=let_the_other_child_exit, daemon=True).start()
page = b"# Page\\n\\n" + b"x" * 100_000 + b"\\n"
jobs = [(f"p{i:03d}.md", lambda: page, len(page)) for i in range(4)]
try:
    done = [path for path, _ in parallel._parse_in_pool(jobs, staging, 2)]
except ChildProcessError as exc:
    sys.exit(f"error: {exc}")
assert other[0].exitcode == 0, other[0].exitcode
print(len(done), "parsed")
"""


def test_another_childs_normal_exit_is_no_dead_parse_worker(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    done = subprocess.run([sys.executable, "-c", OTHER_CHILD_EXITS, str(staging)],
                          capture_output=True, timeout=SAFETY_TIMEOUT)
    assert (done.returncode, done.stdout) == (0, b"4 parsed\n"), done.stderr


# --------------------------------------------------------------------------- parse window
# The parse window holds a bounded number of bytes (MAX_IN_FLIGHT_BYTES, one batch per
# worker kept), whatever the files' sizes; a worker that dies is an error, not a hang.


FILE = b"# Page\n\n" + b"x" * 1_000_000 + b"\n"  # one file a batch


def test_bytes_read_ahead_of_the_results_taken_stay_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = 4 * len(FILE)
    monkeypatch.setattr(parallel, "MAX_IN_FLIGHT_BYTES", cap, raising=False)
    read = taken = most = 0

    def job(i: int) -> Job:
        def read_file() -> bytes:
            nonlocal read, most
            read += len(FILE)
            most = max(most, read - taken)
            return FILE
        return (f"p{i:03d}.md", read_file, len(FILE))

    jobs = [job(i) for i in range(40)]
    for n, (path, result) in enumerate(_parse_in_pool(jobs, tmp_path, 2)):
        assert path == jobs[n][0] and not isinstance(result, str), result
        taken += len(FILE)
    assert taken == 40 * len(FILE)
    assert most <= cap + 2 * len(FILE), most / len(FILE)


# A build's parse pool where the worker given p005.md dies as the OOM killer would kill it.
DYING_WORKER = """
import os, sys
from pathlib import Path
from doc_index.store import parallel

parse = parallel.parse_batch


def dying(batch, staging):
    if any(path == "p005.md" for path, _ in batch):
        os._exit(9)
    return parse(batch, staging)


parallel.parse_batch = dying
page = b"# Page\\n\\n" + b"x" * 100_000 + b"\\n"
jobs = [(f"p{i:03d}.md", lambda: page, len(page)) for i in range(20)]
try:
    for _ in parallel._parse_in_pool(jobs, Path(sys.argv[1]), 2):
        pass
except ChildProcessError as exc:
    sys.exit(f"error: {exc}")
"""


def test_a_parse_worker_that_dies_is_an_error_not_a_hang(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", DYING_WORKER, str(tmp_path)],
                          capture_output=True, timeout=SAFETY_TIMEOUT)  # (before: for ever)
    assert done.returncode == 1, done.stderr
    assert done.stderr.decode().splitlines() == ["error: a parse worker died"], done.stderr
