"""Wall time, CPU time and peak memory of a whole process and its children.

:func:`run_measured` starts a command and blocks in ``os.wait4`` on it. The kernel's
rusage of a reaped process holds the largest RSS of that process *and of every
descendant it waited for* (``ru_maxrss`` folds in the children's ``cmaxrss``), so a build
that parses in a ``multiprocessing`` pool reports the peak of the parent or of any worker,
whichever is larger, without polling. CPU time (user + system) covers the workers too: it
is the figure that other load on a shared machine disturbs least.

With ``sample_tree=True`` a thread also polls the RSS of the whole process tree with
psutil (every ``interval`` seconds) and keeps the largest *sum*, the memory the machine
needed at once (pages shared after fork are counted once per process, so this is an upper
bound).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessRun:
    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    tree_rss_bytes: int | None
    returncode: int
    stdout: bytes
    stderr: bytes


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_measured(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    sample_tree: bool = False,
    interval: float = 0.025,
    check: bool = True,
    preexec: Callable[[], None] | None = None,
) -> ProcessRun:
    """Run ``argv`` to completion; wall time from spawn to reap, rusage of the tree.
    ``preexec``: called in the child before it runs ``argv`` (a resource limit)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        peak_tree = 0
        stop = threading.Event()
        started = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=dict(env) if env is not None else None, cwd=cwd,
                                preexec_fn=preexec)
        sampler: threading.Thread | None = None
        if sample_tree:
            def sample() -> None:
                nonlocal peak_tree
                while not stop.is_set():
                    peak_tree = max(peak_tree, _tree_rss(proc.pid))
                    stop.wait(interval)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        if sampler is not None:
            sampler.join()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: "
                           f"{stderr.decode(errors='replace').strip()[-2000:]}")
    return ProcessRun(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_bytes=usage.ru_maxrss * 1024,  # kilobytes on Linux
        tree_rss_bytes=peak_tree if sample_tree else None,
        returncode=proc.returncode,
        stdout=stdout,
        stderr=stderr,
    )


def process_rss(pid: int) -> int:
    """Current RSS of one process, in bytes."""
    import psutil

    return int(psutil.Process(pid).memory_info().rss)


def tool_argv(script: str, module: str) -> list[str]:
    """How a user runs ``script``: the console script next to this interpreter (what pip
    installed), else ``python -m module``."""
    exe = Path(sys.executable)
    candidate = exe.with_name(script)
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return [str(candidate)]
    return [sys.executable, "-m", module]
