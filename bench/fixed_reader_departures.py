"""What the fixed reader's departures from LongMemEval's official generation change, on real
``_s`` items: the reader's prompt as ``lens run`` writes it (``agent.mode: fixed_reader``, the
``longmemeval_bm25`` memory at session granularity, a scripted reader model, no hosted model)
beside the prompt the official ``prepare_prompt`` (``src/generation/run_generation.py``) builds
from the same ranking with its defaults (``run_generation.sh``: top 50, ``history_format json``,
``--cot true``, the history cut at gpt-4o's 128,000 tokens less 800 for the answer and 1,000).

    python -m bench.fixed_reader_departures [--items N] [--source FILE] [--official CODE_DIR]

``--items N`` takes N items spread evenly over the file (every k-th). Three lens runs share one
import: lens's defaults with the memory's own ``max_results`` (10), the memory asked for 50
under lens's default cut (the official rule: the reader's context window less the answer's
``max_tokens`` and 1,000 tokens; the scripted reader's window is unknown to lens, which then
uses gpt-4o's 128,000 and estimates tokens at four characters each), and 50 under
``agent.budget.max_payload_bytes: 32000`` set in the config; a fourth run, 50 under
``max_payload_bytes: 10000000`` (no cut), isolates the history's format. Tokens are gpt-4o's
``o200k_base``
(the official tokenizer for gpt-4o), counted with the ``bpe-openai`` package (importable from
``--tokenizer-path``; tiktoken downloads its tables at first use). An evidence turn (a turn
marked ``has_answer``) counts as reaching the reader when its whole content is in the prompt
(JSON-escaped on the official side).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import importlib
import io
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import ijson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import beside, machine_line

SOURCE = beside("thirdparty", "longmemeval", "longmemeval_s.json")
OFFICIAL = beside("thirdparty", "longmemeval-code")
# run_generation.py: model2maxlength['gpt-4o-2024-08-06'] - gen_length (800 with --cot) - 1000.
MAX_RETRIEVAL_TOKENS = 128_000 - 800 - 1000
FILE_ITEMS = 498
# label: (the memory's max_results, the run's max_payload_bytes or None for lens's default cut)
ARMS = {"memory_default": (10, None), "top50": (50, None), "top50_bytes": (50, 32_000),
        "top50_uncut": (50, 10_000_000)}


def spread_items(source: Path, n: int) -> list[dict[str, Any]]:
    """Every k-th item of ``source`` (k = 498 // n), n of them."""
    step = max(1, FILE_ITEMS // n)
    picked: list[dict[str, Any]] = []
    with source.open("rb") as fh:
        for i, item in enumerate(ijson.items(fh, "item", use_float=True)):
            if i % step == 0:
                picked.append(item)
                if len(picked) == n:
                    break
    return picked


def official_prepare_prompt(code: Path) -> Any:
    """``prepare_prompt`` of the official generation script, run as it is from the copy (its
    module imports openai, transformers and torch at the top: only the function is taken)."""
    path = code / "src" / "generation" / "run_generation.py"
    if not path.is_file():
        raise FileNotFoundError(f"the official LongMemEval code is not at {code} "
                                f"(missing {path})")
    ns: dict[str, Any] = {"json": json}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name == "prepare_prompt":
            exec(compile(ast.Module([node], []), str(path), "exec"), ns)
    return ns["prepare_prompt"]


def lens_runs(items_file: Path, work: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    """Import the items and run each arm through ``lens run``; the dataset and each run's
    folder."""
    ds = work / "lme_s.lens.json"
    subprocess.run([sys.executable, "-m", "lens", "datasets", "import", "--format",
                    "longmemeval", str(items_file), "--out", str(ds)], check=True,
                   stdout=subprocess.DEVNULL)
    replies = work / "replies.yaml"
    replies.write_text(json.dumps({"rules": [], "default": "I do not know."}))
    runs: dict[str, Path] = {}
    for label, (max_results, payload) in ARMS.items():
        agent: dict[str, Any] = {"model": f"scripted/{replies}", "mode": "fixed_reader"}
        if payload is not None:
            agent["budget"] = {"max_payload_bytes": payload}
        cfg = work / f"{label}.yaml"
        cfg.write_text(json.dumps({
            "name": label, "dataset": {"path": str(ds)}, "out_dir": str(work / "runs"),
            "adapters": [{"name": "longmemeval_bm25", "label": label,
                          "options": {"max_results": max_results}}],
            "agent": agent, "cache": {"enabled": False}}))
        done = subprocess.run([sys.executable, "-m", "lens", "run", str(cfg), "--quiet"],
                              capture_output=True, text=True)
        if done.returncode not in (0, 1):  # 1: the checklist's sample-size rows on few scopes
            raise RuntimeError(f"lens run {label}: exit {done.returncode}\n{done.stderr}")
        runs[label] = next((work / "runs").glob(f"{label}-*"))
    data: dict[str, Any] = json.loads(ds.read_text(encoding="utf-8"))
    return data, runs


def records(run: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    # One record a line, split at "\n" alone: a turn's text may hold U+2028 and the like.
    for line in (run / "records.jsonl").read_text(encoding="utf-8").split("\n"):
        if not line:
            continue
        rec = json.loads(line)
        out[rec["question_id"]] = rec
    return out


def history_of(prompt: str) -> str:
    return prompt.split("History Chats:\n\n", 1)[1].rsplit("\n\nCurrent Date: ", 1)[0]


def evidence_turns(item: dict[str, Any]) -> list[str]:
    return [t["content"] for s in item["haystack_sessions"] for t in s if t.get("has_answer")]


def measure(items: list[dict[str, Any]], data: dict[str, Any], runs: dict[str, Path],
            prepare: Any, enc: Any) -> list[dict[str, Any]]:
    recs = {label: records(run) for label, run in runs.items()}
    session_of = {e["episode_id"]: e["meta"]["session_id"]
                  for s in data["scopes"] for e in s["episodes"]}
    rows = []
    for item in items:
        raw = str(item["question_id"])
        qid = f"lme_{raw}" if raw.isdigit() else raw  # the importer's question id
        ranked = [session_of[r] for r in recs["top50"][qid]["retrieved_refs"]]
        entry = copy.deepcopy(item)
        entry["retrieval_results"] = {"ranked_items": [{"corpus_id": sid, "text": ""}
                                                       for sid in ranked]}
        with contextlib.redirect_stdout(io.StringIO()) as said:
            official = prepare(entry, "flat-session", 50, False, "json", True, tokenizer=enc,
                               tokenizer_backend="openai",
                               max_retrieval_length=MAX_RETRIEVAL_TOKENS,
                               merge_key_expansion_into_value="none")
        evidence = evidence_turns(item)
        row: dict[str, Any] = {
            "question_id": item["question_id"], "type": item["question_type"],
            "sessions": len(item["haystack_sessions"]), "evidence_turns": len(evidence),
            "official": {
                "prompt_tokens": len(enc.encode(official, allowed_special="all")),
                "history_tokens": len(enc.encode(history_of(official), allowed_special="all")),
                "cut": "Truncating" in said.getvalue(),
                "evidence_in": sum(json.dumps(c)[1:-1] in official for c in evidence)}}
        for label in ARMS:
            rec = recs[label][qid]
            prompt = rec["transcript"][0]["content"]
            row[label] = {
                "results": len(rec["retrieved_refs"]),
                "prompt_tokens": len(enc.encode(prompt, allowed_special="all")),
                "history_tokens": len(enc.encode(history_of(prompt), allowed_special="all")),
                "cut": bool(rec["tool_calls"][0].get("truncated")),
                # lens's own count under the window's rule (estimated), else None
                "lens_history_tokens": rec["budget"]["used"].get("max_history_tokens"),
                "lens_limit": rec["budget"]["limits"].get("max_history_tokens"),
                "evidence_in": sum(c.strip() in prompt for c in evidence)}
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    with_ev = [r for r in rows if r["evidence_turns"]]
    total_ev = sum(r["evidence_turns"] for r in with_ev)
    lines = ["| prompt | results | prompt tokens, median (min-max) | history cut on | "
             "evidence turns in the prompt | items with all their evidence |",
             "|---|---|---|---|---|---|"]
    for side in ("official", *ARMS):
        toks = [r[side]["prompt_tokens"] for r in rows]
        results = ("50 (the same ranking)" if side == "official" else
                   f"{statistics.median(r[side]['results'] for r in rows):g}")
        ev = sum(r[side]["evidence_in"] for r in with_ev)
        full = sum(r[side]["evidence_in"] == r["evidence_turns"] for r in with_ev)
        lines.append(f"| {side} | {results} | {statistics.median(toks):,.0f} ({min(toks):,}-"
                     f"{max(toks):,}) | {sum(r[side]['cut'] for r in rows)} of {len(rows)} | "
                     f"{ev} of {total_ev} ({ev / total_ev:.0%}) | {full} of {len(with_ev)} |")
    return "\n".join(lines)


def estimates(rows: list[dict[str, Any]]) -> str:
    """lens's estimated history tokens under its default cut, against its limit and the
    o200k_base count of the same history; and the history's size against the official JSON's."""
    est = [int(r["top50"]["lens_history_tokens"]) for r in rows]
    real = [r["top50"]["history_tokens"] for r in rows]
    ratio = [e / t for e, t in zip(est, real, strict=True)]
    share = [r["top50_uncut"]["history_tokens"] / r["official"]["history_tokens"] for r in rows
             if not r["official"]["cut"]]
    kept = [r["top50"]["history_tokens"] / r["top50_uncut"]["history_tokens"] for r in rows
            if r["top50"]["cut"]]
    limit = int(rows[0]["top50"]["lens_limit"])
    return (f"top50: lens's history estimate {statistics.median(est):,.0f} tokens "
            f"({min(est):,}-{max(est):,}) against its limit {limit:,}; "
            f"estimate / o200k_base {min(ratio):.3f}-{max(ratio):.3f} "
            f"(median {statistics.median(ratio):.3f}); where cut, the history keeps "
            f"{min(kept, default=1):.1%}-{max(kept, default=1):.1%} of its o200k_base tokens; "
            f"uncut history / official JSON history "
            f"(o200k_base) {min(share):.1%}-{max(share):.1%} (median "
            f"{statistics.median(share):.1%}, {len(share)} items)")


def checklist_rows(runs: dict[str, Path]) -> list[str]:
    """Each run's checklist row on the fixed reader's results and cut."""
    out = []
    for label, run in runs.items():
        summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
        row = next((c for c in summary["checklist"] if c["id"] == "fixed_reader_results"), None)
        out.append(f"{label}: " + ("no row" if row is None
                                   else f"{row['status'].upper()} {row['value']}"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--official", type=Path, default=OFFICIAL)
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--tokenizer-path", default=None,
                    help="a folder holding the bpe-openai package, put on sys.path")
    ap.add_argument("--out", type=Path, default=None, help="the per-item rows as JSON")
    args = ap.parse_args()
    if args.tokenizer_path:
        sys.path.insert(0, args.tokenizer_path)
    # Not a dependency of lens: installed beside it for this measurement.
    enc = importlib.import_module("bpe_openai").get_encoding("o200k_base")
    prepare = official_prepare_prompt(args.official)
    print(machine_line(["rank_bm25", "bpe-openai"]))
    items = spread_items(args.source, args.items)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        items_file = work / "items.json"
        items_file.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
        data, runs = lens_runs(items_file, work)
        rows = measure(items, data, runs, prepare, enc)
        rows_said = checklist_rows(runs)
    types: dict[str, int] = {}
    for r in rows:
        types[r["type"]] = types.get(r["type"], 0) + 1
    print(f"{len(rows)} items of {args.source.name} (every {max(1, FILE_ITEMS // args.items)}th): "
          + ", ".join(f"{k} {v}" for k, v in sorted(types.items())))
    print(table(rows))
    print(estimates(rows))
    print("\n".join(rows_said))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
