"""Built-in readers for the per-question results files public repositories hold today. Each is a
declared mapping (``lens.claims.mapping``) and, where a publisher split one result over files,
the join of its companions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from lens.claims.items import ClaimItem, ClaimSet, hash_file
from lens.claims.mapping import Fields, Mapping, read_mapped, text
from lens.core.errors import Problem, UserError
from lens.core.jsonguard import JsonRefused, loads_guarded

# getzep/zep-papers kg_architecture_agent_memory/locomo_eval/data/zep_locomo_grades.json: one
# list per LoCoMo conversation ("locomo_experiment_user_N"), one gpt-4o-mini verdict per answer.
ZEP = Mapping(items="*", fields=Fields(question="question", gold="golden_answer",
                                       answer="answer", category="category",
                                       verdicts=["grade"]))
# The mem0 evaluation's output (evals.py) as memodb-io/memobase published it: one list per
# conversation, llm_score the judge's 0/1, bleu_score and f1_score mem0's own metrics.
MEM0 = Mapping(items="*", fields=Fields(question="question", gold="answer", answer="response",
                                        category="category", verdicts=["llm_score"],
                                        scores=["f1_score", "bleu_score"]),
               categories={"1": "single_hop", "2": "temporal", "3": "multi_hop",
                           "4": "open_domain"})
# LongMemEval's evaluate_qa.py log: one JSON line per question with the hypothesis and the
# judge's autoeval_label; question, gold and type come from the dataset file beside it.
LONGMEMEVAL = Mapping(format="jsonl", fields=Fields(
    id="question_id", question="question_id", gold="question_id", answer="hypothesis",
    verdicts=["autoeval_label.label"]), benchmark="longmemeval")
# MemoryAgentBench predictions as tfatykhov/nous-memoryAgentBench publishes them (reports/): one
# JSON line per question; "correct" is the benchmark's own metric as the publisher scored it,
# "judge_correct" a judge's regrade kept beside it.
MAB = Mapping(format="jsonl", fields=Fields(
    id="qa_pair_id", question="prompt", gold="golds", answer="answer", category="source",
    verdicts=["correct"], scores=["judge_correct", "score"]), benchmark="memoryagentbench")


def read_zep(files: Sequence[Path]) -> ClaimSet:
    """The grades file, and the responses file when given: its answers must be the graded ones,
    in the same order (the eval script grades the responses in order, skipping none)."""
    grades = read_mapped(files[0], ZEP, reader="zep", source="the zep reader")
    if len(files) < 2:
        return replace(grades, notes=("the responses file was not given: the answers are the "
                                      "ones the grades file repeats",))
    responses = read_mapped(files[1], Mapping(items="*", fields=Fields(
        question="question", gold="golden_answer", answer="answer", scores=["duration_ms"])),
        reader="zep", source="the zep reader (responses)")
    by_id = {i.id: i for i in responses.items}
    problems = [Problem(str(files[1]), f"item {g.id}", "its question or answer differs from the "
                        "graded one; give the responses file of the same run")
                for g in grades.items
                if (r := by_id.get(g.id)) is None or (r.question, r.answer) != (g.question,
                                                                               g.answer)]
    if problems:
        raise UserError(f"{files[1]}: {len(problems)} answer(s) do not match {files[0]}",
                        problems)
    items = tuple(replace(g, scores={**g.scores, **by_id[g.id].scores}) for g in grades.items)
    return replace(grades, items=items, inputs=grades.inputs + responses.inputs,
                   notes=(f"{len(items)} graded answers match the responses file",))


def read_mem0(files: Sequence[Path]) -> ClaimSet:
    return read_mapped(files[0], MEM0, reader="memobase", source="the memobase reader")


def read_mab(files: Sequence[Path]) -> ClaimSet:
    return read_mapped(files[0], MAB, reader="mab", source="the mab reader")


def read_longmemeval(files: Sequence[Path]) -> ClaimSet:
    """The evaluation log, joined with the dataset file (longmemeval_s/m/oracle.json) by
    question_id for the question, the gold answer and the question type."""
    if len(files) < 2:
        raise UserError("the longmemeval reader needs two files: the evaluation log "
                        "(*.eval-results-*) and the dataset file it was run on "
                        "(longmemeval_s.json, _m or _oracle)")
    log = read_mapped(files[0], LONGMEMEVAL, reader="longmemeval",
                      source="the longmemeval reader")
    try:
        data = loads_guarded(files[1].read_bytes(), what=str(files[1]))
    except (OSError, JsonRefused) as exc:
        raise UserError(f"{files[1]}: {exc}; give LongMemEval's dataset file") from None
    if not isinstance(data, list):
        raise UserError(f"{files[1]}: LongMemEval's dataset is a list of questions")
    known = {str(q.get("question_id")): q for q in data if isinstance(q, dict)}
    missing = [i.id for i in log.items if i.id not in known]
    if missing:
        raise UserError(f"{files[0]}: {len(missing)} question id(s) not in {files[1]}, e.g. "
                        f"{missing[0]!r}; give the dataset file the log was made from")
    items = tuple(ClaimItem(
        id=i.id, question=text(known[i.id].get("question")),
        gold=text(known[i.id].get("answer")), answer=i.answer,
        category=text(known[i.id].get("question_type")), verdicts=i.verdicts)
        for i in log.items)
    return ClaimSet("longmemeval", items, (*log.inputs, hash_file(files[1])), "longmemeval")


READERS: dict[str, Callable[[Sequence[Path]], ClaimSet]] = {
    "zep": read_zep, "memobase": read_mem0, "mem0": read_mem0, "longmemeval": read_longmemeval,
    "mab": read_mab}
# How many files each reader takes (the results file first): more would go unread.
FILES = {"zep": 2, "longmemeval": 2}
