"""Adapter performance: ingest rate and search latency at 1k, 10k and 100k episodes.

    python bench/adapters.py                       # every adapter, every size that fits
    python bench/adapters.py --adapters sqlite_fts --sizes 1000 10000 100000
    python bench/adapters.py --pg-dsn postgresql://postgres@127.0.0.1:5432/postgres
    python bench/adapters.py --adapters vector_static --sizes 1000 10000 100000 --static-n 1000

Episodes are synthetic daily operations reports in the style of the LENS ops scopes (endpoint
latencies, hosts, alerts, deployments, on-call notes; about 2,000-3,000 characters each), made
from a hashlib-seeded generator so every run ingests the same text. Every adapter is driven
through the async contract exactly as the runner drives it (sync adapters in worker threads).

The embedding adapters cannot embed 10k or 100k episodes on a CPU in benchmark time (the model
does a few full-length episodes per second), so they are measured in two parts:
- ingest: ``cold`` embeds ``--embed-n`` new episodes (cache miss, the real first-ingest cost);
  ``warm`` re-ingests the same episodes into a fresh instance (every embedding a cache hit, the
  cost of a resumed run);
- search at 1k/10k/100k: the index is filled with real embeddings of ``--embed-n`` distinct
  episodes, repeated under new ids up to the size. Brute-force cosine costs the same whatever the
  vectors hold, so the latency is the real one for that many units.

``vector_static``, ``vector_chunked_static`` and ``hybrid_static`` are those adapters with
``encoder: static``, which embeds fast enough to ingest every size for real:
- cold: ``--static-n`` episodes into an empty cache file, so the token vectors the texts need are
  distilled during the ingest (the rate is given with and without that one-time cost), then the
  same episodes again into a fresh instance (every embedding a cache hit);
- full vocabulary: the one-time cost of distilling every token at once instead;
- 1k/10k/100k: real ingest of new texts into a copy of a cache file that holds the whole token
  table and no text embeddings (a machine after its first run), then the searches.
Each row records the 1-minute load average when it finished. Results are printed as JSON lines
and, with ``--json``, written as JSON.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lens.data.dataset import Episode
from lens.memory.adapter import MemoryAdapter, create_adapter

ENDPOINTS = ["/checkout", "/fraud_check", "/geo_lookup", "/auth", "/product_catalog", "/search",
             "/recommendations", "/inventory", "/payments", "/shipping_quote", "/profile"]
HOSTS = ["gateway-01", "gateway-02", "service-b-01", "service-b-02", "metrics-db-01",
         "orders-db-01", "cache-01", "queue-01", "search-01", "worker-03"]
POOLS = ["primary", "replica", "third_party_geo", "payments_vendor", "analytics"]
ALERTS = ["DISK-USAGE-WARN", "CERT-EXPIRY-30D", "LATENCY-P99-HIGH", "ERROR-RATE-SPIKE",
          "POOL-EXHAUSTION", "RETRY-STORM", "CPU-SATURATION", "QUEUE-BACKLOG", "GC-PAUSE-LONG"]
SERVICES = ["auth-service", "geo-service", "checkout-api", "search-indexer", "fraud-model",
            "recommendation-engine", "billing-worker", "cdn-config", "inventory-sync"]
PEOPLE = ["J. Martinez", "A. Chen", "R. Okafor", "S. Lindqvist", "P. Nair", "M. Rossi",
          "K. Tanaka", "L. Dubois", "D. Mensah", "E. Novak"]
EVENTS = [
    "A/B test '{x}' moved to {n}% rollout", "Rotated {h} access logs to the new bucket policy",
    "Scheduled {h} maintenance window for {d} 02:00Z", "Vendor reported elevated latency on {e}",
    "Retry budget for {s} raised from {n} to {m} per minute", "Cache hit rate dipped to {p}%",
    "Capacity review flagged {h} for a memory upgrade", "Incident review for {a} closed",
    "Customer complaints about slow {e} rose to {n} tickets", "Runbook for {a} updated by {who}",
]
QUERIES = [
    "geo lookup latency increasing p99", "connection pool exhaustion on primary",
    "retry storm service-b", "disk usage warning metrics-db", "certificate expiry gateway",
    "checkout error rate spike after deploy", "who was on call when the queue backlog grew",
    "fraud check latency degradation", "deployments of auth-service", "cache hit rate dipped",
    "vendor reported elevated latency", "memory upgrade capacity review",
    "payments vendor pool waiting connections", "GC pause long on worker-03",
    "recommendations error budget", "incident review closed", "search indexer rollout",
    "customer complaints slow checkout", "inventory sync retries", "CPU saturation gateway-02",
]


def _rng(seed: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))


def episode(i: int, scope: str = "bench") -> Episode:
    """Daily ops report number ``i``: the same text for the same ``i`` on every machine."""
    r = _rng(f"bench-episode-{i}")
    day = datetime(2024, 1, 1, 10, tzinfo=UTC) + timedelta(hours=6 * i)
    lines = [f"## {day:%Y-%m-%d %H:%M} Operations Summary #{i}", "", "### Endpoint Performance"]
    for ep in r.sample(ENDPOINTS, 7):
        p50 = r.randint(20, 120)
        lines.append(f"- {ep}: REQUESTS {r.randint(80_000, 220_000)} | p50: {p50}ms "
                     f"p95: {p50 * r.randint(2, 3)}ms p99: {p50 * r.randint(3, 6)}ms | "
                     f"err: {r.uniform(0.01, 0.9):.2f}% | success: {r.uniform(99, 99.99):.2f}%")
    lines += ["", "### Infrastructure"]
    for h in r.sample(HOSTS, 4):
        lines.append(f"- {h}: CPU {r.randint(10, 95)}% | Mem {r.randint(30, 90)}% | "
                     f"Disk {r.randint(40, 95)}% | Conns: {r.randint(100, 2500)}")
    lines += ["", "### Connection Pools"]
    for p in r.sample(POOLS, 3):
        mx = r.choice([60, 100, 200])
        act = r.randint(5, mx)
        lines.append(f"- {p}: active {act} | idle {mx - act} | waiting {r.randint(0, 30)} | "
                     f"exhaustion: {r.randint(0, 4)} | max: {mx} | avg_wait: {r.randint(1, 90)}ms")
    lines += ["", "### Alerts"]
    for a in r.sample(ALERTS, r.randint(1, 3)):
        lines.append(f"- [{r.choice(['info', 'warning', 'critical'])}] {a} on {r.choice(HOSTS)}")
    lines += ["", "### Deployments & Changes",
              f"- Deployed {r.choice(SERVICES)} v{r.randint(1, 9)}.{r.randint(0, 20)}."
              f"{r.randint(0, 9)}", "", "### Events"]
    for tpl in r.sample(EVENTS, 4):
        lines.append("- " + tpl.format(
            x=f"exp-{r.randint(1, 99)}", n=r.randint(2, 60), m=r.randint(61, 200),
            h=r.choice(HOSTS), e=r.choice(ENDPOINTS), s=r.choice(SERVICES),
            p=round(r.uniform(70, 99), 1), a=r.choice(ALERTS), who=r.choice(PEOPLE),
            d=(day + timedelta(days=1)).date()))
    who = r.choice(PEOPLE)
    lines += ["", "### On-Call",
              f"- shift handoff note: Shift: {who}. {r.randint(0, 6)} pages. "
              f"{r.randint(0, 4)} tickets. {r.choice(['Quiet shift.', 'Busy shift.', 'Escalated to platform team.', 'Watch the retry rates overnight.'])}"]  # noqa: E501
    return Episode(episode_id=f"{scope}_ep_{i:06d}", scope_id=scope, timestamp=day,
                   text="\n".join(lines))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _ingest(adapter: MemoryAdapter, episodes: list[Episode]) -> float:
    await adapter.reset("bench")
    start = time.perf_counter()
    for ep in episodes:
        await adapter.ingest(ep)
    await adapter.prepare("bench", len(episodes))
    return time.perf_counter() - start


async def _searches(adapter: MemoryAdapter, n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        await adapter.search(QUERIES[i % len(QUERIES)])
        times.append(time.perf_counter() - start)
    return times


def cycled(i: int, pool: int) -> Episode:
    """Episode ``i`` with the text of episode ``i % pool``: its embedding is a cache hit."""
    return episode(i % pool).model_copy(update={"episode_id": f"bench_ep_{i:06d}"})


async def measure(factory: Callable[[], MemoryAdapter], size: int, queries: int,
                  fill: Callable[[MemoryAdapter, int], Any] | None = None,
                  pool: int | None = None) -> dict[str, Any]:
    adapter = factory()
    try:
        if fill is None:
            eps = [episode(i) if pool is None else cycled(i, pool) for i in range(size)]
            seconds = await _ingest(adapter, eps)
            rate: float | None = size / seconds
        else:
            await adapter.reset("bench")
            await fill(adapter, size)
            rate = None
        await _searches(adapter, 5)  # warm-up: first-call costs are not search latency
        times = await _searches(adapter, queries)
    finally:
        await adapter.aclose()
    return {"size": size, "ingest_eps": rate, "p50_ms": 1000 * pct(times, 0.5),
            "p99_ms": 1000 * pct(times, 0.99)}


def _inner(adapter: MemoryAdapter) -> Any:
    return getattr(adapter, "inner", adapter)


def vector_fill(pool: int) -> Callable[[MemoryAdapter, int], Any]:
    """Fill a vector-backed adapter with ``size`` units whose vectors are real embeddings of
    ``pool`` distinct episodes, repeated under new ids (see the module docstring)."""

    async def fill(adapter: MemoryAdapter, size: int) -> None:
        from lens.adapters.chunking import episode_units

        inner = _inner(adapter)
        vec = getattr(inner, "semantic", inner)
        base = [episode(i) for i in range(pool)]
        base_units = [u for ep in base for u in episode_units(ep, vec.chunk_chars,
                                                              vec.chunk_overlap)]
        base_vecs = vec.embedder.embed([u.text for u in base_units])
        per_episode = len(base_units) / pool
        copies = max(1, int(size * per_episode / len(base_units)))
        for c in range(copies):
            units = [type(u)(f"copy{c}_{u.ref_id}", f"copy{c}_{u.episode_id}", u.timestamp,
                             u.text) for u in base_units]
            vec._matrix.add(units, base_vecs)
            for u in units:
                vec._units[u.ref_id] = u
        keyword = getattr(inner, "keyword", None)
        if keyword is not None:  # hybrid: the keyword leg gets the real episodes
            keyword.ingest_many([episode(i) for i in range(size)])

    return fill


def static_encoder_of(adapter: MemoryAdapter) -> Any:
    inner = _inner(adapter)
    return getattr(inner, "semantic", inner).embedder.encoder


async def static_cold_ingest(name: str, options: dict[str, Any], n: int) -> dict[str, Any]:
    """Ingest ``n`` episodes into an empty cache file (token table and text embeddings both
    empty), then again into a fresh instance (every embedding a cache hit)."""
    eps = [episode(i) for i in range(n)]
    cache = str(Path(tempfile.mkdtemp()) / "e.sqlite")
    out: dict[str, Any] = {"n": n}
    for label in ("cold", "warm"):
        adapter = create_adapter(name, {**options, "embedding_cache": cache})
        try:
            seconds = await _ingest(adapter, eps)
            if label == "cold":
                enc = static_encoder_of(adapter)
                out["distilled_tokens"] = enc.distilled
                out["distill_s"] = enc.distill_seconds
                out["cold_eps_excl_distill"] = n / (seconds - enc.distill_seconds)
        finally:
            await adapter.aclose()
        out[f"{label}_eps"] = n / seconds
    shutil.rmtree(Path(cache).parent, ignore_errors=True)
    return out


def vocabulary_table() -> tuple[Path, dict[str, Any]]:
    """A cache file holding the whole distilled token table and no text embeddings, and what
    distilling it cost."""
    from lens.adapters.static_embedding import StaticEncoder

    path = Path(tempfile.mkdtemp()) / "template.sqlite"
    enc = StaticEncoder(table_path=path)
    start = time.perf_counter()
    tokens = enc.distill_vocabulary()
    seconds = time.perf_counter() - start
    enc.close()
    return path, {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds}


def warm_table_copy(template: Path) -> str:
    """A fresh cache file with the template's token table: new texts, no distillation."""
    path = Path(tempfile.mkdtemp()) / "e.sqlite"
    shutil.copyfile(template, path)
    return str(path)


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def spread_of(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


async def embed_ingest(name: str, options: dict[str, Any], n: int) -> dict[str, Any]:
    """Cold (cache miss) and warm (cache hit) ingest rate of ``n`` episodes."""
    eps = [episode(i) for i in range(n)]
    out: dict[str, Any] = {"n": n}
    for label in ("cold", "warm"):  # options name a fresh cache file: the first pass misses
        adapter = create_adapter(name, options)
        try:
            seconds = await _ingest(adapter, eps)
        finally:
            await adapter.aclose()
        out[f"{label}_eps"] = n / seconds
    return out


def machine_line() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
            f"Python {platform.python_version()}, load(1m) {load1()}")


STATIC_LABELS: dict[str, tuple[str, dict[str, Any]]] = {
    "vector_static": ("vector", {"encoder": "static"}),
    "vector_chunked_static": ("vector_chunked", {"encoder": "static"}),
    "hybrid_static": ("hybrid", {"encoder": "static"}),
}


_templates: list[Path] = []


def static_rows(label: str, name: str, options: dict[str, Any],
                args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        rows.append({"adapter": label, **row, "load1": load1()})
        print(json.dumps(rows[-1]), flush=True)

    cold = [anyio.run(static_cold_ingest, name, options, args.static_n)
            for _ in range(args.repeats)]
    emit({"kind": "cold_ingest", "n": args.static_n, "repeats": len(cold),
          **{k: spread_of([r[k] for r in cold]) for k in cold[0] if k != "n"}})
    if not _templates:  # the table is the same for every static label: measured once
        vocab = []
        for _ in range(args.repeats):
            for old in _templates:
                shutil.rmtree(old.parent, ignore_errors=True)
            path, cost = vocabulary_table()
            _templates[:] = [path]
            vocab.append(cost)
        emit({"kind": "vocabulary_distillation", "repeats": len(vocab),
              **{k: spread_of([v[k] for v in vocab]) for k in vocab[0]}})
    template = _templates[0]
    for size in args.sizes:
        reps = args.repeats if size <= 10_000 else 1
        runs = []
        for _ in range(reps):
            cache = warm_table_copy(template)
            factory = functools.partial(create_adapter, name,
                                        {**options, "embedding_cache": cache})
            runs.append(anyio.run(measure, factory, size, args.queries))
            shutil.rmtree(Path(cache).parent, ignore_errors=True)
        emit({"kind": "scale", "size": size, "repeats": reps,
              **{k: spread_of([r[k] for r in runs]) for k in ("ingest_eps", "p50_ms", "p99_ms")}})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--adapters", nargs="+", default=[
        "sqlite_fts", "sqlite_fts_chunked", "full_context", "recency", "vector",
        "vector_chunked", "hybrid", "mem0", "postgres"])
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3, help="runs per size up to 10k (median)")
    ap.add_argument("--embed-n", type=int, default=200, help="episodes really embedded")
    ap.add_argument("--static-n", type=int, default=1000,
                    help="episodes of the static encoder's cold ingest")
    ap.add_argument("--pg-dsn", default=None, help="PostgreSQL for the postgres adapter")
    ap.add_argument("--mem0-max", type=int, default=1000, help="largest size for mem0")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    rows: list[dict[str, Any]] = []
    print(f"machine: {machine_line()}", flush=True)
    for label in args.adapters:
        name, options = STATIC_LABELS.get(label, (label, {}))
        options = dict(options)
        if options.get("encoder") == "static":
            rows.extend(static_rows(label, name, options, args))
            continue
        if name == "postgres":
            if not args.pg_dsn:
                print("postgres: skipped (no --pg-dsn)", flush=True)
                continue
            options = {"dsn": args.pg_dsn, "search": "keyword"}
        embeds = name in ("vector", "vector_chunked", "hybrid", "hybrid_chunked", "mem0")
        if embeds:
            options["embedding_cache"] = str(Path(tempfile.mkdtemp()) / "e.sqlite")
            r = anyio.run(embed_ingest, name, options, args.embed_n)
            rows.append({"adapter": name, "kind": "ingest", **r})
            print(json.dumps(rows[-1]), flush=True)
        for size in args.sizes:
            if name == "mem0" and size > args.mem0_max:
                continue
            fill = vector_fill(args.embed_n) if embeds and name != "mem0" else None
            # mem0 stores through its own add(): it ingests for real, texts cycling through
            # the embed-n episodes whose embeddings the cache holds (warm-cache ingest).
            pool = args.embed_n if name == "mem0" else None
            reps = args.repeats if size <= 10_000 else 1
            runs = []
            for _ in range(reps):
                factory = functools.partial(create_adapter, name, options)
                runs.append(anyio.run(measure, factory, size, args.queries, fill, pool))
            med = {k: statistics.median([r[k] for r in runs]) if runs[0][k] is not None
                   else None for k in ("ingest_eps", "p50_ms", "p99_ms")}
            rows.append({"adapter": name, "kind": "scale", "size": size, "repeats": reps, **med})
            print(json.dumps(rows[-1]), flush=True)
    for template in _templates:
        shutil.rmtree(template.parent, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_line(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
