"""Small files go to the parse pool in batches: the results are the same, in job order,
as parsing them one by one (unreadable files and big ones included)."""

from __future__ import annotations

from pathlib import Path

from conftest import cache_files
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
