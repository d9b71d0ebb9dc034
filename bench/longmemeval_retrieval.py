"""LongMemEval's retrieval table, reproduced: lens's ``longmemeval_bm25`` memory against the
official flat-BM25 run on the same items, per question and as the published averages.

    python -m bench.longmemeval_retrieval ITEMS [--official CODE_DIR] [--out FILE]

``ITEMS`` is a LongMemEval file (a JSON list of items) or a folder of one-item JSON files (the
layout of ``hussainzs/Memoria``'s ``evaluations/data/lme_jsons/``). ``CODE_DIR`` is a copy of
the official repository (``xiaowu0162/LongMemEval``, default
``../thirdparty/longmemeval-code``): its ``process_item_flat_index``, the flat-BM25 branch of
``run_flat_retrieval`` and ``src/retrieval/eval_utils.py`` are run as they are, read from the
copy (nothing of them is kept here). The lens side imports each item with lens's importer,
ingests its episodes in lens's order into the adapter, asks one search with the question and
scores the ranking with :mod:`lens.scoring.measures.retrieval`'s LongMemEval metrics.

Prints the per-question agreement and the table (abstention questions skipped, as
``print_retrieval_metrics.py`` skips them); ``--out`` writes both as JSON.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from lens.adapters.longmemeval_bm25 import LongMemEvalBm25Adapter, session_turns
from lens.data.dataset import Dataset, Episode
from lens.data.importers.longmemeval import import_longmemeval
from lens.scoring.measures.retrieval import LME_KS, lme_metrics, lme_session_from_turns

ROOT = Path(__file__).resolve().parent.parent
# Beside the checkout, or beside the main checkout when this one is a git worktree.
OFFICIAL = next((p for p in (ROOT.parent / "thirdparty" / "longmemeval-code",
                              ROOT.parent.parent / "thirdparty" / "longmemeval-code")
                 if p.is_dir()), ROOT.parent / "thirdparty" / "longmemeval-code")
# The columns print_retrieval_metrics.py prints.
TABLE = {"session": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"),
         "turn": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10",
                  "recall_all@50", "ndcg_any@50")}
BATCH = 25


class Official:
    """The official retrieval code, loaded from a copy of the repository."""

    def __init__(self, code: Path) -> None:
        run = code / "src" / "retrieval" / "run_retrieval.py"
        utils = code / "src" / "retrieval" / "eval_utils.py"
        missing = [str(p) for p in (run, utils) if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"the official LongMemEval code is not at {code} "
                                    f"(missing {', '.join(missing)})")
        from rank_bm25 import BM25Okapi

        ns: dict[str, Any] = {"BM25Okapi": BM25Okapi}
        exec(compile(utils.read_text(), str(utils), "exec"), ns)
        # Its functions read ``np`` from these globals when called: after its own import.
        ns["np"] = _numpy_with_asfarray()
        # run_retrieval.py imports torch and the dense retrievers at its top: only the two
        # functions the flat-BM25 path runs are taken from it, unchanged.
        tree = ast.parse(run.read_text())
        wanted = {"process_item_flat_index", "DenseRetrievalMaster"}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in wanted:
                exec(compile(ast.Module([node], []), str(run), "exec"), ns)
        self.ns = ns
        self.master = object.__new__(ns["DenseRetrievalMaster"])

    def run(self, item: dict[str, Any], granularity: str) -> dict[str, Any]:
        """What ``batch_get_retrieved_context_and_eval`` records for one item: the corpus ids
        in rank order and the metrics of each level."""
        corpus: list[str] = []
        ids: list[str] = []
        for sid, session, date in zip(item["haystack_session_ids"], item["haystack_sessions"],
                                      item["haystack_dates"], strict=True):
            docs, doc_ids, _ = self.ns["process_item_flat_index"](session, granularity, sid, date)
            corpus += docs
            ids += doc_ids
        correct = list({d for d in ids if "answer" in d})
        rankings = self.master.run_flat_retrieval(item["question"], "flat-bm25", corpus)
        metrics: dict[str, dict[str, float]] = {"session": {}, "turn": {}}
        for k in LME_KS:
            r_any, r_all, ndcg = self.ns["evaluate_retrieval"](rankings, correct, ids, k=k)
            metrics[granularity].update({f"recall_any@{k}": float(r_any),
                                         f"recall_all@{k}": float(r_all),
                                         f"ndcg_any@{k}": float(ndcg)})
            if granularity == "turn":
                r_any, r_all, ndcg = self.ns["evaluate_retrieval_turn2session"](
                    rankings, correct, ids, k=k)
                metrics["session"].update({f"recall_any@{k}": float(r_any),
                                           f"recall_all@{k}": float(r_all),
                                           f"ndcg_any@{k}": float(ndcg)})
        return {"ranked": [ids[i] for i in rankings], "metrics": metrics}


def _numpy_with_asfarray() -> Any:
    """numpy as eval_utils.py uses it: ``np.asfarray`` left NumPy in 2.0, and the official
    code calls it; the stand-in converts to float64 as it did."""
    import types

    shim = types.ModuleType("numpy_with_asfarray")
    shim.__dict__.update(np.__dict__)
    shim.asfarray = lambda a: np.asarray(a, dtype=np.float64)  # type: ignore[attr-defined]
    return shim


def lens_run(dataset: Dataset, granularity: str) -> dict[str, dict[str, Any]]:
    """Per question: the ranked refs of one search with the question through lens's memory,
    and lens's LongMemEval metrics of that ranking."""
    out: dict[str, dict[str, Any]] = {}
    episodes = {s.scope_id: s for s in dataset.scopes}
    for q in dataset.questions:
        scope = episodes[q.scope_id]
        adapter = LongMemEvalBm25Adapter(granularity=granularity, max_results=100_000)
        adapter.reset(scope.scope_id)
        for e in scope.ordered_episodes():
            adapter.ingest(e.for_adapter())
        refs = [r.ref_id for r in adapter.search(q.prompt, None, 100_000)]
        out[q.question_id] = {"ranked": refs,
                              "metrics": lens_metrics(refs, scope.episodes, granularity)}
    return out


def evidence_units(episodes: list[Episode]) -> tuple[set[str], set[str]]:
    """The relevant sessions and user turns, as LongMemEval labels them: a user turn marked
    ``has_answer`` (kept by the importer in the episode's ``answer_turns``), and the session
    holding one."""
    sessions: set[str] = set()
    turns: set[str] = set()
    for e in episodes:
        parsed = session_turns(e.text)
        for t in e.meta.get("answer_turns") or ():
            if t < len(parsed) and parsed[t].role == "user":
                turns.add(f"{e.episode_id}#t{t + 1}")
                sessions.add(e.episode_id)
    return sessions, turns


def lens_metrics(refs: list[str], episodes: list[Episode], granularity: str
                 ) -> dict[str, dict[str, float]]:
    sessions, turns = evidence_units(episodes)
    metrics: dict[str, dict[str, float]] = {"session": {}, "turn": {}}
    for k in LME_KS:
        if granularity == "session":
            metrics["session"].update(lme_metrics(refs, sessions, k))
        else:
            metrics["turn"].update(lme_metrics(refs, turns, k))
            # A session's evidence turns and its other turns are two sessions to the official
            # evaluation (its ids rewrite "answer" to "noans" on the turns without the answer).
            as_sessions = [r.split("#")[0] if r in turns else r.split("#")[0] + "#other"
                           for r in refs]
            metrics["session"].update(lme_session_from_turns(as_sessions, sessions, k))
    return metrics


def load_items(path: Path) -> Iterator[dict[str, Any]]:
    if path.is_dir():
        for f in sorted(path.glob("*.json")):
            yield json.loads(f.read_text(encoding="utf-8"))
    else:
        yield from json.loads(path.read_text(encoding="utf-8"))


def compare(items: list[dict[str, Any]], official: Official, granularity: str,
            prefix: str = "lme") -> dict[str, Any]:
    """Both sides on the same items: per-question agreement of every metric, and both tables."""
    with tempfile.TemporaryDirectory() as tmp:
        listed = Path(tmp) / "items.json"
        listed.write_text(json.dumps(items), encoding="utf-8")
        dataset = Dataset.model_validate(import_longmemeval(listed, prefix))
    lens = lens_run(dataset, granularity)
    ids = {str(i["question_id"]): q.question_id for i, q in zip(items, dataset.questions,
                                                                 strict=True)}
    rows = []
    for item in items:
        theirs = official.run(item, granularity)
        ours = lens[ids[str(item["question_id"])]]
        rows.append({"question_id": str(item["question_id"]), "official": theirs["metrics"],
                     "lens": ours["metrics"]})
    return {"granularity": granularity, "rows": rows, **summary(rows, granularity)}


def summary(rows: list[dict[str, Any]], granularity: str) -> dict[str, Any]:
    kept = [r for r in rows if "_abs" not in r["question_id"]]
    levels = ["session"] if granularity == "session" else ["session", "turn"]
    agree: dict[str, int] = {}
    table: dict[str, dict[str, dict[str, float]]] = {}
    for level in levels:
        names = sorted(kept[0]["official"][level]) if kept else []
        for name in names:
            agree[f"{level}/{name}"] = sum(
                abs(r["official"][level][name] - r["lens"][level][name]) < 1e-12 for r in rows)
        table[level] = {side: {name: round(float(np.mean([r[side][level][name] for r in kept])), 4)
                               for name in TABLE[level]}
                        for side in ("official", "lens")}
    return {"questions": len(rows), "scored": len(kept), "agree": agree, "table": table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("items", type=Path)
    parser.add_argument("--official", type=Path, default=OFFICIAL)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    official = Official(args.official)
    results = []
    for g in ("session", "turn"):
        rows: list[dict[str, Any]] = []
        batch: list[dict[str, Any]] = []
        # A few items at a time: an _s item is half a megabyte of chat.
        for item in load_items(args.items):
            batch.append(item)
            if len(batch) == BATCH:
                rows += compare(batch, official, g)["rows"]
                batch = []
        if batch:
            rows += compare(batch, official, g)["rows"]
        results.append({"granularity": g, "rows": rows, **summary(rows, g)})
    for res in results:
        worst = min(res["agree"].values()) if res["agree"] else 0
        print(f"{res['granularity']} retrieval: {res['scored']} of {res['questions']} questions "
              f"in the table (abstention skipped); every metric equal on at least {worst} of "
              f"{res['questions']}")
        for level, sides in res["table"].items():
            for side, values in sides.items():
                cells = ", ".join(f"{k} = {v}" for k, v in values.items())
                print(f"  {level}-level {side:8s} {cells}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
