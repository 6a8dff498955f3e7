"""``redact`` (``foundation/redact.py``): no secret a URL or an scp-like git address
carries is shown. A URL loses its user info (``user@``, ``user:password@``, a user name that
is an e-mail address, a password holding ``/``, ``@`` or a blank) and its query (a token may
ride in ``?private_token=``); ``user:password@host:path`` loses ``user:password``; what names
no secret stays as written. One pass is linear in the text, and the ``doc-index`` CLI never
prints a secret of the source it was given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, run_cli
from hypothesis import given
from hypothesis import strategies as st

from doc_index.foundation.errors import GitSourceError
from doc_index.foundation.redact import redact

TOKEN = "s3cr3t-t0ken"

# --------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(("text", "clean"), [
    ("HTTP://user:tok@host/a/b.git", "HTTP://host/a/b.git"),
    ("Https://tok@host/a/b.git", "Https://host/a/b.git"),
    ("http://user:pa/ss@host/a/b.git", "http://host/a/b.git"),
    ("http://user:p@ss@host/a/b.git", "http://host/a/b.git"),
    ("see https://u:p@h/x and ssh://git@h:22/y", "see https://h/x and ssh://h:22/y"),
    ("https://h/o/x.git?private_token=tok", "https://h/o/x.git"),
    ("fatal: 'https://h/o/x.git?a=1&private_token=tok' not found",
     "fatal: 'https://h/o/x.git not found"),
    ("fatal: unable to access 'https://user:pa ss@host/a/b.git/': 403",
     "fatal: unable to access 'https://host/a/b.git/': 403"),
    ("see https://u:p w@h/x?t=1 and ssh://git@h:22/y", "see https://h/x and ssh://h:22/y"),
    ("https://a/x,https://u:p@b/y?t", "https://a/x,https://b/y"),
])
def test_a_urls_user_info_and_query_are_removed(text: str, clean: str) -> None:
    assert redact(text) == clean


def test_every_url_of_a_message_is_cleaned() -> None:
    text = "fatal: unable to access 'https://user:s3cret@host/a/b.git/': 403 ssh://tok@h/x"
    clean = redact(text)
    assert "s3cret" not in clean and "user" not in clean and "tok@" not in clean
    assert "https://host/a/b.git/" in clean
    assert str(GitSourceError("cannot reach https://a:b@h/x")) == "cannot reach https://h/x"


@pytest.mark.parametrize("url", [
    f"https://me@corp.com:{TOKEN}@host/o/r", f"https://me@corp.com:p/{TOKEN}@host/o/r",
    f"ssh://me@corp.com:{TOKEN}@[::1]:22/o/r", f"xyz://me@corp.com:{TOKEN}@host/o/r"])
def test_a_user_name_with_at_signs_is_removed_whole(url: str) -> None:
    """An unencoded ``@`` in the user name (an e-mail address) is not where it ends."""
    shown = redact(f"fatal: cannot reach '{url}' now")
    assert TOKEN not in shown and "corp.com" not in shown, shown


_SCHEMES = st.from_regex(r"[A-Za-z][A-Za-z0-9+.-]{0,8}", fullmatch=True)
_USER = st.text(st.characters(blacklist_characters="/@: \t\r\n\x0b\x0c\x1c\x1d\x1e\x1f\x85"
                              "\xa0\u1680\u2028\u2029\u3000", blacklist_categories=("Zs", "Cc")),
                min_size=1, max_size=12)
# Unencoded URL delimiters are what broke redaction: draw them often.
_PASSWORD = st.text(st.sampled_from("/@:?#%'") | st.characters(
    blacklist_categories=("Zs", "Zl", "Zp", "Cc"), blacklist_characters="\x1c\x1d\x1e\x1f\x85"),
    min_size=1, max_size=16)


@given(scheme=_SCHEMES, user=_USER, password=_PASSWORD)
def test_any_password_is_hidden(scheme: str, user: str, password: str) -> None:
    url = f"{scheme}://{user}:{password}@example.com:8443/acme/widgets.git"
    text = f"fatal: unable to access '{url}/': Failed to connect"
    assert redact(text) == (f"fatal: unable to access '{scheme}://example.com:8443/acme/"
                            "widgets.git/': Failed to connect")


@given(password=st.text(st.sampled_from(" /@:?#%'") | st.characters(
    blacklist_categories=("Zl", "Zp", "Cc"), blacklist_characters="\x1c\x1d\x1e\x1f\x85"),
    min_size=1, max_size=16), token=st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True))
def test_passwords_with_blanks_and_query_tokens_are_hidden(password: str, token: str) -> None:
    text = (f"fatal: unable to access 'https://user:{password}@example.com/acme/w.git/': 403"
            f" and 'https://example.com/acme/w.git?private_token={token}': 401")
    assert redact(text) == ("fatal: unable to access 'https://example.com/acme/w.git/': 403"
                            " and 'https://example.com/acme/w.git 401")


# --------------------------------------------------------------------------- scp-like addresses

SCP_LIKE = [f"me:{TOKEN}/ab+c=@git-codecommit.example:v1/repos/r",  # a base64 token
            f"me:{TOKEN}@héllo.example:o/r", f":{TOKEN}@host:o/r",
            f"me:a/{TOKEN}@b@host:o/r", f"(me:{TOKEN}/x@[::1]:o/r)", f"me:a@b/{TOKEN}@host:o/r",
            f"me:{TOKEN}@github.com/o/r", f"me:{TOKEN}@host"]


@pytest.mark.parametrize("text", SCP_LIKE)
def test_every_scp_like_password_is_removed(text: str) -> None:
    """``user:password@host:path`` has no scheme: git hands ``user:password`` to ssh as the
    user name. The password may hold ``/`` and ``@``, the host any letters, the user may be
    empty, and the path may follow a ``/``."""
    shown = redact(f"fatal: cannot reach {text} now")
    assert TOKEN not in shown and text.rsplit("@", 1)[1] in shown, shown


@pytest.mark.parametrize("text", [
    f"fatal: tok:{TOKEN}@github.com:o/r.git not found",
    f"cannot reach 'tok:{TOKEN}@github.com:o/r'",
    f"(me:{TOKEN}@host.example:o/r)", f"url=me:a@{TOKEN}@host:o/r"])
def test_an_scp_like_password_is_removed_within_quotes_and_brackets(text: str) -> None:
    shown = redact(text)
    assert TOKEN not in shown and ("host" in shown or "github.com" in shown), shown


# --------------------------------------------------------------------------- what stays


@pytest.mark.parametrize("text", [
    "git@github.com:pallets/flask.git", "git@github.com:o/r", "see http://x.org/a:b@c:d",
    "x/y:z@h:p", "a@b", "see https://host/o/r@v2:x", "file:///srv/a@b:c", "docs/a:b@c:d",
    "https://host/acme/widgets@v1.git", "did you mean x? https://host/acme/widgets@v1.git"])
def test_what_names_no_secret_stays(text: str) -> None:
    assert redact(text) == text


def test_redact_is_linear_in_a_long_line_of_scheme_characters() -> None:
    # 2 MB of "a.": a scheme may start after every dot. Linear: about 0.3 s. With an
    # unbounded scheme, every start read to the end of the line: 40 KB took 0.8 s, so
    # this would take about half an hour, far past the safety timeout.
    code = "from doc_index.foundation.redact import redact; assert redact('a.' * 10**6)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          timeout=SAFETY_TIMEOUT)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("source", [
    f"xyz://me@corp.com:{TOKEN}@host/o/r", SCP_LIKE[0], SCP_LIKE[1], SCP_LIKE[6]])
def test_the_cli_never_shows_a_sources_secret(tmp_path: Path, source: str) -> None:
    done = run_cli("build", source, "--root", str(tmp_path / "root"))
    assert done.returncode != 0
    assert TOKEN.encode() not in done.stdout + done.stderr, done.stderr
    assert done.stderr.decode().startswith("error: "), done.stderr


@pytest.mark.parametrize("url", [
    "HTTP://user:s3cret@127.0.0.1:1/acme/widgets.git",
    "http://user:s3/cret@127.0.0.1:1/acme/widgets.git",
    "hTTps://s3cret@127.0.0.1:1/acme/widgets.git",
])
def test_an_unreachable_urls_credentials_are_never_printed(env: Path, url: str) -> None:
    done = run_cli("build", url, "--root", str(env / "root"))
    assert done.returncode == 6
    err = done.stderr.decode()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "s3" not in err and "cret" not in err and "user" not in err, err
