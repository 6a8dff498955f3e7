"""The report's figures (matplotlib, Agg backend): one PNG per report section.

Every point is a median; error bars are the min-max over repeated process runs, or the
interquartile range of per-call latencies. Targets are drawn as hollow markers at the
corpus they are set for, reference systems' figures (measured elsewhere) as grey stars.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

FIGSIZE = (11.0, 4.6)
DPI = 110
COLORS = {"full": "#1f77b4", "nochange": "#2ca02c", "onechange": "#ff7f0e",
          "cold": "#d62728", "inproc": "#1f77b4", "mcp": "#2ca02c", "first": "#9467bd",
          "init": "#8c564b", "server": "#2ca02c", "tree": "#7f7f7f",
          "doc-index": "#1f77b4", "bm25s": "#ff7f0e", "v0": "#7f7f7f"}
KIND_LABEL = {"full": "full build", "nochange": "no change", "onechange": "one file changed"}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _family(corpora: dict[str, dict[str, Any]]) -> list[str]:
    """The fastapi size series in size order: x1 (or fastapi-docs when x1 was not run),
    x5, x20."""
    names = [n for n, c in corpora.items() if c.get("copies", 0) > 0]
    if not any(corpora[n]["copies"] == 1 for n in names) and "fastapi-docs" in corpora:
        names.append("fastapi-docs")
    return sorted(names, key=lambda n: corpora[n]["bytes"])


def _errorbar(ax: Any, xs: list[float], summaries: list[dict[str, Any]], scale: float,
              spread: str, **kwargs: Any) -> None:
    med = [s["median"] * scale for s in summaries]
    if spread == "iqr":
        lo = [(s["median"] - s["p25"]) * scale for s in summaries]
        hi = [(s["p75"] - s["median"]) * scale for s in summaries]
    else:
        lo = [(s["median"] - s["min"]) * scale for s in summaries]
        hi = [(s["max"] - s["median"]) * scale for s in summaries]
    ax.errorbar(xs, med, yerr=[lo, hi], capsize=3, **kwargs)


def _series(ax: Any, corpora: dict[str, dict[str, Any]], get: Callable[[dict[str, Any]],
            dict[str, Any] | None], scale: float, spread: str, color: str, label: str) -> None:
    """One measure over the size series (a line), on fastapi-docs (a diamond, when it is
    not part of the line) and on flask-docs (a square)."""
    values: dict[str, dict[str, Any]] = {}
    for name, corpus in corpora.items():
        value = get(corpus)
        if value is not None:
            values[name] = value
    fam = [n for n in _family(corpora) if n in values]
    if fam:
        _errorbar(ax, [corpora[n]["bytes"] / 1e6 for n in fam], [values[n] for n in fam],
                  scale, spread, color=color, marker="o", label=label)
    for name, marker in (("fastapi-docs", "D"), ("flask-docs", "s")):
        if name in values and name not in fam:
            _errorbar(ax, [corpora[name]["bytes"] / 1e6], [values[name]], scale, spread,
                      color=color, marker=marker, linestyle="none")


def _target(ax: Any, x: float, y: float, color: str, label: str | None = None) -> None:
    ax.plot([x], [y], marker="_", markersize=22, markeredgewidth=2.5, color=color,
            linestyle="none", label=label)


def _reference(ax: Any, x: float, y: float, text: str) -> None:
    ax.plot([x], [y], marker="*", markersize=11, color="#555555", linestyle="none")
    ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=7,
                color="#555555")


def _plain_log_axis(axis: Any, ticks: Sequence[float]) -> None:
    """Log scale with plain-number labels at ``ticks`` (no 3x10^0 clutter)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    axis.set_major_locator(FixedLocator(list(ticks)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _size_axes(ax: Any, ylabel: str, title: str,
               yticks: Sequence[float] | None = None) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_axis(ax.xaxis, (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100))
    _plain_log_axis(ax.yaxis, yticks or [m * 10.0**e for e in range(-3, 6) for m in (1, 2, 5)])
    ax.set_xlabel("corpus size (MB of Markdown/RST; square = flask-docs)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)


def build_figure(results: dict[str, Any], out: Path) -> str | None:
    build = results.get("build")
    if not build:
        return None
    plt = _plt()
    corpora = build["corpora"]
    git = results.get("git")
    fig, axes = plt.subplots(1, 3 if git else 2, figsize=(15.0, 4.6) if git else FIGSIZE)
    fastapi_mb = corpora["fastapi-docs"]["bytes"] / 1e6 if "fastapi-docs" in corpora else None
    for ax, field, title in ((axes[0], "wall_s", "wall time of whole processes"),
                             (axes[1], "cpu_s", "CPU time (user+sys, incl. workers)")):
        for kind in ("full", "nochange", "onechange"):
            _series(ax, corpora, lambda c, k=kind, f=field: c[k][f], 1.0, "minmax",
                    COLORS[kind], KIND_LABEL[kind])
        if fastapi_mb and field == "wall_s":
            for kind, goal in (("full", 0.5), ("onechange", 0.3), ("nochange", 0.2)):
                _target(ax, fastapi_mb, goal, COLORS[kind],
                        "targets at fastapi-docs (colour = kind)" if kind == "full" else None)
            _reference(ax, fastapi_mb, 1.9, "jDocMunch full 1.9 s")
        _size_axes(ax, "seconds", f"doc-index build: {title}")
        ax.legend(fontsize=7, loc="upper left")
    if git:
        ax = axes[2]
        labels = ["git source\nfull", "git source\nincremental", "checkout\nfull",
                  "checkout\nincremental"]
        keys = ["git_full", "git_incremental", "checkout_full", "checkout_incremental"]
        vals = [git["all_seconds"][k] for k in keys]
        meds = [sorted(v)[len(v) // 2] for v in vals]
        lo = [m - min(v) for m, v in zip(meds, vals)]
        hi = [max(v) - m for m, v in zip(meds, vals)]
        ax.bar(range(4), meds, yerr=[lo, hi], capsize=4,
               color=[COLORS["full"], COLORS["onechange"]] * 2)
        ax.set_xticks(range(4), labels, fontsize=8)
        ax.set_ylabel("seconds")
        ax.set_title(f"after git pull: {git['changed_files']} of {git['doc_files']} files "
                     "changed\n(target: incremental <= 10% of full; bars: min-max)", fontsize=9)
        ax.grid(True, axis="y", alpha=0.25)
    fig.tight_layout()
    fig.savefig(out / "build_time.png", dpi=DPI)
    plt.close(fig)
    return "build_time.png"


def latency_figure(results: dict[str, Any], out: Path) -> str | None:
    res = results.get("resolve")
    if not res:
        return None
    plt = _plt()
    corpora = res["corpora"]
    fig, axes = plt.subplots(1, 2, figsize=FIGSIZE)
    ax = axes[0]
    _series(ax, corpora, lambda c: c["in_process"]["warm_ms"], 1.0, "iqr", COLORS["inproc"],
            "in-process tools.resolve p50")
    _series(ax, corpora, lambda c: c["mcp"]["warm_ms"], 1.0, "iqr", COLORS["mcp"],
            "warm MCP tools/call p50")
    fam = _family(corpora)
    if "fastapi-docs" in corpora:
        x = corpora["fastapi-docs"]["bytes"] / 1e6
        _target(ax, x, 5, COLORS["inproc"], "targets")
        _target(ax, x, 10, COLORS["mcp"])
        _reference(ax, x, 520, "reference server 520 ms")
    big = [n for n in fam if corpora[n]["copies"] == 20]
    if big:
        x = corpora[big[0]]["bytes"] / 1e6
        _target(ax, x, 25, COLORS["inproc"])
        _target(ax, x, 30, COLORS["mcp"])
        _reference(ax, x, 9700, "reference server 9.7 s")
    _size_axes(ax, "milliseconds (error bars: IQR of calls)", "resolve with the cache warm")
    ax.legend(fontsize=7, loc="upper left")
    ax = axes[1]
    _series(ax, corpora, lambda c: c["cold"]["wall_s"], 1000.0, "minmax", COLORS["cold"],
            "cold `context resolve` process")
    _series(ax, corpora, lambda c: c["mcp"]["first_call_s"], 1000.0, "minmax",
            COLORS["first"], "first MCP tools/call (loads the cache)")
    _series(ax, corpora, lambda c: c["mcp"]["initialize_s"], 1000.0, "minmax", COLORS["init"],
            "spawn to initialize response")
    _series(ax, corpora, lambda c: c["in_process"]["load_and_select_ms"], 1.0, "iqr",
            COLORS["inproc"], "in-process load + select (no warm cache)")
    if "fastapi-docs" in corpora:
        x = corpora["fastapi-docs"]["bytes"] / 1e6
        _target(ax, x, 250, COLORS["cold"], "targets")
        _target(ax, x, 500, COLORS["init"])
        _reference(ax, x, 390, "reference CLI 390 ms")
    interp = (results.get("build") or {}).get("interpreter_start")
    if interp:
        ax.axhline(interp["wall_s"]["median"] * 1000, color="#bbbbbb", linestyle=":",
                   label="`python -c pass`")
    _size_axes(ax, "milliseconds (error bars: min-max of runs)", "cold paths")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out / "resolve_latency.png", dpi=DPI)
    plt.close(fig)
    return "resolve_latency.png"


def memory_figure(results: dict[str, Any], out: Path) -> str | None:
    build = (results.get("build") or {}).get("corpora")
    res = (results.get("resolve") or {}).get("corpora")
    if not build and not res:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    if build:
        for kind in ("full", "nochange", "onechange"):
            _series(ax, build, lambda c, k=kind: c[k]["peak_rss_mb"], 1.0, "minmax",
                    COLORS[kind], f"build peak RSS: {KIND_LABEL[kind]}")
        _series(ax, build, lambda c: c["full"]["tree_rss_mb"], 1.0, "minmax", COLORS["tree"],
                "full build: sum over process + workers (sampled)")
    if res:
        _series(ax, res, lambda c: c["mcp"]["rss_warm_mb"], 1.0, "minmax", COLORS["first"],
                "doc-index serve RSS, cache warm")
    ax.axhline(100, color="#d62728", linestyle="--", linewidth=1,
               label="target: build peak <= 100 MB (30 MB corpus)")
    _size_axes(ax, "MiB", "memory", (10, 20, 30, 50, 70, 100, 150, 200, 300, 500, 1000))
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=DPI)
    plt.close(fig)
    return "memory.png"


QUALITY_GROUPS = ("all", "easy", "hard", "fastapi-docs", "fastapi-docs/easy",
                  "fastapi-docs/hard", "flask-docs", "flask-docs/easy", "flask-docs/hard")


def quality_figure(results: dict[str, Any], out: Path) -> str | None:
    q = results.get("quality")
    if not q:
        return None
    plt = _plt()
    metrics = q["metrics"]
    groups = [g for g in QUALITY_GROUPS if g in metrics]
    systems = ("doc-index", "bm25s", "v0")
    fig, axes = plt.subplots(3, 1, figsize=(11.0, 8.5), sharex=True)
    width = 0.27
    for ax, (field, title) in zip(axes, (("mrr10", "MRR@10"), ("hit5", "hit@5"),
                                         ("budget_hit", "budget-hit@2000 tokens"))):
        for i, system in enumerate(systems):
            xs = [j + (i - 1) * width for j in range(len(groups))]
            ax.bar(xs, [metrics[g][system][field] for g in groups], width,
                   color=COLORS[system], label=system)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(title)
        ax.grid(True, axis="y", alpha=0.25)
    axes[0].legend(fontsize=8, ncol=3, loc="upper right")
    axes[0].set_title("retrieval quality on the dev questions (n per group in the report)",
                      fontsize=10)
    axes[-1].set_xticks(range(len(groups)),
                        [f"{g}\n(n={metrics[g]['n']})" for g in groups], fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "quality.png", dpi=DPI)
    plt.close(fig)
    return "quality.png"


def tokens_figure(results: dict[str, Any], out: Path) -> str | None:
    tok = results.get("tokens")
    if not tok or "ratios" not in tok:
        return None
    plt = _plt()
    ratios = tok["ratios"]
    tokenizers = list(next(iter(ratios.values())))
    fig, axes = plt.subplots(1, len(tokenizers), figsize=FIGSIZE, sharey=True)
    for ax, name in zip(axes, tokenizers):
        data, labels = [], []
        for corpus, per_tok in ratios.items():
            for method, label in (("estimate", "estimate"), ("baseline", "bytes/4")):
                data.append(per_tok[name][method])
                labels.append(f"{corpus}\n{label}")
        ax.boxplot(data, whis=(0, 100))
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
        ax.set_yscale("log")
        _plain_log_axis(ax.yaxis, (0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6))
        ax.axhline(1.0, color="#2ca02c", linewidth=1)
        ax.axhline(0.75, color="#d62728", linestyle="--", linewidth=1,
                   label="-25% (most under-count allowed)")
        ax.set_title(f"estimate / real {name} tokens per section (whiskers: min-max)",
                     fontsize=9)
        ax.grid(True, axis="y", alpha=0.25)
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out / "tokens.png", dpi=DPI)
    plt.close(fig)
    return "tokens.png"


def draw_all(results: dict[str, Any], out: Path) -> dict[str, str]:
    """Draw every figure the results allow; ``{section: file name}``."""
    drawn: dict[str, str] = {}
    for key, draw in (("build", build_figure), ("resolve", latency_figure),
                      ("memory", memory_figure), ("quality", quality_figure),
                      ("tokens", tokens_figure)):
        name = draw(results, out)
        if name:
            drawn[key] = name
    return drawn
