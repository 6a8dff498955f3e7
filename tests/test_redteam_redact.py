"""Red-team regressions (T2 item 4): a user name holding an unencoded ``@`` (an e-mail
address) hid only its first part: ``https://me@corp.com:TOKEN@host/o/r`` was shown as
``https://corp.com:TOKEN@host/o/r``, token and all."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from doc_index.foundation.redact import redact

TOKEN = "s3cr3t-t0ken"
URLS = [f"https://me@corp.com:{TOKEN}@host/o/r", f"https://me@corp.com:p/{TOKEN}@host/o/r",
        f"ssh://me@corp.com:{TOKEN}@[::1]:22/o/r", f"xyz://me@corp.com:{TOKEN}@host/o/r"]


@pytest.mark.parametrize("url", URLS)
def test_a_user_name_with_at_signs_is_removed_whole(url: str) -> None:
    shown = redact(f"fatal: cannot reach '{url}' now")
    assert TOKEN not in shown and "corp.com" not in shown, shown


def test_the_cli_never_shows_the_token_of_such_a_url(tmp_path: Path) -> None:
    done = run_cli("build", URLS[-1], "--root", str(tmp_path / "root"))
    assert done.returncode != 0
    assert TOKEN.encode() not in done.stdout + done.stderr, done.stderr
    assert done.stderr.decode().startswith("error: "), done.stderr


@pytest.mark.parametrize("text", [
    f"fatal: tok:{TOKEN}@github.com:o/r.git not found",
    f"cannot reach 'tok:{TOKEN}@github.com:o/r'",
    f"(me:{TOKEN}@host.example:o/r)", f"url=me:a@{TOKEN}@host:o/r"])
def test_the_password_of_an_scp_like_address_is_removed(text: str) -> None:
    """``user:password@host:path`` has no scheme: git hands ``user:password`` to ssh as
    the user name (red-team T2-4b: it was shown whole)."""
    shown = redact(text)
    assert TOKEN not in shown and ("host" in shown or "github.com" in shown), shown


@pytest.mark.parametrize("text", [
    "git@github.com:pallets/flask.git", "see http://x.org/a:b@c:d", "x/y:z@h:p", "a@b"])
def test_what_names_no_secret_stays(text: str) -> None:
    assert redact(text) == text
