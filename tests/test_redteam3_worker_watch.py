"""Red-team regression (T3 item 2): the dead-worker watch of a build's parse pool watched
every multiprocessing child that appeared while the pool started, so a child another
thread started meanwhile (a second library build's pool, in the same process) was taken
for a parse worker, and its normal exit failed the build with "a parse worker died"
(two threads building two caches: 1 to 3 of 60 builds failed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import SAFETY_TIMEOUT

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
