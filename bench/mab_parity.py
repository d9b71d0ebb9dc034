"""MemoryAgentBench's metrics, lens against the official evaluation code, on real predictions.

    python -m bench.mab_parity PREDICTIONS [--official CODE_DIR] [--lme ORACLE] [--out FILE]

``PREDICTIONS`` is a folder of JSON-lines files of real MemoryAgentBench predictions, one line a
question with ``source`` (the sub-dataset), ``prompt`` (the question as released), ``answer``
(the model's output) and ``golds`` (its accepted answers): ``tfatykhov/nous-memoryAgentBench``'s
``reports/`` (default ``../thirdparty/mab-predictions``). ``CODE_DIR`` is a copy of the official
repository (``HUST-AI-HYZ/MemoryAgentBench``, default ``../thirdparty/memoryagentbench-code``):
the scoring functions of its ``utils/eval_other_utils.py``, ``get_anscheck_prompt`` of
``llm_based_eval/longmem_qa_evaluate.py`` and ``parse_json`` of
``llm_based_eval/summarization_evaluate.py`` are run as they are, read from the copy (nothing of
them is kept here). The lens side imports every prediction's question with lens's importer and
scores the answer under the ``memoryagentbench`` protocol.

Compared per prediction: exact match, substring exact match, token F1 and EventQA's recall (the
official ``post_process``); for an in-context-learning answer, lens's score against the official
score of the answer without the "label:" lens's prompt asks for (the official prompt ends in it);
for ``longmemeval_*`` questions, the judge prompt lens builds with the official prompt file
against the official prompt (question types and ids from LongMemEval's oracle file ``ORACLE``,
matched by question text). Prints the counts; ``--out`` writes the disagreements.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import beside
from lens.data.dataset import Question
from lens.data.dataset_load import load_dataset
from lens.data.importers.memoryagentbench import write_memoryagentbench
from lens.scoring.protocols import get_protocol

OFFICIAL = beside("thirdparty", "memoryagentbench-code")
PREDICTIONS = beside("thirdparty", "mab-predictions")
LME_ORACLE = beside("thirdparty", "longmemeval", "longmemeval_oracle.json")
METRICS = {"mab_exact_match": "exact_match", "mab_substring_exact_match": "substring_exact_match",
           "mab_f1": "f1", "mab_eventqa_recall": "eventqa_recall"}
_PRIMER = re.compile(r"^\s*label\s*:\s*", re.IGNORECASE)
# What a real prediction's question is asked after ("Now Answer the Question: ...").
_LME_QUESTION = re.compile(r"Now Answer the Question:\s*(.*)\Z", re.S)


class _NoRouge:
    """Stands in for the official module's ROUGE scorer: the ROUGE figures are not among
    MemoryAgentBench's reported metrics, and rouge_score is not a lens dependency."""

    rouge_types: tuple[str, ...] = ()

    def score(self, target: str, prediction: str) -> dict[str, Any]:
        return {}


def _functions(path: Path, names: set[str], ns: dict[str, Any]) -> dict[str, Any]:
    """The named top-level functions of ``path``, executed from its source into ``ns`` (the
    module's own imports, which pull in nltk, tiktoken, openai, datasets, are not run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    missing = names - {n.name for n in found}
    if missing:
        raise FileNotFoundError(f"{path}: no function {', '.join(sorted(missing))}")
    exec(compile(ast.Module(found, []), str(path), "exec"), ns)
    return ns


class Official:
    """The official MemoryAgentBench evaluation functions, loaded from a copy of the repository."""

    def __init__(self, code: Path) -> None:
        import os
        import string
        from collections import Counter as _Counter

        self.code = code
        other = code / "utils" / "eval_other_utils.py"
        self.longmem = code / "llm_based_eval" / "longmem_qa_evaluate.py"
        summary = code / "llm_based_eval" / "summarization_evaluate.py"
        missing = [str(p) for p in (other, self.longmem, summary) if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"the official MemoryAgentBench code is not at {code} "
                                    f"(missing {', '.join(missing)})")
        ns: dict[str, Any] = {"re": re, "json": json, "os": os, "string": string,
                              "Counter": _Counter, "rouge_scorer_instance": _NoRouge()}
        _functions(other, {"normalize_answer", "f1_score", "drqa_exact_match_score",
                           "substring_exact_match_score", "drqa_metric_max_over_ground_truths",
                           "parse_output", "calculate_metrics", "post_process",
                           "_process_icl_dataset", "_process_eventqa_dataset",
                           "_process_infbench_longmemeval_dataset", "_process_choice_eng_dataset",
                           "_process_ruler_memory_merging_dataset", "default_post_process"}, ns)
        _functions(self.longmem, {"get_anscheck_prompt"}, ns)
        _functions(summary, {"parse_json"}, ns)
        self.ns = ns

    def metrics(self, source: str, answer: str, golds: list[str]) -> dict[str, float]:
        got, _ = self.ns["post_process"]({"output": answer}, golds, {"sub_dataset": source})
        return {k: float(v) for k, v in got.items()}

    def judge_prompt(self, qtype: str, question: str, golds: list[str], answer: str,
                     question_id: str) -> str:
        return str(self.ns["get_anscheck_prompt"](qtype, question, golds, answer,
                                                  abstention="_abs" in question_id))

    def parse_json(self, text: str) -> Any:
        return self.ns["parse_json"](text)


def load_predictions(folder: Path) -> list[dict[str, Any]]:
    """Every distinct (sub-dataset, question, answer) of the folder's JSON-lines files, in file
    order (the same prediction appears in several of the reports)."""
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for path in sorted(folder.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            if not isinstance(rec.get("answer"), str) or not rec.get("golds"):
                continue
            key = (str(rec["source"]), str(rec["prompt"]), rec["answer"],
                   json.dumps(rec["golds"]))
            if key not in seen:
                seen.add(key)
                out.append(rec)
    return out


def _rows(preds: list[dict[str, Any]], lme: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """One MemoryAgentBench row per prediction, as the release lays a row out."""
    for i, rec in enumerate(preds):
        meta: dict[str, Any] = {"source": rec["source"], "qa_pair_ids": [f"p{i}"]}
        item = lme.get(lme_key(rec["prompt"]))
        if item is not None:
            meta.update(question_ids=[item["question_id"]],
                        question_types=[item["question_type"]])
        yield {"context": "A placeholder context.", "questions": [rec["prompt"]],
               "answers": [[str(g) for g in rec["golds"]]], "metadata": meta}


def lme_key(prompt: str) -> str:
    m = _LME_QUESTION.search(prompt)
    return " ".join((m.group(1) if m else prompt).split())


def lme_items(oracle: Path) -> dict[str, dict[str, Any]]:
    items = json.loads(oracle.read_text(encoding="utf-8")) if oracle.is_file() else []
    return {" ".join(str(it["question"]).split()): it for it in items}


def questions(preds: list[dict[str, Any]], lme: dict[str, dict[str, Any]], tmp: Path
              ) -> list[Question]:
    """The predictions' questions through lens's importer, in prediction order."""
    src = tmp / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _rows(preds, lme)), encoding="utf-8")
    out = tmp / "mab.json"
    write_memoryagentbench(src, out, chunk_tokens=64)
    return list(load_dataset(out).questions)


def compare(preds: list[dict[str, Any]], official: Official, lme: dict[str, dict[str, Any]]
            ) -> dict[str, Any]:
    protocol = get_protocol("memoryagentbench")
    prompted = protocol.with_prompt_file(official.longmem)
    counts: Counter[str] = Counter()
    differ: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        qs = questions(preds, lme, Path(tmp))
    for rec, q in zip(preds, qs, strict=True):
        source, answer, golds = str(rec["source"]), rec["answer"], [str(g) for g in rec["golds"]]
        fam = str(q.meta["family"])
        if fam == "recsys":
            continue
        # lens scores the answer as stored (stripped); ICL answers after the primer its own
        # prompt asks for, which the official prompt writes itself.
        mine = protocol.mechanical(q, answer.strip())
        theirs_of = _PRIMER.sub("", answer, count=1) if fam == "icl" else answer
        theirs = official.metrics(source, theirs_of, golds)
        counts["predictions"] += 1
        counts[f"family:{fam}"] += 1
        if fam == "icl" and theirs_of != answer:
            counts["icl_with_primer"] += 1
        bad = {m: (mine[m], theirs[o]) for m, o in METRICS.items()
               if o in theirs and mine.get(m) is not None and abs(mine[m] - theirs[o]) > 1e-12}
        if bad:
            differ.append({"source": source, "answer": answer, "golds": golds, "differ": bad})
        else:
            counts["metrics_equal"] += 1
        if fam == "infbench_sum":
            # The script judges the stripped output against the first accepted answer.
            tasks = protocol.tasks(q, answer)
            if all(answer.strip() in t.prompt for t in tasks.values()) and \
                    golds[0] in tasks["precision"].prompt:
                counts["summary_inputs_equal"] += 1
            else:
                differ.append({"source": source, "answer": answer, "summary_inputs": True})
        if fam == "longmemeval":
            counts["longmemeval"] += 1
            item = lme.get(lme_key(str(rec["prompt"])))
            if item is None:
                counts["longmemeval_unmatched"] += 1
                continue
            (task,) = prompted.tasks(q, answer.strip()).values()
            want = official.judge_prompt(item["question_type"], str(rec["prompt"]), golds,
                                         answer.strip(), str(item["question_id"]))
            if task.prompt == want:
                counts["judge_prompt_equal"] += 1
            else:
                differ.append({"source": source, "answer": answer, "judge_prompt": task.prompt,
                               "official": want})
    return {"counts": dict(counts), "differ": differ}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predictions", type=Path, nargs="?", default=PREDICTIONS)
    parser.add_argument("--official", type=Path, default=OFFICIAL)
    parser.add_argument("--lme", type=Path, default=LME_ORACLE)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    res = compare(load_predictions(args.predictions), Official(args.official), lme_items(args.lme))
    print(json.dumps(res["counts"], indent=1))
    print(f"{len(res['differ'])} disagreement(s)")
    if args.out:
        args.out.write_text(json.dumps(res, indent=1), encoding="utf-8")
    return 0 if not res["differ"] else 1


if __name__ == "__main__":
    sys.exit(main())
