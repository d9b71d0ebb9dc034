"""The share of answers known to be wrong, and known to be right, that each grader accepts.

Builds, from real LoCoMo and LongMemEval questions, the answers of
lens.scoring.wrong_answers (wrong: vague, specific, other_gold, hedge; right: gold, paraphrase)
and asks each grader whether the answer states the gold:

- ``matcher``: lens's fact matcher (every answer; no model);
- ``local``: the offline grader (the local model reads what the matcher leaves open);
- ``judge-local``: lens's per-fact judge prompt with the local model as the judge (read, as
  lens reads a local judge, from its probability of "yes"; verdicts kept per judge prompts
  hash, so a changed prompt is measured afresh);
- ``official``: the benchmark's own judge prompt read from its file, with the local model as the
  judge: LoCoMo's under mem0's prompt (Memobase's ``metrics/llm_judge.py``) and Zep's
  (``zep_locomo_eval.py``), LongMemEval's under ``src/evaluation/evaluate_qa.py``.

    python -m bench.wrong_answers [--graders matcher,local,judge-local,official]
        [--per-kind 10] [--judge-per-kind 4] [--work runs/wrong_answers]
        [--locomo FILE] [--longmemeval FILE] [--mem0-prompt FILE] [--zep-prompt FILE]
        [--longmemeval-prompt FILE]

The matcher reads every answer; the model graders a sample of ``--per-kind`` answers of each
kind and source, chosen by a hash of the answer's id (the same every run). Grades are kept in
``--work`` (one JSON line per answer and grader, keyed by the answer's id and a hash of its
text, so an answer the builder now words differently is graded afresh) and a re-run resumes.
Printed: per source and grader, the share of each kind accepted, the share of wrong answers
accepted (goal: at most 5%) and of right answers (goal: at least 80%).

``--long`` reads every answer as a memory agent that pastes what it retrieved writes it: the
answer, then "What the conversations say:" and turns of the question's own conversation (its
LoCoMo conversation, its LongMemEval sessions) until the answer reaches the offline grader's
``LONG_ANSWER_CHARS``. A turn that states the gold (the matcher credits it, it holds half the
gold's words and figures, or LongMemEval marks it as the answer's evidence) is never pasted, so a
wrong answer stays wrong. The turns are taken in order from a place chosen by a hash of the
answer's id. Grades go to ``WORK/<grader>-long.jsonl``.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import md_table
from bench.grader_sources import _beside
from lens.scoring.wrong_answers import (
    RIGHT_KINDS,
    WRONG_KINDS,
    BuiltAnswer,
    GoldQuestion,
    build_all,
)
from lens.stats.intervals import wilson

THIRDPARTY = _beside("thirdparty")
LOCOMO = THIRDPARTY / "zep-locomo" / "locomo.json"
LONGMEMEVAL = THIRDPARTY / "longmemeval" / "longmemeval_oracle.json"
MEM0_PROMPT = THIRDPARTY / "memobase-locomo" / "metrics" / "llm_judge.py"
ZEP_PROMPT = THIRDPARTY / "zep-locomo" / "zep_locomo_eval.py"
LONGMEMEVAL_PROMPT = THIRDPARTY / "longmemeval" / "evaluate_qa.py"
WRONG_GOAL, RIGHT_GOAL = 0.05, 0.80


def _short(gold: str) -> bool:
    """A gold lens imports as a key fact (lens.data.importers.common.short_facts): a longer one
    is a rubric for a judge, with no value to get wrong."""
    from lens.data.importers.common import short_facts

    return bool(short_facts(gold))


def load_locomo(path: Path) -> list[GoldQuestion]:
    """LoCoMo's questions with a short gold answer (category 5, adversarial, has none)."""
    out = []
    for conv in json.loads(path.read_text(encoding="utf-8")):
        for n, qa in enumerate(conv.get("qa", [])):
            if qa.get("category") == 5 or "answer" not in qa or not _short(str(qa["answer"])):
                continue
            out.append(GoldQuestion(f"locomo/{conv['sample_id']}/{n}", qa["question"],
                                    str(qa["answer"]), conv["sample_id"], "locomo"))
    return out


def load_longmemeval(path: Path) -> list[GoldQuestion]:
    """LongMemEval's questions with a short gold (abstention items left out: their gold is no
    answer); a question shares wrong values with the others of its type."""
    items = json.loads(path.read_text(encoding="utf-8"))
    return [GoldQuestion(f"longmemeval/{i['question_id']}", i["question"], str(i["answer"]),
                         i["question_type"], "longmemeval")
            for i in items if "_abs" not in str(i["question_id"]) and _short(str(i["answer"]))]


def locomo_turns(path: Path) -> dict[str, list[str]]:
    """Each LoCoMo conversation's turns ("Caroline: ..."), by the group its questions share."""
    out: dict[str, list[str]] = {}
    for conv in json.loads(path.read_text(encoding="utf-8")):
        sessions = conv.get("conversation", {})
        keys = sorted((k for k in sessions if re.fullmatch(r"session_\d+", k)),
                      key=lambda k: int(k.split("_")[1]))
        out[conv["sample_id"]] = [f"{t.get('speaker', '')}: {t.get('text', '')}"
                                  for k in keys for t in sessions[k] if t.get("text")]
    return out


def longmemeval_turns(path: Path) -> dict[str, list[str]]:
    """Each LongMemEval question's session turns, its evidence turns left out, by question id."""
    out: dict[str, list[str]] = {}
    for item in json.loads(path.read_text(encoding="utf-8")):
        out[f"longmemeval/{item['question_id']}"] = [
            f"{t['role']}: {t['content'][:TURN_CHARS]}"
            for session in item.get("haystack_sessions", []) for t in session
            if not t.get("has_answer") and t.get("content")]
    return out


# A pasted turn is cut here: a few turns, not one assistant's essay, make up the padding.
TURN_CHARS = 300


def _states_gold(gold: str, turn: str) -> bool:
    from lens.scoring.grading.offline_grader import support
    from lens.scoring.text.facts import AnswerText, match_fact

    return support(gold, turn) >= 0.5 or match_fact(gold, AnswerText(turn)).matched


def lengthened(a: BuiltAnswer, gold: str, turns: Sequence[str]) -> BuiltAnswer:
    """``a`` followed by turns of its conversation that do not state ``gold``, past the
    offline grader's ``LONG_ANSWER_CHARS`` (as long as the conversation allows)."""
    from lens.scoring.grading.offline_grader import LONG_ANSWER_CHARS

    text = a.answer + "\n\nWhat the conversations say:"
    start = int(hashlib.sha256(a.id.encode()).hexdigest(), 16) % max(1, len(turns))
    for turn in [*turns[start:], *turns[:start]]:
        if len(text) >= LONG_ANSWER_CHARS:
            break
        if not _states_gold(gold, turn):
            text += "\n- " + turn
    return BuiltAnswer(a.id + "+long", a.question_id, a.kind, text)


def sample(answers: Sequence[BuiltAnswer], per_kind: int) -> list[BuiltAnswer]:
    """At most ``per_kind`` answers of each (source, kind), chosen by a hash of their ids."""
    picked: dict[tuple[str, str], list[BuiltAnswer]] = {}
    for a in sorted(answers, key=lambda a: hashlib.sha256(a.id.encode()).hexdigest()):
        group = picked.setdefault((a.id.split("/")[0], a.kind), [])
        if len(group) < per_kind:
            group.append(a)
    return [a for group in picked.values() for a in group]


# --- official prompts, read from their files ------------------------------------------------

@dataclass(frozen=True)
class OfficialPrompt:
    name: str
    template: str  # str.format placeholders: question, gold, answer
    system: str | None
    schema: dict[str, Any]
    label_key: str


def _constant_assign(tree: ast.AST, name: str) -> ast.expr | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            return node.value
    return None


def _template(value: ast.expr | None, rename: dict[str, str]) -> str:
    """A prompt assigned as a plain string or an f-string, as a str.format template with the
    placeholders renamed (``rename``: the file's name -> ours)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        text = value.value
        for old, new in rename.items():
            text = text.replace("{" + old + "}", "{" + new + "}")
        return text
    if isinstance(value, ast.JoinedStr):
        parts = []
        for v in value.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name):
                parts.append("{" + rename.get(v.value.id, v.value.id) + "}")
        return "".join(parts)
    raise ValueError("no ACCURACY_PROMPT string found")


_LABEL = {"type": "string", "enum": ["CORRECT", "WRONG"]}


def mem0_prompt(path: Path) -> OfficialPrompt:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    template = _template(_constant_assign(tree, "ACCURACY_PROMPT"),
                         {"gold_answer": "gold", "generated_answer": "answer"})
    return OfficialPrompt("official (mem0's prompt)", template, None,
                          {"type": "object", "properties": {"label": _LABEL},
                           "required": ["label"]}, "label")


def zep_prompt(path: Path) -> OfficialPrompt:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    template = _template(_constant_assign(tree, "ACCURACY_PROMPT"),
                         {"gold_answer": "gold", "response": "answer"})
    system = _constant_assign(tree, "system_prompt")
    # Zep's script parses its reply into Grade(is_correct, reasoning).
    return OfficialPrompt("official (Zep's prompt)", template,
                          " ".join(system.value.split())
                          if isinstance(system, ast.Constant) and isinstance(system.value, str)
                          else None,
                          {"type": "object", "properties": {"is_correct": _LABEL,
                                                            "reasoning": {"type": "string"}},
                           "required": ["is_correct", "reasoning"]}, "is_correct")


# --- graders --------------------------------------------------------------------------------

Grades = dict[str, float | None]


def answer_key(a: BuiltAnswer) -> str:
    """What a grade is kept under: the answer's id (its question and kind) and a hash of its
    text, so a grade of an answer worded otherwise is not resumed for it."""
    return f"{a.id}~{hashlib.sha256(a.answer.encode('utf-8')).hexdigest()[:12]}"


def _resume(path: Path) -> Grades:
    if not path.exists():
        return {}
    return {r["id"]: r["accepted"] for r in map(json.loads, path.read_text().splitlines()) if r}


def _append(path: Path, rows: list[tuple[str, float | None]]) -> None:
    with path.open("a") as out:
        for rid, accepted in rows:
            out.write(json.dumps({"id": rid, "accepted": accepted}) + "\n")


def grade_matcher(answers: list[BuiltAnswer], questions: dict[str, GoldQuestion],
                  path: Path, args: argparse.Namespace) -> None:
    from lens.scoring.text.facts import AnswerText, match_fact

    path.write_text("")
    _append(path, [(answer_key(a), 1.0 if match_fact(questions[a.question_id].gold,
                                            AnswerText(a.answer)).matched else 0.0)
                   for a in answers])


def grade_local(answers: list[BuiltAnswer], questions: dict[str, GoldQuestion],
                path: Path, args: argparse.Namespace) -> None:
    from lens.scoring.grading.offline_grader import FactTask, OfflineGrader

    done = _resume(path)
    grader = OfflineGrader(n_threads=args.threads)
    for n, a in enumerate([a for a in answers if answer_key(a) not in done], 1):
        q = questions[a.question_id]
        (g,) = grader.grade([FactTask(q.question, q.gold, a.answer)])
        _append(path, [(answer_key(a), None if g.grade is None else float(g.grade >= 0.5))])
        if n % 10 == 0:
            print(f"local: {n} answers", flush=True)


def grade_judge_local(answers: list[BuiltAnswer], questions: dict[str, GoldQuestion],
                      path: Path, args: argparse.Namespace) -> None:
    from bench.fact_grading import grade_judge_local as run_judge

    raw = judge_raw(path)
    rows = [{"id": answer_key(a), "answer_id": a.id,
             "question": questions[a.question_id].question,
             "fact": questions[a.question_id].gold, "answer": a.answer} for a in answers]
    run_judge(rows, raw, args.threads)
    write_judge_local(raw, path)


def judge_raw(path: Path) -> Path:
    """The judge's verdicts under lens's judge prompts as they are now: a verdict reached under
    other wording (another judge prompts hash) is not resumed."""
    from lens.scoring.judging.judge_prompts import judge_prompts_hash

    return path.with_name(f"{path.stem}-{judge_prompts_hash()}.raw.jsonl")


def write_judge_local(raw: Path, path: Path) -> None:
    """The judge's verdicts (``raw``, one per answer as bench.fact_grading writes them) as
    acceptances: a run stopped midway still has the verdicts it reached."""
    graded = ({r["id"]: r["grade"] for r in map(json.loads, raw.read_text().splitlines()) if r}
              if raw.exists() else {})
    path.write_text("")
    _append(path, [(rid, None if g is None else float(g >= 0.5)) for rid, g in graded.items()])


def _official_verdict(text: str, key: str) -> float | None:
    with_json = re.findall(r"\{[^{}]*\}", text)
    for chunk in reversed(with_json):
        try:
            value = str(json.loads(chunk).get(key, "")).strip().upper()
        except (ValueError, AttributeError):
            continue
        if value in ("CORRECT", "WRONG"):
            return 1.0 if value == "CORRECT" else 0.0
    words = set(re.findall(r"\b(CORRECT|WRONG)\b", text.upper()))
    return (1.0 if words == {"CORRECT"} else 0.0) if len(words) == 1 else None


def grade_official(answers: list[BuiltAnswer], questions: dict[str, GoldQuestion],
                   path: Path, args: argparse.Namespace) -> None:
    """Each LoCoMo answer under mem0's prompt and Zep's, each LongMemEval answer under its
    official prompt, with the local model as the judge (lens's model stack and cache)."""
    import anyio

    from bench.judge_prompt_agreement import question as lme_question
    from lens.data.config import CacheConfig, ModelConfig
    from lens.models.base import CompletionRequest, Message
    from lens.models.factory import create_client
    from lens.scoring.protocols.longmemeval import LongMemEvalProtocol

    done = _resume(path)
    prompts = [mem0_prompt(args.mem0_prompt), zep_prompt(args.zep_prompt)]
    lme = LongMemEvalProtocol().with_prompt_file(args.longmemeval_prompt)
    items = {f"longmemeval/{i['question_id']}": i
             for i in json.loads(args.longmemeval.read_text(encoding="utf-8"))}

    async def run() -> None:
        client = create_client(ModelConfig(model=args.judge), cache=CacheConfig(enabled=True))
        try:
            for n, a in enumerate(answers, 1):
                q = questions[a.question_id]
                if q.source == "longmemeval":
                    rid = f"{answer_key(a)}@longmemeval"
                    if rid in done:
                        continue
                    (task,) = lme.tasks(lme_question(items[q.id]), a.answer).values()
                    reply = await client.complete(task.request(task.key(args.judge)))
                    _append(path, [(rid, lme.parse(task.prompt_id, reply.text or ""))])
                    continue
                for p in prompts:
                    rid = f"{answer_key(a)}@{p.name}"
                    if rid in done:
                        continue
                    messages = ([Message(role="system", content=p.system)] if p.system else [])
                    messages.append(Message(role="user", content=p.template.format(
                        question=q.question, gold=q.gold, answer=a.answer)))
                    seed = int(hashlib.sha256(rid.encode()).hexdigest()[:8], 16)
                    reply = await client.complete(CompletionRequest(
                        messages=messages, response_schema=p.schema, temperature=0.0,
                        max_tokens=200, seed=seed, role="judge"))
                    _append(path, [(rid, _official_verdict(reply.text or "", p.label_key))])
                if n % 10 == 0:
                    print(f"official: {n}/{len(answers)} answers", flush=True)
        finally:
            await client.aclose()

    anyio.run(run)


GRADERS: dict[str, Callable[[list[BuiltAnswer], dict[str, GoldQuestion], Path,
                             argparse.Namespace], None]] = {
    "matcher": grade_matcher, "local": grade_local, "judge-local": grade_judge_local,
    "official": grade_official}


# --- the table ------------------------------------------------------------------------------

def _share(values: list[float], interval: bool = False) -> str:
    """The share accepted, its count and, with ``interval``, its 95% Wilson interval."""
    if not values:
        return "-"
    # A large sample shows a rate under the 5% goal to a tenth of a percent.
    share = f"{sum(values) / len(values):.{1 if len(values) >= 200 else 0}%}"
    text = f"{share} ({int(sum(values))}/{len(values)})"
    if interval:
        est = wilson(sum(values), len(values))
        digits = 1 if len(values) >= 200 else 0
        text += f" [{est.low:.{digits}%}, {est.high:.{digits}%}]"
    return text


def goal_met(wrong: list[float], right: list[float]) -> str:
    """Whether the goal is met, judged on the 95% Wilson intervals: ``yes`` when both bounds
    clear it, ``no`` when either rate misses it beyond its interval, otherwise what the sample
    cannot tell (with what the point estimates say)."""
    if not wrong or not right:
        return "-"
    w, r = wilson(sum(wrong), len(wrong)), wilson(sum(right), len(right))
    assert w.low is not None and w.high is not None and r.low is not None and r.high is not None
    if w.low > WRONG_GOAL or r.high < RIGHT_GOAL:
        missed = [f"wrong ≥ {w.low:.0%}" if w.low > WRONG_GOAL else "",
                  f"right ≤ {r.high:.0%}" if r.high < RIGHT_GOAL else ""]
        return "no (" + ", ".join(m for m in missed if m) + ")"
    if w.high <= WRONG_GOAL and r.low >= RIGHT_GOAL:
        return "yes"
    point = sum(wrong) / len(wrong) <= WRONG_GOAL and sum(right) / len(right) >= RIGHT_GOAL
    return f"not shown (sample too small; point estimates {'meet' if point else 'miss'} it)"


def table(answers: list[BuiltAnswer], graded: dict[str, Grades]) -> str:
    """One row per source and grader (the official grader one row per prompt)."""
    by_id = {answer_key(a): a for a in answers}
    rows = []
    for source in ("locomo", "longmemeval"):
        for grader, grades in graded.items():
            readings: dict[str, dict[str, float | None]] = {}
            for rid, accepted in grades.items():
                base, _, prompt = rid.partition("@")
                a = by_id.get(base)
                if a is None or not a.id.startswith(source + "/"):
                    continue
                name = grader if not prompt else (
                    "official (LongMemEval's prompt)" if prompt == "longmemeval" else prompt)
                readings.setdefault(name, {})[base] = accepted
            for name, read in readings.items():
                per_kind = {k: [v for rid, v in read.items()
                                if v is not None and by_id[rid].kind == k]
                            for k in (*WRONG_KINDS, *RIGHT_KINDS)}
                wrong = [v for k in WRONG_KINDS for v in per_kind[k]]
                right = [v for k in RIGHT_KINDS for v in per_kind[k]]
                unread = sum(v is None for v in read.values())
                rows.append([source, name, *(_share(per_kind[k]) for k in WRONG_KINDS),
                             _share(wrong, True), *(_share(per_kind[k]) for k in RIGHT_KINDS),
                             _share(right, True), str(unread), goal_met(wrong, right)])
    return md_table(["source", "grader", *WRONG_KINDS, "wrong accepted", *RIGHT_KINDS,
                     "right accepted", "unreadable", "goal met"], rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graders", default="matcher")
    ap.add_argument("--per-kind", type=int, default=10,
                    help="answers of each kind and source the model graders read")
    ap.add_argument("--judge-per-kind", type=int, default=None,
                    help="answers of each kind and source the judges (judge-local, official) "
                         "read (default: --per-kind); they write a verdict, the slowest graders")
    ap.add_argument("--work", type=Path, default=Path("runs/wrong_answers"))
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--longmemeval", type=Path, default=LONGMEMEVAL)
    ap.add_argument("--mem0-prompt", type=Path, default=MEM0_PROMPT)
    ap.add_argument("--zep-prompt", type=Path, default=ZEP_PROMPT)
    ap.add_argument("--longmemeval-prompt", type=Path, default=LONGMEMEVAL_PROMPT)
    ap.add_argument("--judge", default="llama_cpp/default")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--long", action="store_true",
                    help="read each answer padded past LONG_ANSWER_CHARS with its "
                         "conversation's turns (see the module's docstring)")
    args = ap.parse_args(argv)
    names = [g for g in args.graders.split(",") if g]
    problems = [f"--graders: unknown {g}; choose from {', '.join(GRADERS)}" for g in names
                if g not in GRADERS]
    files = [("--locomo", args.locomo), ("--longmemeval", args.longmemeval)]
    if "official" in names:
        files += [("--mem0-prompt", args.mem0_prompt), ("--zep-prompt", args.zep_prompt),
                  ("--longmemeval-prompt", args.longmemeval_prompt)]
    problems += [f"{flag}: {path} is absent" for flag, path in files if not path.is_file()]
    if problems:
        print("\n".join(problems))
        return 2
    questions = load_locomo(args.locomo) + load_longmemeval(args.longmemeval)
    by_id = {q.id: q for q in questions}
    answers = build_all([q for q in questions if q.source == "locomo"]) + build_all(
        [q for q in questions if q.source == "longmemeval"])
    print(f"{len(questions)} questions, {len(answers)} answers built")
    turns = ({**locomo_turns(args.locomo), **longmemeval_turns(args.longmemeval)}
             if args.long else {})

    def read_as(chosen: list[BuiltAnswer]) -> list[BuiltAnswer]:
        if not args.long:
            return chosen
        return [lengthened(a, by_id[a.question_id].gold,
                           turns.get(by_id[a.question_id].group
                                     if by_id[a.question_id].source == "locomo"
                                     else a.question_id, []))
                for a in chosen]

    shown: dict[str, BuiltAnswer] = {}
    args.work.mkdir(parents=True, exist_ok=True)
    graded: dict[str, Grades] = {}
    for name in names:
        per_kind = (args.judge_per_kind if name in ("judge-local", "official")
                    and args.judge_per_kind is not None else args.per_kind)
        chosen = read_as(answers if name == "matcher" else sample(answers, per_kind))
        shown.update((a.id, a) for a in chosen)
        path = args.work / f"{name}{'-long' if args.long else ''}.jsonl"
        started = time.process_time()
        if not args.report_only:
            GRADERS[name](chosen, by_id, path, args)
        elif name == "judge-local":
            write_judge_local(judge_raw(path), path)
        print(f"{name}: {len(chosen)} answers, {time.process_time() - started:.0f} CPU s")
        graded[name] = _resume(path)
    print(table(list(shown.values()) if args.long else answers, graded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
