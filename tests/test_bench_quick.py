"""``python -m bench.run --quick`` end to end, so the benchmark never rots.

A real subprocess writes the report into a temporary directory; the test checks that every
section is there, that every table cell that looks like a figure parses as a number, that
the plots were drawn and that ``results.json`` holds finite numbers.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO.parent / "shared" / "corpora"
BENCH_DEPS = ("bm25s", "matplotlib", "bpe_openai", "psutil")
MISSING = [name for name in BENCH_DEPS if importlib.util.find_spec(name) is None]

# Minutes of benchmark: make test-slow (CI runs it, with shared/corpora beside the clone).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING), reason=f"bench dependencies not installed "
                       f"({', '.join(MISSING)}): pip install -e '.[bench]'"),
    pytest.mark.skipif(not (CORPORA / "queries-dev.jsonl").is_file(),
                       reason=f"the shared corpora are not at {CORPORA}"),
]

SECTIONS = ("## Machine", "## Targets", "## 1. Build", "## 2. Resolve latency",
            "## 3. Memory", "## 4. Retrieval quality", "## 5. Token-estimate accuracy",
            "## Method")
PLOTS = ("build_time.png", "resolve_latency.png", "memory.png", "quality.png", "tokens.png")
# A table cell holding a figure: "0.48", "-9.7 %", "1.26x", "3.78 [3.59–3.97]", "0.34 s".
FIGURE = re.compile(r"^[-+]?\d")
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _numbers(cell: str) -> list[float]:
    return [float(m) for m in NUMBER.findall(cell)]


def _walk(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _walk(v)]
    if isinstance(value, list):
        return [x for v in value for x in _walk(v)]
    return []


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench-quick")
    env = dict(os.environ)
    env.pop("DOC_INDEX_ROOT", None)
    # The timeout is a safety net only: the quick run takes minutes, more on a busy machine.
    done = subprocess.run([sys.executable, "-m", "bench.run", "--quick", "--out", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1800,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "report:" in done.stdout
    return out


def test_report_has_every_section_and_plot(quick_report: Path) -> None:
    text = (quick_report / "report.md").read_text(encoding="utf-8")
    positions = [text.find(title) for title in SECTIONS]
    assert all(p >= 0 for p in positions), [t for t, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)
    assert "Not run" not in text
    assert "A server holding 5 large caches" in text  # the serve stage's table
    assert "**fresh-1**" in text and "**Leave-one-corpus-out**" in text
    for name in PLOTS:
        assert (quick_report / name).stat().st_size > 5000, name
        assert f"]({name})" in text


def test_report_figures_parse(quick_report: Path) -> None:
    text = (quick_report / "report.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    figures = 0
    for row in rows:
        for cell in row.strip("|").split(" | "):
            cell = cell.strip().strip("*")
            if FIGURE.match(cell):
                values = _numbers(cell)
                assert values and all(math.isfinite(v) for v in values), (row, cell)
                figures += 1
    assert figures > 150
    # Every target row has a verdict from a measurement, not "not run" nor "n/a".
    target_rows = text.split("## Targets", 1)[1].split("## 1. Build", 1)[0]
    verdicts = re.findall(r"^\| \w+ \| ([^|]*) \|.*\| (PASS|\*\*MISS[^|]*\*\*|not run) \|",
                          target_rows, re.MULTILINE)
    assert len(verdicts) >= 15
    not_run = [measure for measure, verdict in verdicts if verdict == "not run"]
    assert len(not_run) == 5 and all("20x" in m for m in not_run)  # --quick: 1x and 5x only


def test_results_json(quick_report: Path) -> None:
    results = json.loads((quick_report / "results.json").read_text(encoding="utf-8"))
    assert results["mode"] == "quick"
    for stage in ("build", "git", "resolve", "quality", "tokens"):
        assert stage in results, stage
    assert all(math.isfinite(x) for x in _walk(results))
    first = results["resolve"]["first_answer"]  # spawn to first answer, with(out) bytecode
    assert all(len(first[c][k]) == first["runs"] for c in ("bytecode", "no_bytecode")
               for k in ("initialize_s", "answer_s"))
    build = results["build"]["corpora"]
    assert {"fastapi-docs", "flask-docs", "fastapi-x5"} <= set(build)
    for corpus in build.values():
        for kind in ("full", "nochange", "onechange", "secondname"):
            assert corpus[kind]["wall_s"]["median"] > 0
            assert corpus[kind]["peak_rss_mb"]["median"] > 5
        assert corpus["ratios"]["secondname_vs_full"]["median"] > 0
    for corpus in results["resolve"]["corpora"].values():
        # Warm calls were warm: one cache load for all of them (a count; timings are only
        # checked to be positive, since load beside the run can stretch any of them).
        assert corpus["in_process"]["warm_loads"] == 1
        assert corpus["in_process"]["warm_ms"]["median"] > 0
        assert corpus["mcp"]["rss_warm_mb"]["median"] > 5
    quality = results["quality"]
    assert quality["metrics"]["all"]["n"] == 50
    # --quick: fresh-1 and a one-round LOCO; fresh-2 (its sqlalchemy build) is full-bench only.
    assert set(quality["fresh"]) == {"fresh-1"}
    assert quality["fresh"]["fresh-1"]["metrics"]["all"]["n"] == 20
    assert quality["gold_missing"] == {"dev": [], "fresh-1": []}
    directions = quality["loco"]["directions"]
    assert set(directions) == {"flask-docs -> fastapi-docs", "fastapi-docs -> flask-docs"}
    for d in directions.values():
        assert d["n_train"] == d["n_test"] == 25
        assert d["train_mrr10"]["tuned"] >= d["train_mrr10"]["default"]
        assert {"test_tuned", "test_default", "test_bm25s"} <= set(d)
    assert len(quality["targets"]) == 3 + 2 + 2 * 2  # dev, fresh-1, both LOCO directions
