"""Coverage of include and autodoc expansion on a checked-out project (a dev tool).

    python -m bench.autodoc_coverage ROOT DOCS [--conf PATH] [--mkdocs-dir DIR]

ROOT is the project's folder (read-only), DOCS its docs folder (relative to ROOT);
``--conf`` a Sphinx conf.py and ``--mkdocs-dir`` the mkdocs.yml folder, both relative
to ROOT. Prints directives found / documented / not found (by reason) and includes met /
expanded / left as notes (by reason), and the time taken.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from pathlib import Path

from doc_index.indexer.module_finder import read_sphinx_conf
from doc_index.indexer.page_expand import PageContext, expand_page, make_finder


def reader(root: Path):
    def read(path: str) -> bytes | None:
        full = root / path
        if full.is_symlink() or not full.is_file():
            return None
        return full.read_bytes()
    return read


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("docs")
    parser.add_argument("--conf")
    parser.add_argument("--mkdocs-dir")
    args = parser.parse_args()
    root = args.root.resolve()
    conf = read_sphinx_conf((root / args.conf).read_bytes(), args.conf) if args.conf \
        else None
    context = PageContext(reader(root), conf, make_finder(reader(root), conf),
                          docs_root=args.docs, config_dir=args.mkdocs_dir)
    pages = sorted(str(p.relative_to(root)) for p in (root / args.docs).rglob("*")
                   if p.suffix in (".rst", ".md") and p.is_file())
    objects = documented = includes = 0
    not_found: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    started = time.perf_counter()
    for page in pages:
        text = (root / page).read_text("utf-8", "replace")
        expanded = expand_page(text, page, context)
        documented += sum(1 for o in expanded.objects if o.object.depth == 0)
        objects += len(expanded.objects)
        for problem in expanded.unresolved:
            not_found[problem.split(": ", 1)[1].split(":")[0].split(" (")[0]] += 1
        includes += expanded.includes
        for note in expanded.notes:
            notes[note[len("[include "):].split(":")[0]] += 1
    elapsed = time.perf_counter() - started
    directives = documented + sum(not_found.values())
    print(f"pages: {len(pages)}  time: {elapsed:.2f} s")
    print(f"autodoc directives: {directives}  documented: {documented} "
          f"(objects with members: {objects})  not found: {sum(not_found.values())}")
    for reason, count in not_found.most_common():
        print(f"  {count:5d}  {reason}")
    print(f"includes met: {includes}  expanded: {includes - sum(notes.values())}  "
          f"notes: {sum(notes.values())}")
    for reason, count in notes.most_common():
        print(f"  {count:5d}  {reason}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
