"""Red-team regression (T2 item 3): the parse window holds a bounded number of bytes.
16 batches per worker are in flight, and a batch holds one file at least: with big files
that was 16 files per worker of source held by the main process (10 MB files, 4 workers:
640 MB). The window also stops at ``MAX_IN_FLIGHT_BYTES``, one batch per worker kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT
from doc_index.store import parallel
from doc_index.store.parallel import Job, _parse_in_pool

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
