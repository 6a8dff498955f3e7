"""Red-team regressions (T2 item 5): ``list --json`` and ``inspect --json`` print a hostile
manifest's text with every character a terminal would act on escaped (C1 controls such
as CSI U+009B, DEL, U+2028, bidi overrides), and parse to the same values."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli, write_tree

HOSTILE = "\u009b2J\u0085x\u2028y\u202eevil\u007f\U000e0001"


def test_json_listings_escape_every_control_and_parse_to_the_same_text(tmp_path: Path) -> None:
    root = tmp_path / "root"
    docs = write_tree(tmp_path / "docs", {"a.md": "# Title\n\nSome text.\n"})
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    manifest = root / "n" / "manifest.json"
    text = manifest.read_text()
    assert '"ref":null' in text
    escaped = json.dumps(HOSTILE)[1:-1]  # as someone writing the root could spell it
    manifest.write_text(text.replace('"ref":null', f'"ref":"{escaped}"', 1))
    for args in (["list", "--json"], ["inspect", "n", "--json"]):
        done = run_cli(*args, "--root", str(root))
        assert done.returncode == 0, done.stderr
        out = done.stdout.decode("utf-8")
        assert out.endswith("\n") and out[:-1].isprintable(), ascii(out)
        value = json.loads(out)
        cache = value["caches"][0] if "caches" in value else value
        assert cache["source"]["ref"] == HOSTILE, cache
