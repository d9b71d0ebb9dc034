"""How far lens's wording of LongMemEval's judge prompts agrees with the official prompts, on real
answers, with one judge model asked under both.

    python -m bench.judge_prompt_agreement ANSWERS ITEMS OFFICIAL [--judge MODEL] [--limit N]

``ANSWERS`` is a JSON-lines file of real answers to LongMemEval questions (``qa_pair_id``: the
question id, ``answer``: the model's answer, optionally ``judge_correct``: another judge's
verdict), e.g. ``tfatykhov/nous-memoryAgentBench``'s
``reports/judge_regrade/judge4o_results_longmemeval_s__replay_full.jsonl`` (60 answers of a
memory agent, judged by gpt-4o). ``ITEMS`` is a folder of LongMemEval items (one JSON file each,
for the question, its type and its gold answer). ``OFFICIAL`` is the official
``src/evaluation/evaluate_qa.py``, read by ``scoring.judge_prompt_file``'s reader. The judge
(default ``llama_cpp/default``, the local model, through lens's model stack and cache) is asked
each answer under lens's prompt and under the official one; printed: the verdicts of each, their
agreement (share of answers with the same verdict, and Cohen's kappa), and each one's agreement
with the answers' own verdicts where the file has them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import anyio

from lens.data.config import CacheConfig, ModelConfig
from lens.data.dataset import GroundTruth, Question, QuestionType
from lens.data.importers.common import answer_text
from lens.data.importers.longmemeval import QUESTION_TYPES
from lens.models.factory import create_client
from lens.scoring.protocols.base import Protocol
from lens.scoring.protocols.longmemeval import LongMemEvalProtocol


def question(item: dict[str, Any]) -> Question:
    qid = str(item["question_id"])
    qtype = (QuestionType.EVIDENCE_SUFFICIENCY if "_abs" in qid
             else QUESTION_TYPES[item["question_type"]])
    return Question(question_id=qid, scope_id="s", checkpoint_after=1, question_type=qtype,
                    prompt=item["question"],
                    ground_truth=GroundTruth(canonical_answer=answer_text(item["answer"])),
                    meta={"question_type": item["question_type"]})


def items_by_id(folder: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for f in sorted(folder.glob("*.json")):
        item = json.loads(f.read_text(encoding="utf-8"))
        out[str(item["question_id"])] = item
    return out


async def verdicts(protocols: dict[str, Protocol], rows: list[tuple[Question, str]],
                   judge: str) -> dict[str, list[float | None]]:
    client = create_client(ModelConfig(model=judge), cache=CacheConfig(enabled=True))
    out: dict[str, list[float | None]] = {name: [] for name in protocols}
    try:
        for q, answer in rows:
            for name, protocol in protocols.items():
                (task,) = protocol.tasks(q, answer).values()
                key = task.key(judge)
                reply = await client.complete(task.request(key))
                out[name].append(protocol.parse(task.prompt_id, reply.text or ""))
    finally:
        await client.aclose()
    return out


def kappa(a: list[float | None], b: list[float | None]) -> float | None:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(x == y for x, y in pairs) / n
    pa, pb = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return (observed - chance) / (1 - chance) if chance < 1 else None


def agreement(a: list[float | None], b: list[float | None]) -> tuple[int, int]:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    return sum(x == y for x, y in pairs), len(pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("answers", type=Path)
    parser.add_argument("items", type=Path)
    parser.add_argument("official", type=Path)
    parser.add_argument("--judge", default="llama_cpp/default")
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    items = items_by_id(args.items)
    answers = [json.loads(line) for line in args.answers.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    rows, theirs, missing = [], [], []
    for a in answers[:args.limit]:
        item = items.get(str(a["qa_pair_id"]))
        if item is None:
            missing.append(str(a["qa_pair_id"]))
            continue
        rows.append((question(item), str(a["answer"]).strip()))
        verdict = a.get("judge_correct")
        theirs.append(None if verdict is None else float(bool(verdict)))
    lens_wording = LongMemEvalProtocol()
    protocols: dict[str, Protocol] = {"lens": lens_wording,
                                      "official": lens_wording.with_prompt_file(args.official)}
    got = anyio.run(verdicts, protocols, rows, args.judge)
    same, n = agreement(got["lens"], got["official"])
    print(f"{len(rows)} real answers judged by {args.judge} under both prompts "
          f"({len(missing)} answers without their item left out)")
    for name, values in got.items():
        yes = sum(1 for v in values if v == 1.0)
        print(f"  {name:8s} correct {yes} of {len(values)}")
    k = kappa(got["lens"], got["official"])
    print(f"  lens vs official: same verdict on {same} of {n}"
          + (f", Cohen's kappa {k:.2f}" if k is not None else ""))
    if any(t is not None for t in theirs):
        for name, values in got.items():
            s, m = agreement(values, theirs)
            print(f"  {name} vs the file's own verdicts: same on {s} of {m}")
    if args.out:
        args.out.write_text(json.dumps({"judge": args.judge, "questions": [q.question_id
                                        for q, _ in rows], "verdicts": got, "theirs": theirs},
                                       indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
