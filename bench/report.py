"""``bench/results/report.md``: the numbers of :mod:`bench.run` as a report a user can read.

Every timing is ``median [low–high]``: for whole processes low–high is the min–max over
the repeated runs, for per-call latencies the interquartile range over all calls. A
target is met (PASS) when the median meets it; "MISS (best run meets it)" says the
machine's noise alone could explain the miss (for per-call latencies: the p50 of the best
round or server spawn meets it).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SECTION_TITLES = (
    "## Machine",
    "## Targets",
    "## 1. Build",
    "## 2. Resolve latency",
    "## 3. Memory",
    "## 4. Retrieval quality",
    "## 5. Token-estimate accuracy",
    "## Method",
)

REFERENCE = {
    "jdocmunch_full_s": 1.9,
    "reference_cli_s": 0.39,
    "reference_server_fastapi_ms": 520.0,
    "reference_server_20x_ms": 9700.0,
}


def _num(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def spread(summary: dict[str, Any] | None, scale: float = 1.0, digits: int = 2,
           kind: str = "minmax") -> str:
    """``median [lo–hi]`` of a summary dict (``kind`` is ``minmax`` or ``iqr``)."""
    if summary is None:
        return "n/a"
    lo, hi = ("p25", "p75") if kind == "iqr" else ("min", "max")
    return (f"{_num(summary['median'] * scale, digits)} "
            f"[{_num(summary[lo] * scale, digits)}–{_num(summary[hi] * scale, digits)}]")


def table(head: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> str:
    """A Markdown table; ``align`` one character per column (``l`` or ``r``)."""
    align = align or "l" + "r" * (len(head) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class Target:
    area: str
    measure: str
    value: str
    target: str
    status: str
    note: str = ""


def _status(summary: dict[str, Any] | None, limit: float, at_least: bool = False,
            runs: dict[str, Any] | None = None) -> str:
    """PASS when the median meets ``limit``. For a per-call distribution, ``runs`` is the
    summary of the per-run (per-round or per-spawn) p50s: its best decides whether noise
    alone could explain a miss; otherwise the best process run does."""
    if summary is None:
        return "not run"
    source = runs if runs is not None else summary
    best = source["max"] if at_least else source["min"]

    def ok(v: float) -> bool:
        return v >= limit if at_least else v <= limit

    if ok(summary["median"]):
        return "PASS"
    return "MISS (best run meets it)" if ok(best) else "MISS"


def _get(data: dict[str, Any] | None, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _largest_scaled(corpora: dict[str, Any], copies: int = 20) -> str | None:
    return next((n for n, c in corpora.items() if c.get("copies") == copies), None)


def _second_name(c: dict[str, Any]) -> str:
    ratio = _get(c, "ratios", "secondname_vs_full", "median")
    if ratio is None:  # results from before the row existed
        return "-"
    return f"{100 * ratio:.1f} % ({c.get('parse_cache_mb', 0):.1f})"


def targets(results: dict[str, Any]) -> list[Target]:
    """Every target of the issue with its measured median and the verdict."""
    out: list[Target] = []
    build = _get(results, "build", "corpora") or {}
    fa = build.get("fastapi-docs")
    for kind, limit, label, note in (
        ("full", 0.5, "fastapi-docs full build", "jDocMunch: 1.9 s (measured elsewhere)"),
        ("onechange", 0.3, "fastapi-docs, one file changed", ""),
        ("nochange", 0.2, "fastapi-docs, nothing changed", ""),
    ):
        s = _get(fa, kind, "wall_s")
        out.append(Target("build", label, f"{spread(s)} s", f"<= {limit} s",
                          _status(s, limit), note))
    x20 = _largest_scaled(build)
    for kind, label in (("full", "full build"), ("onechange", "one file changed")):
        s = _get(build.get(x20) if x20 else None, kind, "peak_rss_mb")
        out.append(Target("build", f"peak RSS, 20x fastapi (~30 MB), {label}",
                          f"{spread(s, digits=0)} MiB", "<= 100 MiB", _status(s, 100.0),
                          "max over the build process and its workers"))
    ratio = _get(build.get(x20) if x20 else None, "ratios", "secondname_vs_full")
    out.append(Target("build", "20x fastapi, same docs under a second name / full build",
                      f"{spread(ratio, 100, 1)} %", "<= 25 %", _status(ratio, 0.25),
                      "sections from the root's parse cache"))
    git = results.get("git")
    for kind, label in (("git", "git source (fetch)"), ("checkout", "checkout (git pull)")):
        if git:
            ratio = git[f"{kind}_ratio"]
            value = (f"{100 * ratio:.1f} % ({git[f'{kind}_incremental_seconds']:.2f} s / "
                     f"{git[f'{kind}_full_seconds']:.2f} s)")
            status = "PASS" if ratio <= 0.10 else "MISS"
        else:
            value, status = "n/a", "not run"
        out.append(Target("build", f"incremental after git pull / full, {label}", value,
                          "<= 10 %", status, "ratio of medians, same run"))
    res = _get(results, "resolve", "corpora") or {}
    fr = res.get("fastapi-docs")
    s = _get(fr, "cold", "wall_s")
    out.append(Target("resolve", "cold `context resolve` process, fastapi-docs",
                      f"{spread(s)} s", "<= 0.25 s", _status(s, 0.25),
                      "reference CLI: 0.39 s (measured elsewhere)"))
    r20 = _largest_scaled(res)
    for corpus, name, limit in ((fr, "fastapi-docs", 5.0), (res.get(r20) if r20 else None,
                                                            "20x fastapi", 25.0)):
        s = _get(corpus, "in_process", "warm_ms")
        out.append(Target("resolve", f"in-process `tools.resolve` p50, {name}",
                          f"{spread(s, kind='iqr')} ms", f"<= {limit:g} ms",
                          _status(s, limit, runs=_get(corpus, "in_process",
                                                      "warm_round_p50_ms")),
                          "IQR of calls"))
    for corpus, name, limit, ref in (
        (fr, "fastapi-docs", 10.0, "reference server: ~520 ms"),
        (res.get(r20) if r20 else None, "20x fastapi", 30.0, "reference server: ~9.7 s"),
    ):
        s = _get(corpus, "mcp", "warm_ms")
        out.append(Target("resolve", f"warm MCP `tools/call` p50, {name}",
                          f"{spread(s, kind='iqr')} ms", f"<= {limit:g} ms",
                          _status(s, limit, runs=_get(corpus, "mcp", "warm_spawn_p50_ms")),
                          ref))
    out.extend(_serve_targets(results.get("serve")))
    s = _get(results, "resolve", "initialize_s")
    out.append(Target("resolve", "spawn `doc-index serve` to initialize response",
                      f"{spread(s)} s", "<= 0.5 s", _status(s, 0.5), "all spawns"))
    tok = _get(results, "tokens", "corpora") or {}
    for tokenizer in ("cl100k_base", "o200k_base"):
        worst = [tok[c][tokenizer]["estimate"]["worst_under"] for c in ("fastapi-docs",
                 "flask-docs") if c in tok]
        if worst:
            w = min(worst)
            out.append(Target("tokens", f"worst under-count per section vs {tokenizer}",
                              f"{100 * w:+.1f} %", ">= -25 %", "PASS" if w >= -0.25 else "MISS",
                              "both corpora, every section"))
        else:
            out.append(Target("tokens", f"worst under-count per section vs {tokenizer}",
                              "n/a", ">= -25 %", "not run"))
    answers = _get(results, "answers", "budgets") or {}
    for tokenizer in ("cl100k_base", "o200k_base"):
        worst = [b[tokenizer]["max"] for b in answers.values()]
        out.append(Target(
            "tokens", f"largest whole answer / budget vs {tokenizer}",
            f"{max(worst):.3f}" if worst else "n/a", "<= 1.0",
            ("PASS" if max(worst) <= 1.0 else "MISS") if worst else "not run",
            "dev questions, budgets " + "/".join(answers) if worst else ""))
    for t in _get(results, "quality", "targets") or []:  # issue 14's bars, bench/quality.py
        out.append(Target("quality", f"{t['group']} {t['measure']}", f"{t['value']:.3f}",
                          t["target"], "PASS" if t["met"] else "MISS", "same run"))
    return out


def _serve_targets(sv: dict[str, Any] | None) -> list[Target]:
    """The issue's targets are for 5 x 30 MB caches; ``--quick`` measures smaller ones."""
    if sv is None:
        return [Target("memory", f"`doc-index serve`, 5 x 30 MB caches in turn: {what}",
                       "n/a", limit, "not run")
                for what, limit in (("steady RSS", "<= 400 MiB"), ("peak RSS", "<= 400 MiB"),
                                    ("warm p50", "<= 30 ms"))]
    label = (f"`doc-index serve`, {len(sv['caches'])} x {sv['bytes'] / 1e6:.0f} MB caches "
             "in turn")
    note = f"{sv['corpus']} under {len(sv['caches'])} names"
    t = sv["targets"]
    steady, peak, warm = sv["rss_steady_mb"], sv["rss_peak_mb"], sv["warm_ms"]
    return [
        Target("memory", f"{label}: steady RSS", f"{spread(steady, 1, 0)} MiB",
               f"<= {t['rss_mb']} MiB", _status(steady, t["rss_mb"]),
               note + "; sampled after every call"),
        Target("memory", f"{label}: peak RSS", f"{peak:.0f} MiB", f"<= {t['rss_mb']} MiB",
               "PASS" if peak <= t["rss_mb"] else "MISS", "VmHWM, loads included"),
        Target("memory", f"{label}: warm p50", f"{spread(warm, kind='iqr')} ms",
               f"<= {t['p50_ms']} ms", _status(warm, t["p50_ms"]),
               f"p95 {sv['warm_p95_ms']:.1f} ms, {sv['calls']} calls"),
    ]


# --- sections ----------------------------------------------------------------------


def _machine(results: dict[str, Any]) -> str:
    m = results["machine"]
    load = results.get("load", {})
    cfg = results["config"]
    rows = [
        ("CPU", m["cpu"]),
        ("cores", f"{m['cores']} ({m['cores_usable']} usable by this process)"),
        ("RAM", f"{m['ram_gib']} GiB"),
        ("OS", m["os"]),
        ("Python", m["python"]),
        ("date", m["date"]),
        ("git commit", f"`{m['commit']}` {m['commit_subject']}"
         + (f" (+ {m['uncommitted_files']} tracked files with uncommitted changes)"
            if m["uncommitted_files"] else "")),
        ("load average (1/5/15 min)", f"start {_triple(load.get('start'))}, end "
         f"{_triple(load.get('end'))}; 1-min load during the run: median "
         f"{load.get('median_1min', 'n/a')}, max {load.get('max_1min', 'n/a')}"),
        ("mode", f"{results['mode']} (build repeats {cfg['build_repeats_small']} / "
         f"{cfg['build_repeats_large']} for corpora over 5 MB, cold CLI runs "
         f"{cfg['cold_runs']} / {cfg['cold_runs_large']}, {cfg['mcp_spawns']} server spawns "
         f"x {cfg['mcp_calls']} calls, in-process rounds {cfg['inproc_rounds']})"),
        ("duration", f"{results.get('duration_s', 0):.0f} s ("
         + ", ".join(f"{k} {v:.0f} s" for k, v in results.get("timings_s", {}).items()) + ")"),
    ]
    out = table(("", ""), rows, "ll")
    if load.get("max_1min", 0) > (m.get("cores_usable") or m["cores"] or 1):
        out += ("\n\nThe machine was shared with other jobs (load above the core count): wall "
                "times carry their noise. CPU times and the same-run ratios are the steadier "
                "figures.")
    return out


def _triple(values: Sequence[float] | None) -> str:
    return "/".join(f"{v:.2f}" for v in values) if values else "n/a"


def _targets(results: dict[str, Any]) -> str:
    rows = [(t.area, t.measure, t.value, t.target, f"**{t.status}**" if t.status.startswith(
        "MISS") else t.status, t.note) for t in targets(results)]
    return table(("area", "measure", "median [spread]", "target", "status", "note"), rows,
                 "llrrll")


def _not_run(results: dict[str, Any], stage: str) -> str | None:
    if stage in results:
        return None
    return f"Not run (`--skip {stage}`)." if stage in results.get("skipped", []) else "Not run."


def _build(results: dict[str, Any]) -> str:
    parts: list[str] = []
    build = results.get("build")
    if build is None:
        parts.append(_not_run(results, "build") or "")
    else:
        parts.append(
            "Whole `doc-index build DIR --root ROOT` processes, wall time from spawn to exit "
            "(seconds, median [min–max]). *full*: first build into an empty root; *no "
            "change*: the same command again; *one changed*: after a paragraph is appended "
            "to one page (the page of median size); *second name*: the same directory "
            "built under another `--name` (a new cache, its files' sections taken from the "
            "root's parse cache). Ratios are per repetition, then the "
            "median. *in-process* is the time the build prints itself (without interpreter "
            "start and imports).")
        rows = []
        for name, c in build["corpora"].items():
            rows.append((
                f"{name}", f"{c['bytes'] / 1e6:.1f}", str(c["files"]),
                str(c["details"]["full"]["sections"]),
                spread(c["full"]["wall_s"]), spread(c["full"]["cpu_s"]),
                spread(c["full"].get("reported_s")),
                spread(c["nochange"]["wall_s"]), spread(c["onechange"]["wall_s"]),
                spread(c["onechange"].get("reported_s")),
                f"{100 * c['ratios']['nochange_vs_full']['median']:.1f} %",
                f"{100 * c['ratios']['onechange_vs_full']['median']:.1f} %",
                _second_name(c),
                str(c["repeats"]),
            ))
        parts.append(table(("corpus", "MB", "files", "sections", "full s", "full CPU s",
                            "full in-process s", "no change s", "one changed s",
                            "one changed in-process s", "no change / full",
                            "one changed / full", "second name / full (parse cache MB)",
                            "runs"), rows))
        start = build["interpreter_start"]
        parts.append(f"Targets on fastapi-docs: full <= 0.5 s (jDocMunch: 1.9 s), one file "
                     f"changed <= 0.3 s, no change <= 0.2 s. For scale, `python -c pass` "
                     f"takes {spread(start['wall_s'], 1000, 0)} ms on this machine in this "
                     f"run, and importing what `doc-index build` needs "
                     f"{spread(_get(start, 'import_build', 'wall_s'), 1000, 0)} ms (interpreter "
                     f"included): the difference between *wall* and *in-process* above.")
    if "stages" in results:
        from .stages import render

        parts.append(render(results["stages"]))
    else:
        parts.append("Build stages: " + (_not_run(results, "stages") or ""))
    git = results.get("git")
    if git is None:
        parts.append("Git pull: " + (_not_run(results, "git") or ""))
    else:
        parts.append(
            f"**After `git pull`** ({git['doc_files']} generated doc files, "
            f"{git['doc_bytes'] / 1e6:.1f} MB, {git['changed_files']} files changed per pull, "
            f"median of {git['rounds']} runs; `bench/git_pull.py`):")
        rows = []
        for kind, label in (("git", "git source (`build file://...git`: fetch)"),
                            ("checkout", "checkout (`git pull`, then `build DIR`)")):
            rows.append((label, f"{git[f'{kind}_full_seconds']:.2f}",
                         f"{git[f'{kind}_incremental_seconds']:.2f}",
                         f"{100 * git[f'{kind}_ratio']:.1f} %",
                         git[f"{kind}_incremental_files"]))
        parts.append(table(("source", "full s", "incremental s", "incremental / full",
                            "incremental build saw"), rows, "lrrrl"))
        parts.append(f"Target: incremental <= 10 % of full. `git pull` itself: "
                     f"{git['git_pull_seconds']:.2f} s.")
    if "sync" in results:
        from .package_sync import render as render_sync

        parts.append(render_sync(results["sync"]))
    else:
        parts.append("Dependency sync: " + (_not_run(results, "sync") or ""))
    img = results.get("plots", {}).get("build")
    if img:
        parts.append(f"![build time against corpus size]({img})")
    return "\n\n".join(parts)


def _resolve(results: dict[str, Any]) -> str:
    res = results.get("resolve")
    if res is None:
        return _not_run(results, "resolve") or ""
    parts = [
        f"The questions of `queries-dev.jsonl` for the corpus (fastapi's for the copies), "
        f"budget {res['budget']} tokens. *cold*: one whole `context resolve --cache DIR "
        f"--query Q --budget {res['budget']}` process per question (median [min–max] of "
        f"runs). *in-process*: `server.tools.resolve` with the server's warm-cache memo in a "
        f"fresh interpreter, p50 [IQR] over every call of every round; *load + select*: the "
        f"same without the memo (each call loads the cache). *MCP*: a spawned `doc-index "
        f"serve` on pipes, warm `tools/call` round trips p50 [IQR]; *first call*: the first "
        f"`tools/call` after initialize (imports the tool code, loads the cache)."]
    rows = []
    for name, c in res["corpora"].items():
        rows.append((
            name, f"{c['bytes'] / 1e6:.1f}", str(c["sections"]),
            spread(c["cold"]["wall_s"], 1000, 0),
            spread(c["in_process"]["warm_ms"], 1, 2, "iqr"),
            f"{c['in_process']['warm_ms']['p90']:.2f}",
            spread(c["in_process"]["load_and_select_ms"], 1, 0, "iqr"),
            spread(c["mcp"]["warm_ms"], 1, 2, "iqr"),
            f"{c['mcp']['warm_ms']['p90']:.2f}",
            spread(c["mcp"]["first_call_s"], 1000, 0),
            spread(c["mcp"]["initialize_s"], 1000, 0),
        ))
    parts.append(table(("corpus", "MB", "sections", "cold CLI ms", "in-process p50 ms",
                        "p90", "load + select ms", "MCP warm p50 ms", "p90",
                        "MCP first call ms", "spawn to initialize ms"), rows))
    interp = _get(results, "build", "interpreter_start", "wall_s")
    fr = res["corpora"].get("fastapi-docs")
    notes = ["Targets: cold CLI <= 250 ms on fastapi-docs (reference CLI: 390 ms); "
             "in-process p50 <= 5 ms on fastapi-docs and <= 25 ms on 20x; warm MCP p50 <= 10 ms "
             "on fastapi-docs and <= 30 ms on 20x (reference server: ~520 ms and ~9.7 s); "
             "spawn to initialize <= 500 ms."]
    if interp and fr:
        ratio = fr["cold"]["wall_s"]["median"] / interp["median"]
        notes.append(f"Same-run ratio: a cold `context resolve` on fastapi-docs takes "
                     f"{ratio:.1f}x the time of `python -c pass`.")
    if res.get("initialize_s"):
        notes.append(f"Spawn to initialize response over all spawns: "
                     f"{spread(res['initialize_s'], 1000, 0)} ms.")
    parts.append(" ".join(notes))
    start = _get(results, "build", "interpreter_start")
    if start and "import_resolve" in start:
        rows = [(label, spread(start[key]["wall_s"], 1000, 0),
                 spread(start[key]["cpu_s"], 1000, 0))
                for key, label in (("python", "`python -c pass`"),
                                   ("import_build", "+ import `doc-index build` modules"),
                                   ("import_resolve", "+ import `context resolve` modules"),
                                   ("import_mcp_sdk", "+ import the MCP SDK and server"))
                if key in start]
        parts.append("**Start-up costs** (same run; `python -c 'import ...'`, interpreter "
                     "included, ms):")
        parts.append(table(("process", "wall ms", "CPU ms"), rows))
        if fr:
            cold = fr["cold"]["wall_s"]["median"] * 1000
            imports = start["import_resolve"]["wall_s"]["median"] * 1000
            work = fr["in_process"]["load_and_select_ms"]["median"]
            parts.append(
                f"Where a cold `context resolve` on fastapi-docs goes ({cold:.0f} ms): "
                f"interpreter and imports {imports:.0f} ms, loading the cache and selecting "
                f"{work:.0f} ms (in-process, no warm cache), the rest "
                f"{cold - imports - work:.0f} ms (argument parsing, output, exit). The first "
                f"MCP `tools/call` ({fr['mcp']['first_call_s']['median'] * 1000:.0f} ms) "
                f"is answered while the SDK is still being imported (below).")
    if res.get("first_answer"):
        parts.append(_first_answer(res["first_answer"]))
    img = results.get("plots", {}).get("resolve")
    if img:
        parts.append(f"![resolve latency against corpus size]({img})")
    return "\n\n".join(parts)


def _serve_memory(sv: dict[str, Any]) -> list[str]:
    """The warm server holding several large caches (``bench/serve_memory.py``)."""
    n = len(sv["caches"])
    parts = [
        f"**A server holding {n} large caches.** `doc-index serve` with {sv['corpus']} "
        f"({sv['bytes'] / 1e6:.0f} MB of Markdown) built under {n} names, asked the "
        f"{sv['queries']} dev questions in turn, each of every cache ({sv['calls']} "
        "calls after one first call per cache). Loaded caches are kept within "
        "`DOC_INDEX_SERVE_CACHE_MB` (default 256) of estimated memory, least recently used "
        "first out. RSS in MiB (steady: sampled after every call, median [min–max]; peak: "
        "the kernel's VmHWM); the single-cache figure is a second server that loaded one."]
    loaded = " / ".join(f"{x:.0f}" for x in sv["rss_loaded_mb"])
    first = " / ".join(f"{x:.0f}" for x in sv["first_call_ms"])
    t = sv["targets"]
    rows = [
        ("RSS idle (after initialize)", f"{sv['rss_idle_mb']:.0f}", ""),
        ("RSS after the first call on 1 ... n caches", loaded, ""),
        ("RSS, caches asked in turn (steady)", spread(sv["rss_steady_mb"], 1, 0),
         f"<= {t['rss_mb']}"),
        ("peak RSS", f"{sv['rss_peak_mb']:.0f}", f"<= {t['rss_mb']}"),
        ("RSS, one cache loaded", f"{sv['rss_single_mb']:.0f}", ""),
        ("warm `tools/call` ms: p50 [IQR]", spread(sv["warm_ms"], kind="iqr"),
         f"<= {t['p50_ms']}"),
        ("warm `tools/call` ms: p95", f"{sv['warm_p95_ms']:.1f}", ""),
        ("first call per cache ms (load)", first, ""),
    ]
    parts.append(table(("", "measured", "target"), rows, "lrr"))
    bd = sv.get("breakdown")
    if bd:
        parts.append(
            f"Where one loaded cache's memory goes (`python -m bench.serve_memory breakdown`, "
            f"MiB): tracemalloc holds {bd['traced_held']:.1f} after load and one resolve "
            f"(peak while loading {bd['traced_peak']:.1f}); the server's estimate, which the "
            f"budget counts, is {bd['estimate']:.1f}. By part (`sys.getsizeof`, shared "
            "objects counted once):")
        top = sorted(bd["parts"].items(), key=lambda kv: -kv[1])
        parts.append(table(("part", "MiB"), [(k, f"{v:.2f}") for k, v in top]))
    return parts


def _http_load(hl: dict[str, Any]) -> list[str]:
    """Concurrent clients on one ``serve --http`` (``bench/http_load.py``)."""
    c = hl["check"]
    builds = ", ".join(f"to {b['generation']} at {b['at_s']:.0f} s ({b['seconds']:.1f} s)"
                       for b in hl["builds"])
    rows = [
        ("requests: right / wrong / failed", f"{c['right']} / {c['wrong']} / {c['failed']}",
         "wrong = failed = 0"),
        ("requests overlapping a rebuild", f"{c['overlapping_a_rebuild']}", ""),
        ("answered from generation A / B",
         f"{c['answered_from']['A']} / {c['answered_from']['B']}", ""),
        ("throughput, requests/s", f"{hl['throughput_per_s']:.1f}", ""),
        ("latency ms: p50 [IQR]", spread(hl["latency_ms"], 1, 0, kind="iqr"), ""),
        ("latency ms: p95 / p99", f"{hl['p95_ms']:.0f} / {hl['p99_ms']:.0f}", ""),
        ("RSS MiB: idle / steady median [min–max] / peak",
         f"{hl['rss_idle_mb']:.0f} / {spread(hl['rss_steady_mb'], 1, 0)} / "
         f"{hl['rss_peak_mb']:.0f}", f"<= {hl['rss_bound_mb']:.0f}"),
        ("load average before / after",
         f"{hl['load_before'][0]:.1f} / {hl['load_after'][0]:.1f}", ""),
    ]
    return [
        f"**Many clients over HTTP.** {hl['clients']} clients, each its own connection, "
        f"post `context.resolve` (budget {hl['budget']}) for {hl['seconds']:.0f} s to one "
        f"`doc-index serve --http` on the {hl['corpus_mb']:.0f} MB corpus, walking the "
        f"{hl['questions']} fastapi-docs dev questions; the cache is rebuilt mid-run "
        f"({builds}; generation B changes one page and so every answer's scores). Every "
        "answer is checked against the `context` CLI's answer on the generation it may "
        "come from (either one while a build ran). The RSS bound is the idle server plus "
        f"1.2 x `DOC_INDEX_SERVE_CACHE_MB`={hl['cache_mb']} (`python -m bench.http_load`).",
        table(("", "measured", "target"), rows, "lrr")]


def _first_answer(fa: dict[str, Any]) -> str:
    """Spawn to the first ``tools/call`` answer, with and without bytecode."""
    labels = {"bytecode": "with bytecode", "no_bytecode": "no bytecode (compiled from source)"}
    rows = []
    for condition, label in labels.items():
        series = fa[condition]
        rows.append((label, f"{statistics.median(series['initialize_s']) * 1000:.0f}",
                     f"{statistics.median(series['answer_s']) * 1000:.0f}",
                     f"{min(series['answer_s']) * 1000:.0f}–{max(series['answer_s']) * 1000:.0f}"))
    return "\n\n".join([
        f"**Spawn to the first answer** (fastapi-docs, `{fa['query']}`): a client spawns "
        f"`doc-index serve` and writes `initialize`, `notifications/initialized` and "
        f"`tools/call` at once, as clients do at start-up; the SDK answers all three. Medians "
        f"of {fa['runs']} spawns; *no bytecode*: `PYTHONDONTWRITEBYTECODE=1` with an empty "
        f"`PYTHONPYCACHEPREFIX`, every module compiled from source as on a CI runner without "
        f"`.pyc` files.",
        table(("", "spawn to initialize ms", "spawn to first answer ms", "range ms"), rows,
              "lrrr"),
    ])


def _memory(results: dict[str, Any]) -> str:
    build = _get(results, "build", "corpora")
    res = _get(results, "resolve", "corpora")
    sv = results.get("serve")
    if not build and not res:
        if sv:
            return "\n\n".join(_serve_memory(sv))
        return "Not run (needs the build or resolve stage)."
    parts = [
        "MiB, median [min–max]. *Build peak RSS*: the kernel's `ru_maxrss` of the reaped "
        "`doc-index build` process, which folds in every worker it waited for, so it is the "
        "largest single process of the build. *Tree sum*: the largest sum of RSS over the "
        "process and its workers, sampled every 25 ms with psutil (pages shared after fork "
        "count once per process: an upper bound). *Server*: RSS of `doc-index serve` right "
        "after initialize and after the warm calls (that one cache loaded)."]
    names = list(build or res or {})
    rows = []
    for name in names:
        b = (build or {}).get(name)
        r = (res or {}).get(name)
        rows.append((
            name, f"{(b or r or {}).get('bytes', 0) / 1e6:.1f}",
            spread(_get(b, "full", "peak_rss_mb"), 1, 0),
            spread(_get(b, "nochange", "peak_rss_mb"), 1, 0),
            spread(_get(b, "onechange", "peak_rss_mb"), 1, 0),
            spread(_get(b, "full", "tree_rss_mb"), 1, 0),
            spread(_get(r, "mcp", "rss_idle_mb"), 1, 0),
            spread(_get(r, "mcp", "rss_warm_mb"), 1, 0),
            f"{r['in_process']['rss_mb']:.0f}" if r else "n/a",
        ))
    parts.append(table(("corpus", "MB", "build peak: full", "no change", "one changed",
                        "full, tree sum", "server idle", "server warm",
                        "in-process resolve"), rows))
    parts.append("Target: build peak RSS <= 100 MiB on the 30 MB corpus (20x fastapi).")
    if sv:
        parts.extend(_serve_memory(sv))
    if results.get("http"):
        parts.extend(_http_load(results["http"]))
    img = results.get("plots", {}).get("memory")
    if img:
        parts.append(f"![memory against corpus size]({img})")
    parts.append(_shapes(results))
    return "\n\n".join(parts)


def _shapes(results: dict[str, Any]) -> str:
    shapes = results.get("shapes")
    if shapes is None:
        return "**Hostile file shapes**: " + (_not_run(results, "shapes") or "")
    from .memory_shapes import HEAD, rows

    return "\n\n".join([
        "**Hostile file shapes** (`bench/memory_shapes.py`, issue 21): one file of each "
        "shape built alone by `doc-index build` (parse cache off). *bytes/byte*: the "
        "largest sum of the process tree's RSS over the file's size; *cold resolve*: one "
        "`doc-index resolve` process on its cache. Targets: 60 s and 1 GiB (tree sum) per "
        "file up to 10 MB, or skipped with a reason; a cold resolve within 5 s.",
        table(HEAD, rows(shapes), "lrrrrrrrl")])


def _quality(results: dict[str, Any]) -> str:
    q = results.get("quality")
    if q is None:
        return _not_run(results, "quality") or ""
    parts = [
        "`bench/quality.py` on the dev questions: MRR@10, hit@5 and budget-hit@2000 (a gold "
        "section is among what a 2,000-token budget selects). *bm25s*: plain BM25 (bm25s "
        "defaults, English stopwords, Snowball stemmer) over each section's text; *v0*: the "
        "Context Engine v0 formula (term matches / total words). All three rank the same "
        "sections of the same build; the ratios compare doc-index with each baseline in "
        "this run. Deterministic: no repeats needed."]
    parts.append(_quality_table(q["metrics"]))
    for name, fresh in q.get("fresh", {}).items():
        parts.append(f"**{name}** (`bench/questions/{name}.jsonl`, kept as written; its "
                     "history is in that folder's README):")
        parts.append(_quality_table(fresh["metrics"]))
    if q.get("leads"):
        parts.append(_leads(q["leads"]))
    if "loco" in q:
        parts.append(_loco(q["loco"]))
    missing = [f"{name}: {m}" for name, ms in q.get("gold_missing", {}).items() for m in ms]
    parts.append("Gold sections missing from the builds (such a question can never be "
                 "answered): " + ("; ".join(missing) if missing else "none") + ".")
    checks = q.get("cli_check")
    if checks:
        parts.append("CLI check (the `context resolve` subprocess returns the same documents "
                     "as in-process `select`): " + ", ".join(
                         f"{k} {v['equal']}/{v['checked']} {v['status']}"
                         for k, v in checks.items()) + ".")
    img = results.get("plots", {}).get("quality")
    if img:
        parts.append(f"![retrieval quality per corpus and difficulty]({img})")
    return "\n\n".join(parts)


def _lead(got: dict[str, Any]) -> str:
    m = got["mrr10"]
    return f"{m['diff']:+.3f} [{m['low']:+.3f}, {m['high']:+.3f}]"


def _meaning(results: dict[str, Any]) -> str:
    """The semantic extra's rows (``stage_meaning``): every set with and without it."""
    mn = results.get("meaning")
    if mn is None:
        return "**With the semantic extra**: " + (_not_run(results, "meaning") or "")
    if "skipped" in mn:
        return f"**With the semantic extra**: skipped ({mn['skipped']})."
    rows = []
    for name, m in mn["sets"].items():
        cells = [f"{m[s]['mrr10']:.3f} / {m[s]['hit5']:.2f} / {m[s]['budget_hit']:.2f}"
                 for s in ("hybrid", "doc-index", "bm25s")]
        rows.append((name, str(m["n"]), *cells))
    leads = [f"{name}: MRR hybrid - BM25 {_lead(g['over_bm25s'])}, hybrid - lexical "
             f"{_lead(g['over_doc_index'])}" for name, g in mn["leads"].items()]
    missed = [f"{t['set']} {t['measure']} {t['value']:.3f} ({t['target']})"
              for t in mn["targets"] if not t["met"]]
    return "\n\n".join([
        f"**With the semantic extra** (`bench/semantic.py`, issue 25; model {mn['model']}, "
        f"{mn['pieces']} word pieces, {mn['scheme']} codes; fusion {mn['params']}): MRR@10 / "
        "hit@5 / budget-hit@2000 of the hybrid, the lexical ranking alone (what doc-index "
        "answers without the extra) and plain BM25, on the same sections. fresh-3 is held "
        "out: never used to choose the fusion.",
        table(("set", "n", "with the extra", "without (lexical)", "bm25s"), rows, "lrlll"),
        "95 % paired bootstrap intervals: " + "; ".join(leads) + ".",
        "Issue 25 targets missed: " + ("; ".join(missed) if missed else "none") + "."])


def _quality_table(metrics: dict[str, Any]) -> str:
    rows = []
    for group, m in metrics.items():
        d, b, v = m["doc-index"], m["bm25s"], m["v0"]
        rows.append((
            group, str(m["n"]),
            f"{d['mrr10']:.3f}", f"{d['hit5']:.3f}", f"{d['budget_hit']:.3f}",
            f"{b['mrr10']:.3f}", f"{b['hit5']:.3f}", f"{b['budget_hit']:.3f}",
            f"{v['mrr10']:.3f}", f"{v['hit5']:.3f}", f"{v['budget_hit']:.3f}",
            _ratio(d["mrr10"], b["mrr10"]), _ratio(d["mrr10"], v["mrr10"]),
        ))
    return table(("group", "n", "doc-index MRR@10", "hit@5", "budget-hit",
                  "bm25s MRR@10", "hit@5", "budget-hit", "v0 MRR@10", "hit@5",
                  "budget-hit", "MRR vs bm25s", "MRR vs v0"), rows)


def _leads(leads: dict[str, Any]) -> str:
    rows = []
    for name, got in leads.items():
        m, b = got["mrr10"], got["budget_hit"]
        rows.append((name, str(m["n"]), f"{m['diff']:+.3f}", f"[{m['low']:+.3f}, {m['high']:+.3f}]",
                     f"{m['wins']} / {m['losses']} / {m['ties']}", f"{b['diff']:+.3f}",
                     f"[{b['low']:+.3f}, {b['high']:+.3f}]"))
    return ("**How sure each lead over plain BM25 is** (`bench/significance.py`): doc-index "
            "minus bm25s per question set, with the 95 % paired bootstrap interval (the "
            "questions resampled, the same draw for both systems) and the questions where "
            "doc-index ranks the first gold section higher / lower / the same. An interval "
            "that holds 0 is a lead this many questions cannot tell from chance.\n\n"
            + table(("set", "n", "MRR@10 lead", "95 % interval", "wins / losses / ties",
                     "budget-hit lead", "95 % interval"), rows, "lrrrrrr"))


def _loco(loco: dict[str, Any]) -> str:
    rows = []
    for name, r in loco["directions"].items():
        for label, key in (("doc-index, tuned", "test_tuned"),
                           ("doc-index, defaults", "test_default"), ("bm25s", "test_bm25s")):
            m = r[key]
            rows.append((name, str(r["n_test"]), label, f"{m['mrr10']:.3f}", f"{m['hit5']:.3f}",
                         f"{m['budget_hit']:.3f}"))
    changed = "; ".join(
        f"{name}: " + (", ".join(f"{k} {v['default']:g} -> {v['tuned']:g}"
                                 for k, v in r["changed"].items()) or "none")
        + f" (train MRR {r['train_mrr10']['default']:.3f} -> {r['train_mrr10']['tuned']:.3f})"
        for name, r in loco["directions"].items())
    return ("**Leave-one-corpus-out** (`bench/loco.py`): every numeric field of "
            "`search.ranking.Params` tuned on one corpus's dev questions (coordinate search, "
            f"each value x {loco['multipliers']} of its default, at most {loco['rounds']} "
            "rounds, maximizing MRR@10 then budget-hit), scored on the other corpus's "
            f"questions; {loco['seconds']} s. The search starts from the shipped defaults, "
            "which were chosen looking at both corpora: this shows what retuning on one "
            "corpus does to the other, not a score of a design never shown the other.\n\n"
            + table(("tuned on -> scored on", "n", "system", "MRR@10", "hit@5", "budget-hit"),
                    rows, "lrlrrr")
            + f"\n\nWeights changed by the tuning: {changed}.")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "n/a"


def _tokens(results: dict[str, Any]) -> str:
    tok = results.get("tokens")
    if tok is None:
        return (_not_run(results, "tokens") or "") + "\n\n" + _answers(results)
    parts = [
        "Every section of the fastapi-docs and flask-docs caches (the bytes `resolve` "
        "returns, with the `tokens` stored at build time) and the synthetic texts of "
        "`bench/token_accuracy.py` (code, JSON, CJK, emoji, URLs, ...), counted with the "
        "real cl100k_base and o200k_base BPE (`bpe-openai`). Ratio = estimate / real; worst "
        "under = lowest ratio - 1, worst over = highest ratio - 1. Baseline: "
        "`ceil(utf8_bytes / 4)`."]
    rows = []
    for corpus, res in tok["corpora"].items():
        for tokenizer in ("cl100k_base", "o200k_base"):
            for method, label in (("estimate", "doc-index estimate"),
                                  ("baseline", "ceil(bytes/4)")):
                s = res[tokenizer][method]
                rows.append((corpus, tokenizer, label, str(res["sections"]),
                             f"{100 * s['worst_under']:+.1f} %",
                             f"{100 * s['worst_over']:+.1f} %",
                             f"{s['median_ratio']:.3f}", f"{s['total_ratio']:.3f}"))
    parts.append(table(("corpus", "tokenizer", "method", "sections", "worst under",
                        "worst over", "median ratio", "total ratio"), rows, "lllrrrrr"))
    diffs = {c: r.get("stored_differs_from_estimate", 0) for c, r in tok["corpora"].items()}
    parts.append("Target: the estimate under-counts no section of the corpora by more than "
                 "25 %. Sections whose stored `tokens` differ from `estimate_tokens` of "
                 "their text: " + ", ".join(f"{c} {n}" for c, n in diffs.items()) + ".")
    speed = [f"{c} {r['mb_per_s']:.1f} MB/s" for c, r in tok["corpora"].items()
             if c != "synthetic"]
    parts.append("Estimator throughput (CPU time, best of 3): " + ", ".join(speed) + ".")
    img = results.get("plots", {}).get("tokens")
    if img:
        parts.append(f"![token estimate against real BPE counts]({img})")
    parts.append(_answers(results))
    return "\n\n".join(parts)


def _answers(results: dict[str, Any]) -> str:
    ans = results.get("answers")
    if ans is None:
        return "Whole answers: " + (_not_run(results, "answers") or "")
    parts = [
        f"**Whole answers** (`bench/answer_tokens.py`): the {ans['questions']} dev questions "
        "answered through `tools.resolve` (the bytes the CLI prints and MCP sends: documents "
        "with metadata and provenance, the selection object) at each budget, counted with "
        "the real tokenizers; answer tokens / budget. Target: max <= 1.0."]
    rows = []
    for budget, entry in ans["budgets"].items():
        for tokenizer in ("cl100k_base", "o200k_base"):
            t = entry[tokenizer]
            rows.append((budget, tokenizer, f"{t['max']:.3f}", f"{t['mean']:.3f}",
                         str(t["over"]), str(entry["documents"]), str(entry["excerpts"])))
    parts.append(table(("budget", "tokenizer", "max", "mean", "over budget", "documents",
                        "excerpts"), rows, "rlrrrrr"))
    return "\n\n".join(parts)


def _method(results: dict[str, Any]) -> str:
    return "\n".join([
        "- Every figure is a median over repeated runs with its spread: min–max for whole "
        "processes, IQR for per-call latencies. Comparisons (incremental / full, doc-index / "
        "baseline, cold CLI / `python -c pass`) are ratios taken inside the same run, "
        "because the machine is shared and noisy; the reference systems' figures (jDocMunch, "
        "the Context Engine reference CLI and server) were measured elsewhere and are quoted.",
        "- Processes are the installed console scripts (`.venv/bin/doc-index`, "
        "`.venv/bin/context`) and may write bytecode (`PYTHONDONTWRITEBYTECODE` is unset "
        "for them, as on a user's machine); each resolve measurement starts after one "
        "discarded warm-up run. Page cache is warm: these are not cold-disk numbers.",
        "- Corpora are copied fresh under the work directory on each run: fastapi-docs "
        "(155 Markdown files), flask-docs (76 RST files), and fastapi-docs copied n times "
        "into `copy-01/ ...` subfolders (n = " + ", ".join(
            str(c["copies"]) for c in results.get("corpora", []) if c["copies"]) + ").",
        "- Build peak RSS comes from `wait4` rusage (no sampling error); the tree sum is "
        "sampled with psutil in a thread while the orchestrator blocks in `wait4`.",
        "- Raw numbers: `results.json` next to this report.",
    ])


def _embedding(results: dict[str, Any]) -> str:
    """Issue 30's speed targets for answers by meaning (``stage_embedding``)."""
    got = results.get("embedding")
    if got is None:
        return "**Answers by meaning, speed**: " + (_not_run(results, "embedding") or "")
    if "skipped" in got:
        return f"**Answers by meaning, speed**: skipped ({got['skipped']})."
    from .meaning_speed import render as render_speed

    return render_speed(got)


def render(results: dict[str, Any], images: bool = True) -> str:
    """The whole report; without ``images`` the figure lines are left out (for stdout)."""
    data = results if images else {**results, "plots": {}}
    m = results["machine"]
    out = [
        "# doc-index benchmark report",
        "",
        f"`python -m bench.run{' --quick' if results['mode'] == 'quick' else ''}` on "
        f"{m['date']}, commit `{m['commit']}`. Regenerate with `make bench` "
        "(or `.venv/bin/python -m bench.run`); `make bench-quick` for a two-minute smoke run.",
        "",
        SECTION_TITLES[0], "", _machine(data), "",
        SECTION_TITLES[1], "", _targets(data), "",
        SECTION_TITLES[2], "", _build(data), "",
        SECTION_TITLES[3], "", _resolve(data), "",
        SECTION_TITLES[4], "", _memory(data), "",
        SECTION_TITLES[5], "", _quality(data), "", _meaning(data), "", _embedding(data), "",
        SECTION_TITLES[6], "", _tokens(data), "",
        SECTION_TITLES[7], "", _method(data), "",
    ]
    return "\n".join(out)
