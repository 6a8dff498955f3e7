"""Helpers for the Context Engine v0 conformance tests: fixture paths, a real ``context``
subprocess, and the suite's golden canonicalization."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

COMPAT = Path(__file__).resolve().parent / "context-engine-compat"
V0 = COMPAT / "fixtures" / "v0"
CACHES = V0 / "caches"
QUERIES = V0 / "queries"
EXPECTED = V0 / "expected"
DOCUMENTS = V0 / "documents"
SCHEMAS = COMPAT / "schemas"

EMPTY_CACHE_VERSION = "sha256:a77ff76f65e3cd4cd0071b4af8f5294a77f67b6fe0c938a383db5e1271e913ee"


def run_context(
    *args: str | os.PathLike[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``context`` CLI (``python -m doc_index.server.context_cli``)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    command = [
        sys.executable,
        "-m",
        "doc_index.server.context_cli",
        *(os.fspath(arg) for arg in args),
    ]
    return subprocess.run(command, capture_output=True, env=full_env, timeout=120)


def canonical(data: bytes) -> bytes:
    """The suite's golden comparison form: CRLF -> LF, right-strip lines, no final newline."""
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    text = b"\n".join(line.rstrip() for line in lines)
    return text[:-1] if text.endswith(b"\n") else text


def query(name: str) -> tuple[str, int]:
    """A fixture query file's ``(query, budget)``."""
    data = json.loads((QUERIES / f"{name}.json").read_bytes())
    return data["query"], data["budget"]


def copy_cache(name: str, destination: Path) -> Path:
    """A writable copy of fixture cache ``name``."""
    return Path(shutil.copytree(CACHES / name, destination))


def assert_error(proc: subprocess.CompletedProcess[bytes], exit_code: int, message: str) -> None:
    """A CLI failure: the exit code, one ``error:`` line on stderr, nothing on stdout."""
    assert proc.returncode == exit_code, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr == f"error: {message}\n".encode()
