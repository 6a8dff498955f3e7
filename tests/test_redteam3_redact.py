"""Red-team regressions (T3 item 3): the password of an scp-like address was removed only
when it held no ``/`` and its host was ASCII letters, digits and ``_.-[]``, and only with
a user name before it and a ``:`` after its host: ``doc-index build
me:s3cr3t/t0ken+x=@host:v1/repos/r`` (a base64 token, as AWS CodeCommit's),
``me:s3cr3t@héllo.example:o/r`` and, written without its scheme,
``me:s3cr3t@github.com/o/r`` printed the token."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from doc_index.foundation.redact import redact

TOKEN = "s3cr3t-t0ken"
LEAKED = [f"me:{TOKEN}/ab+c=@git-codecommit.example:v1/repos/r",
          f"me:{TOKEN}@héllo.example:o/r", f":{TOKEN}@host:o/r",
          f"me:a/{TOKEN}@b@host:o/r", f"(me:{TOKEN}/x@[::1]:o/r)", f"me:a@b/{TOKEN}@host:o/r",
          f"me:{TOKEN}@github.com/o/r", f"me:{TOKEN}@host"]


@pytest.mark.parametrize("text", LEAKED)
def test_every_scp_like_password_is_removed(text: str) -> None:
    shown = redact(f"fatal: cannot reach {text} now")
    assert TOKEN not in shown and text.rsplit("@", 1)[1] in shown, shown


@pytest.mark.parametrize("source", [LEAKED[0], LEAKED[1], LEAKED[6]])
def test_the_cli_never_shows_it(tmp_path: Path, source: str) -> None:
    done = run_cli("build", source, "--root", str(tmp_path / "root"))
    assert done.returncode != 0
    assert TOKEN.encode() not in done.stdout + done.stderr, done.stderr
    assert done.stderr.decode().startswith("error: "), done.stderr


@pytest.mark.parametrize("text", [
    "see https://host/o/r@v2:x", "file:///srv/a@b:c", "docs/a:b@c:d", "git@github.com:o/r"])
def test_urls_and_paths_stay(text: str) -> None:
    assert redact(text) == text
