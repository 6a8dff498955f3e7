"""No cap makes text unanswerable: the text past the 5,000-sections
cap of a file is cut into parts near 1,000 tokens, as a file without headings is, so a
normal budget returns it; ids stay deterministic. Real ``doc-index`` subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli, write_tree

from doc_index.indexer.versions import MAX_SECTIONS_PER_FILE


def _manifest(root: Path, key: str) -> dict:
    return json.loads((root / key / "manifest.json").read_text())


def test_the_text_past_the_section_cap_is_answered_with_a_normal_budget(
        tmp_path: Path) -> None:
    """20,000 headings: past the cap "the rest joins the last one", a section over 100,000
    tokens that no budget up to 100,000 returned, so its last heading's text was never
    answered."""
    text = "".join(f"# Heading {i}\n\nbody {i} words\n\n" for i in range(19_999))
    text += "# Last heading\n\nThe quokka migration checklist lives here.\n"
    src = write_tree(tmp_path / "src", {"headings.md": text})
    roots = [tmp_path / "root1", tmp_path / "root2"]
    for root in roots:
        done = run_cli("build", str(src), "--root", str(root), "--name", "caps")
        assert done.returncode == 0, done.stderr
    assert (f"note headings.md: more than {MAX_SECTIONS_PER_FILE} sections: the rest, from "
            "line 20001, cut into") in done.stderr.decode()
    done = run_cli("resolve", "caps", "quokka migration checklist", "--budget", "2000",
                   "--root", str(roots[0]))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["documents"], answer["selection"]
    assert "The quokka migration checklist lives here." in answer["documents"][0]["content"]
    sections = _manifest(roots[0], "caps")["sections"]
    assert max(s["tokens"] for s in sections) < 2000
    assert [s["id"] for s in sections[MAX_SECTIONS_PER_FILE:][:2]] == [
        "headings-part-1", "headings-part-2"]
    # the same input gives the same ids and versions
    again = _manifest(roots[1], "caps")["sections"]
    assert [(s["id"], s["version"]) for s in again] == [(s["id"], s["version"])
                                                        for s in sections]
