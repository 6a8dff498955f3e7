"""Red-team regressions for the warm caches' memory release."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import SAFETY_TIMEOUT, run_cli
from doc_index.search.warm_caches import MEMORY_ENV


def test_memory_release_is_skipped_where_python_has_no_ctypes() -> None:
    # sys.modules["ctypes"] = None makes ``import ctypes`` raise ImportError, as on a
    # Python built without it; every cache load calls release_freed_memory.
    code = ("import sys; sys.modules['ctypes'] = None\n"
            "from doc_index.search.warm_caches import release_freed_memory\n"
            "release_freed_memory(); release_freed_memory(); print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          timeout=SAFETY_TIMEOUT)
    assert done.returncode == 0 and done.stdout == b"ok\n", done.stderr


def test_a_memory_budget_of_thousands_of_digits_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("serve", "--root", str(tmp_path), env={MEMORY_ENV: "9" * 5000},
                   input=b"")
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.decode().splitlines()
    assert line.startswith(f"error: invalid {MEMORY_ENV}="), line
