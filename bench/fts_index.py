"""sqlite_fts's in-memory ranking: what it costs to build, to hold and to keep current.

    python bench/fts_index.py --sizes 1000 10000 100000
    python bench/fts_index.py --adapter sqlite_fts_chunked --sizes 100000

For each size, on the ops reports of ``bench/adapters.py``:
- ingest: episodes/s into a fresh store, index not built (what every store pays);
- build: the first search of common words, which builds the index (row lengths and timestamps
  read from SQLite) and loads that query's postings; then ``load``, the remaining bench queries
  run once, each loading the postings of words not seen yet;
- memory: the bytes the index's arrays hold after every bench query ran, and the process's
  resident set before and after (Linux only; the Python allocator blurs it);
- upkeep: ``--extra`` (size/10 by default) more episodes in checkpoints of 100 (ingest, prepare,
  one search), with the index built, against the same episodes into a second store whose index
  is never built; both rates count ingest and prepare only;
- search: p50/p99 of ``--queries`` searches afterwards, and how many the index ranked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.sqlite_fts import SqliteFtsAdapter, SqliteFtsChunkedAdapter
from bench.adapters import QUERIES, episode, machine_line, pct

CHECKPOINT = 100


def rss_mb() -> float | None:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def make(name: str) -> SqliteFtsAdapter:
    return SqliteFtsChunkedAdapter() if name == "sqlite_fts_chunked" else SqliteFtsAdapter()


def fill(adapter: SqliteFtsAdapter, start: int, stop: int, checkpoints: bool) -> float:
    """Seconds spent ingesting episodes [start, stop) (and preparing, per checkpoint)."""
    spent = 0.0
    step = CHECKPOINT if checkpoints else 256
    for lo in range(start, stop, step):
        batch = [episode(i) for i in range(lo, min(stop, lo + step))]
        t = time.perf_counter()
        for e in batch:
            adapter.ingest(e)
        if checkpoints:
            adapter.prepare("bench", lo)
        spent += time.perf_counter() - t
        if checkpoints:
            adapter.search(QUERIES[(lo // step) % len(QUERIES)])
    if not checkpoints:
        t = time.perf_counter()
        adapter.prepare("bench", stop)
        spent += time.perf_counter() - t
    return spent


def measure(name: str, size: int, extra: int, queries: int) -> dict[str, Any]:
    a = make(name)
    a.reset("bench")
    row: dict[str, Any] = {"adapter": name, "size": size}
    row["ingest_eps"] = size / fill(a, 0, size, checkpoints=False)
    row["rss_before_mb"] = rss_mb()
    t = time.perf_counter()
    a.search(QUERIES[0])
    row["build_s"] = time.perf_counter() - t
    t = time.perf_counter()
    for q in QUERIES[1:]:
        a.search(q)
    row["load_s"] = time.perf_counter() - t
    assert a._index is not None, "the bench queries did not build the index"
    row["index_mb"] = a._index.memory_bytes() / 2**20
    row["terms_loaded"] = a._index.terms_loaded
    row["rss_after_mb"] = rss_mb()
    row["upkeep_eps"] = extra / fill(a, size, size + extra, checkpoints=True)
    times = []
    for i in range(queries):
        t = time.perf_counter()
        a.search(QUERIES[i % len(QUERIES)])
        times.append(time.perf_counter() - t)
    row["p50_ms"], row["p99_ms"] = 1000 * pct(times, 0.5), 1000 * pct(times, 0.99)
    row["in_memory"], row["fts5"] = a.searches_in_memory, a.searches_fts5
    a.close()
    # The same extra episodes into a store of the same size that never builds the index.
    b = make(name)
    b.reset("bench")
    fill(b, 0, size, checkpoints=False)
    spent = 0.0
    for lo in range(size, size + extra, CHECKPOINT):
        batch = [episode(i) for i in range(lo, min(size + extra, lo + CHECKPOINT))]
        t = time.perf_counter()
        for e in batch:
            b.ingest(e)
        b.prepare("bench", lo)
        spent += time.perf_counter() - t
    row["no_index_eps"] = extra / spent
    b.close()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--adapter", default="sqlite_fts",
                    choices=["sqlite_fts", "sqlite_fts_chunked"])
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 10_000, 100_000])
    ap.add_argument("--extra", type=int, default=None, help="episodes added after the build")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    line = machine_line()
    load = "" if "load(1m)" in line else f", load(1m) {os.getloadavg()[0]:.2f}"
    print(f"machine: {line}{load}", flush=True)
    rows = []
    for size in args.sizes:
        extra = args.extra if args.extra is not None else max(CHECKPOINT, size // 10)
        rows.append(measure(args.adapter, size, extra, args.queries))
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                          for k, v in rows[-1].items()}), flush=True)
    print(f"load(1m) at the end {os.getloadavg()[0]:.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_line(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
