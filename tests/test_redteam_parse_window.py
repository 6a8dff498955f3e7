"""Red-team regression (T2 item 3): the parse window holds a bounded number of bytes.
16 batches per worker are in flight, and a batch holds one file at least: with big files
that was 16 files per worker of source held by the main process (10 MB files, 4 workers:
640 MB). The window also stops at ``MAX_IN_FLIGHT_BYTES``, one batch per worker kept."""

from __future__ import annotations

from pathlib import Path

import pytest
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
