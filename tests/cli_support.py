"""Helpers for tests that run the ``doc-index`` and ``context`` commands as people do: real
subprocesses, the bytes they print, and what they left on disk."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from conftest import SAFETY_TIMEOUT, write_tree

CONTEXT = "doc_index.server.context_cli"
# One small cache, ``t``: a guide with a hostile escape and a tab, and a page in a folder.
DOCS = {
    "guide.md": "# Guide\n\nIntro words about the guide, and how it is laid out.\n\n## Retry\n\n"
                "How to retry a request after a timeout, with a pause between tries.\n"
                "A hostile \x1b[31mred\x1b[0m escape and a tab\there.\n",
    "sub/setup.md": "# Setup\n\nInstall it, then set the timeout in the config file.\n",
}


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        module: str = "doc_index.cli", drop: tuple[str, ...] = ()) -> tuple[int, bytes, bytes]:
    """``python -m MODULE ARGS``: (exit code, stdout, stderr)."""
    full = {k: v for k, v in os.environ.items() if k not in drop}
    full.update(env or {})
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, env=full,
                          cwd=cwd, timeout=SAFETY_TIMEOUT, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


def snapshot(top: Path) -> dict[str, bytes | None]:
    """Every entry below ``top``: a file's bytes, a directory as None."""
    out: dict[str, bytes | None] = {}
    for path in sorted(top.rglob("*")):
        rel = path.relative_to(top).as_posix()
        out[rel] = None if path.is_dir() and not path.is_symlink() else (
            os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return out


def built_root(tmp_path: Path) -> Path:
    """A root holding the doc-index cache ``t`` of DOCS."""
    src = write_tree(tmp_path / "docs", DOCS)
    root = tmp_path / "root"
    assert run("build", str(src), "--root", str(root), "--name", "t")[0] == 0
    return root



# Runs argv[2:] and writes its exit status, CPU seconds and peak RSS (KiB) to argv[1]. A
# small fresh process starts the command: a child's peak RSS counts the memory of the
# process it was (v)forked from, here a pytest worker that may hold a GiB.
_MEASURED = r"""
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime} "
             f"{usage.ru_maxrss}")
"""


class Measured(NamedTuple):
    """A finished ``doc-index`` process: exit code, output, CPU seconds (its own and its
    children's: a busy machine does not stretch them as it does wall time) and peak RSS
    of the largest process of its tree in MiB."""

    returncode: int
    stdout: bytes
    stderr: bytes
    cpu_seconds: float
    peak_mb: float


def measured_cli(*args: str, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> Measured:
    """``doc-index ARGS`` in a real process, measured (``Measured``)."""
    full = dict(os.environ)
    full.update(env or {})
    with tempfile.TemporaryDirectory() as tmp:
        usage = Path(tmp) / "usage"
        done = subprocess.run([sys.executable, "-c", _MEASURED, str(usage), sys.executable,
                               "-m", "doc_index.cli", *args], capture_output=True, env=full,
                              cwd=cwd, timeout=SAFETY_TIMEOUT, stdin=subprocess.DEVNULL)
        status, cpu, rss = usage.read_text().split()
    return Measured(int(status), done.stdout, done.stderr, float(cpu), int(rss) / 1024)
