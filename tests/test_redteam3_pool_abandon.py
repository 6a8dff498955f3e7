"""Red-team regression (T3 item 2, F1): a parse worker killed while idle waits for its next
task holding the pool's task-queue lock. The dead-worker watch saw it, but leaving the pool
called ``Pool.terminate``, which takes that lock: the build hung for ever, holding its lock.
(The same hang, on the result queue's lock, made the dying-worker test of
test_redteam_parse_window.py hang about once in 30 runs under load.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import SAFETY_TIMEOUT

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
