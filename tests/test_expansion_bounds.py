"""What a page's expansion may cost and what its summary says:
bounded work per include directive and page, counts that add up, and each autodoc
directive not found with its own reason. Real ``doc-index build`` subprocesses, measured
by a launcher (CPU seconds, peak RSS; no wall clock)."""

from __future__ import annotations

import random
import re
from pathlib import Path

from cli_support import measured_cli
from conftest import run_cli, write_tree


def _megabyte_of_rst() -> str:
    rng = random.Random(29)
    lines = (f"line {i} " + " ".join(f"{rng.random():.12f}" for _ in range(3))
             for i in range(20_000))
    return "\n\n".join(lines)[:1_000_000] + "\n"


def test_thousands_of_includes_of_a_big_file_cost_bounded_work(tmp_path: Path) -> None:
    """A 60 KB page of 3,000 ``.. include::`` of a 1 MB file: 64-67 s for that one page
    before (each directive scanned the whole file, then its text was refused), and the
    summary said ``includes: -992 inlined``."""
    page = "Title\n=====\n\n" + ".. include:: b.rst\n\n" * 3000
    docs = write_tree(tmp_path / "docs", {"index.rst": page, "b.rst": _megabyte_of_rst()})
    done = measured_cli("build", str(docs), "--root", str(tmp_path / "root"))
    err = done.stderr.decode()
    print(err, f"{done.cpu_seconds:.1f} s CPU, peak {done.peak_mb:.0f} MB")
    assert done.returncode == 0, err
    assert done.cpu_seconds < 60 and done.peak_mb < 1024
    found = re.search(r"\n  includes: (-?\d+) inlined, (\d+) left as notes: (.*)\n", err)
    assert found is not None, err
    inlined, notes = int(found.group(1)), int(found.group(2))
    assert 0 <= inlined <= 8 and inlined + notes == 3000, found.group(0)
    assert "skipped, page work cap" in found.group(3)


def test_an_include_directive_refused_for_size_or_work_leaves_one_note(tmp_path: Path) -> None:
    """Each directive met is counted once and leaves at most one note: the summary's
    inlined count is never negative (includes past the per-page directive cap were notes
    that were not counted)."""
    page = "Title\n=====\n\n" + ".. include:: small.rst\n\n" * 2100
    docs = write_tree(tmp_path / "docs", {"index.rst": page, "small.rst": "zebra words\n"})
    done = run_cli("build", str(docs), "--root", str(tmp_path / "root"))
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert ("  includes: 2000 inlined, 100 left as notes: 100 skipped, too many includes\n"
            in err), err


def test_each_autodoc_directive_not_found_has_its_own_reason(tmp_path: Path) -> None:
    """After ``automodule:: bad`` (a file that does not parse), the notes of unrelated
    directives repeated ``unreadable file bad.py``."""
    docs = write_tree(tmp_path / "docs", {
        "api.rst": ("API\n===\n\n.. automodule:: bad\n\n.. automodule:: missing_mod\n\n"
                    ".. autoclass:: good.Missing\n\n.. autofunction:: good.f\n"),
        "bad.py": "def broken(:\n",
        "good.py": '"""Good."""\n\ndef f():\n    """Zebra f."""\n',
    })
    root = tmp_path / "root"
    done = run_cli("build", str(docs), "--root", str(root), "--name", "api")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    text = (root / "api" / "api.rst").read_text()
    notes = re.findall(r"\[autodoc not found: (.*)\]", text)
    assert notes == [
        "bad: unreadable file bad.py: not valid Python (line 1): invalid syntax",
        "missing_mod: no such module: missing_mod (looked in: src, lib, .)",
        "good.Missing: no such object: Missing in good"], text
    assert "Zebra f." in text
    assert "autodoc: 1 documented (1 objects), 3 not found" in err
