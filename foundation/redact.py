"""Secrets out of text before it is shown: ``redact`` removes every URL's user info and
query. Git sources use it on every message that may quote a URL, and ``errors.describe``
on the text of any error it did not expect (a safeguard: an unexpected exception may quote
the URL it failed on).
"""

from __future__ import annotations

import re

# A URL's secrets: its user info, ``user@`` or ``user:password@``, and its query (a token
# may ride in ``?private_token=...``). An unencoded password may hold ``/``, ``@`` or a
# blank, so after a ``:`` the user info runs to the last ``@`` before the line's next
# ``://`` (the next URL); an unencoded user name may hold ``@`` (an e-mail address: cut at
# its own ``@``, ``me@corp.com:TOKEN@host`` was shown as ``corp.com:TOKEN@host``), so
# without a ``:`` it runs to the last ``@`` before the first ``/``. The query runs to the
# next blank. Over-redacting (a ``host:port/path@x`` in a message, the quote after a
# query) is the price of never echoing a token. A scheme is at most 32 characters, and no
# part runs past the next ``://``, so one pass over a long line is linear (an unbounded
# scheme made 40 KB of ``a.`` take 0.8 s).
_URL_START = r"[A-Za-z][A-Za-z0-9+.-]{0,31}://"
_USERINFO = re.compile(rf"(?P<scheme>{_URL_START})(?:[^/:\n]*:(?:(?!://)[^\n])*@|[^/\s]*@)")
_QUERY = re.compile(rf"(?P<url>{_URL_START}(?:(?!://)[^\s?])*)\?\S*")
# An scp-like git address with a password, ``user:password@host:path`` (no scheme): git
# hands ``user:password`` to ssh as the user name, so a token pasted there would be shown
# whole. ``git@host:path`` (no ``:`` before the ``@``) names no secret and stays. As in a
# URL, the password may hold ``/`` or ``@`` (a base64 token: ``me:ab/c+d=@host:path``), so
# it runs to the word's last ``@`` before a host; the user may be empty and holds no
# ``/``, and ``x://`` is a URL (``_USERINFO``'s). The host is any run up to a ``:``, a
# ``/`` or the word's end (``héllo.example``, ``[::1]``, ``me:TOKEN@host/o/r`` written
# without its scheme). Found word by word with plain searches, never a backtracking
# pattern: linear in the text (a host's search stops at the next ``@``).
_WORD = re.compile(r"[^\s'\"]+")
_HOST = re.compile(r"[^\s/:@]+(?:[:/]|\Z)")


def _scp_password(word: re.Match[str]) -> str:
    token = word.group()
    start = len(token) - len(token.lstrip("(<[="))
    colon = token.find(":", start)
    if colon < 0 or token.find("/", start, colon) >= 0 or token.startswith("//", colon + 1):
        return token
    at = token.rfind("@")
    while at > colon:
        if _HOST.match(token, at + 1):
            return token[:start] + token[at + 1:]
        at = token.rfind("@", colon + 1, at)
    return token


def redact(text: str) -> str:
    """``text`` with the user info (user, password, token) and the query of every URL
    removed, any scheme spelling (``HTTP://``), and the password of an scp-like address."""
    text = _QUERY.sub(r"\g<url>", _USERINFO.sub(r"\g<scheme>", text))
    return _WORD.sub(_scp_password, text) if "@" in text else text
