"""The indexer's title, role and summary regexes stay linear on hostile lines.

Each input below is sized so that the quadratic patterns of before took well over ten
minutes (measured: 80 KB of ":a" 38 s, 60 KB of spaces 12 s, 200 KB RST title 34 s, 20 KB
role spaces 0.7 s; here 5-30 times as long); the only time limit is the safety net.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from conftest import manifest, run_cli, write_tree

from doc_index.indexer import markdown, rst, summary

CHAIN = ":a" * 200_000  # 400 KB

CASES = {
    # A directive line is no prose: the summary falls back to the first line (_ROLE).
    "summary-role": ({"t.md": ".. " + CHAIN + "\n"}, ""),
    # A heading with a long run of spaces before its last word (_ATTR_LIST).
    "md-heading-spaces": ({"t.md": "# a" + " " * 600_000 + "b\n\nbody\n"}, "a b"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_line_builds(tmp_path: Path, case: str) -> None:
    files, title = CASES[case]
    src = write_tree(tmp_path / "src", files)
    root = tmp_path / "root"
    done = run_cli("build", str(src), "--root", str(root), "--name", "local-p")
    assert done.returncode == 0, done.stderr.decode()
    first = manifest(root / "local-p")["sections"][0]
    assert first["title"] == title


# docutils drops an RST line over 10,000 characters, so a build hands these two at most
# that much (quadratic: 0.05 s a title); the functions themselves must still be linear.
def test_rst_title_role_chain() -> None:
    chain = "T " + ":a" * 500_000  # 1 MB: 34 s for 200 KB before
    assert rst.plain_title(chain) == chain


def test_rst_role_target_spaces() -> None:
    spaces = " " * 600_000  # 0.7 s for 20 KB before
    assert rst.role_text("x" + spaces + "y") == "x" + spaces + "y"
    assert rst.role_text("x" + spaces + "<t>") == "x"


# The patterns of before: the new ones must give the same output on every input.
_OLD_SUMMARY_ROLE = re.compile(r":(?:[A-Za-z0-9_+.-]+:)+`([^`]*)`")
_OLD_RST_ROLE = re.compile(r":(?:[A-Za-z0-9_+.-]+:)+`((?:[^`\\]|\\.)*)`")
_OLD_TARGET = re.compile(r"^(.*?)\s*<[^<>]*>$", re.DOTALL)
_OLD_ATTR_LIST = re.compile(r"\s*\{\s*[#.][^{}]*\}\s*$")
_ALPHABET = list(":a`b.\\ <>-x\n{}#\t") + ["\x85", "\u2028", "\xa0", "\x1c"]


def _mark(text: str) -> str:
    return "<" + text + ">"


def test_linear_patterns_match_the_old_ones() -> None:
    rng = random.Random(11)
    for _ in range(50_000):
        s = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 14)))
        assert (_OLD_SUMMARY_ROLE.sub(lambda m: _mark(m.group(1)), s)
                == summary._ROLE.sub(lambda m: m.group(1) + _mark(m.group(2)), s)), repr(s)
        assert (_OLD_RST_ROLE.sub(lambda m: _mark(m.group(1)), s)
                == rst._ROLE.sub(lambda m: m.group(1) + _mark(m.group(2)), s)), repr(s)
        old = _OLD_TARGET.match(s)
        assert (old.group(1) if old else "") == rst._target_text(s), repr(s)
        assert _OLD_ATTR_LIST.sub("", s) == markdown._ATTR_LIST.sub("", s), repr(s)
