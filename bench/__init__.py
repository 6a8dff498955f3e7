"""doc-index benchmarks: ``python -m bench.run`` writes ``bench/results/report.md``.

Pieces: :mod:`bench.build_speed` (whole ``doc-index build`` processes),
:mod:`bench.resolve_speed` (cold CLI, in-process and warm MCP resolve),
:mod:`bench.memory` (wall time + peak RSS of a process tree), :mod:`bench.quality`
(retrieval quality against baselines), :mod:`bench.token_accuracy` (token estimate against
real BPE), :mod:`bench.git_pull` (incremental reindex after ``git pull``),
:mod:`bench.plots` and :mod:`bench.report`.
"""
