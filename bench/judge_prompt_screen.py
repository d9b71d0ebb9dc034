"""Screening per-fact judge prompts with the local model on answers known to be wrong or right.

Each variant is a judge prompt (lens's system message, a user template) and the start of the
reply the grammar forces (``{"grade": "``, ``{"verdict": "``). The local model reads the
rendered prompt once and gives the probability of each of the variant's choices as the next
token (lens.models.llama_backend.LlamaCppClient.choice_probabilities): the verdict a
grammar-constrained greedy reply starts with is the most probable choice, so this reads what the
judge would answer, and how sure it is, without generating the reply. lens's local judge reads
its fact grades the same way (lens.scoring.judging.judge: P(yes) against LOCAL_YES_AT); the
shipped prompt is measured through the judge path itself (``python -m bench.wrong_answers
--graders judge-local``).

    python -m bench.judge_prompt_screen --variants previous,binary --source locomo \
        --per-kind 4 [--threads 1] [--work runs/judge_screen]

The answers are bench.wrong_answers' (the same sample, chosen by a hash of each answer's id).
Probabilities are kept in ``--work`` (one JSON line per variant and answer) and a re-run
resumes. Printed per variant: the share of each kind accepted (the most probable choice is
a full or partial credit; for ``lens-p-yes``, P(yes) reaches judge_prompts.LOCAL_YES_AT, as
lens's local judge reads it) and of wrong and right answers, and the highest P(yes) of a wrong
answer and the lowest of a right one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import machine_line, md_table
from bench.wrong_answers import LOCOMO, LONGMEMEVAL, load_locomo, load_longmemeval, sample
from lens.models.base import CompletionRequest, Message
from lens.scoring.judging import judge_prompts as jp
from lens.scoring.wrong_answers import RIGHT_KINDS, WRONG_KINDS, build_all


@dataclass(frozen=True)
class Variant:
    template: str  # str.format placeholders: question, fact, answer
    reply_start: str
    choices: tuple[str, ...]
    credit: dict[str, float]  # choice -> points; a choice missing here gives 0
    # Another variant whose probabilities this one reads under its own credit (no model call).
    reads: str | None = None
    # Read by P(yes) against this threshold instead of by the most probable choice.
    yes_at: float | None = None


_GRADES = {"present": 1.0, "partial": 0.5}

# lens's per-fact judge prompt before this screen (judge prompts hash e573ef070f46d53a).
PREVIOUS_TEMPLATE = """\
Question: {question}

Key fact: {fact}

Answer:
<<<
{answer}
>>>

Grade how far the answer states the key fact.
- present: the answer asserts the key fact as its own claim, in any wording; every number, \
date, identifier and direction in the key fact agrees with the answer.
- partial: the answer asserts part of the key fact (the trend without its figures, one of \
two values, the cause without the change it caused) and contradicts none of it.
- absent: the answer does not assert it; or it only appears inside pasted records or a bare \
list of values with no claim drawn from them; or the answer hedges it away, denies it, or \
gives a different number, date, identifier or direction.

Examples (key fact "notifications p99 latency rose from 215 ms to 290 ms after CHG-9437"):
- "Since CHG-9437 the notifications p99 climbed from 215 to 290 ms." -> present
- "Notifications latency went up after CHG-9437." -> partial
- "Notifications p99 fell from 290 ms to 215 ms after CHG-9437." -> absent
- "Latency rose after CHG-9438." -> absent
- "Report 1: notifications p99 215 ms. Report 2: notifications p99 290 ms." -> absent
- "Something may have changed; more data is needed." -> absent

Reply as JSON: {{"grade": "present" | "partial" | "absent", "reason": "<one sentence>"}}"""

_BINARY_INTRO = (
    "I will give you a question, a key fact of the correct answer, and an answer to judge. "
    "Answer yes if the answer states the key fact as its own claim, in any wording (a date in "
    "another format, or a paraphrase, counts). Otherwise answer no. Answer no if it is vague "
    "(it names only the topic, or a wider period than the key fact), gives another value "
    "(another date, number, name or place), names the key fact only among alternatives, or "
    "only pastes records or lists values without drawing the claim.")
_BINARY_ASK = ("\n\nQuestion: {question}\n\nKey fact: {fact}\n\nAnswer:\n<<<\n{answer}\n>>>\n\n"
               "Does the answer state the key fact? ")
# Worded unlike lens.scoring.wrong_answers' builders, so the measure does not grade the examples.
_EXAMPLES = (
    "\n\nExamples (key fact \"12 March 2021\"):\n"
    "- \"That happened on March 12, 2021.\" -> yes\n"
    "- \"In spring 2021, I believe.\" -> no (vague: a wider period)\n"
    "- \"That came up once; it was about work.\" -> no (vague: only the topic)\n"
    "- \"On 3 April 2021.\" -> no (another date)\n"
    "- \"At the lake house.\" -> no (another value)\n"
    "- \"Perhaps 2 February, 12 March or 9 June 2021.\" -> no (among alternatives)")

VARIANTS: dict[str, Variant] = {
    # lens's previous prompt: three grades, the grade first.
    "previous": Variant(PREVIOUS_TEMPLATE, '{"grade": "', ("present", "partial", "absent"),
                       _GRADES),
    # The same reading, the partial level not counted as acceptance: is "partial" the culprit?
    "previous-no-partial": Variant(PREVIOUS_TEMPLATE, '{"grade": "',
                                  ("present", "partial", "absent"), {"present": 1.0},
                                  reads="previous"),
    # lens's local judge: the same probabilities, present when P(yes) >= LOCAL_YES_AT.
    "lens-p-yes": Variant(jp.FACT_GRADE_TEMPLATE, '{"verdict": "', ("yes", "partly", "no"),
                          {"yes": 1.0}, reads="lens", yes_at=jp.LOCAL_YES_AT),
    "binary": Variant(_BINARY_INTRO + _BINARY_ASK + 'Reply as JSON: {{"verdict": "yes" | "no"}}',
                      '{"verdict": "', ("yes", "no"), {"yes": 1.0}),
    "binary-examples": Variant(
        _BINARY_INTRO + _EXAMPLES + _BINARY_ASK + 'Reply as JSON: {{"verdict": "yes" | "no"}}',
        '{"verdict": "', ("yes", "no"), {"yes": 1.0}),
    "binary-partly": Variant(
        _BINARY_INTRO + " Answer partly if it states part of a key fact that has several "
        "parts (the trend without its figures, one of two values) and contradicts none of it; "
        "a vague answer is not partly." + _EXAMPLES + _BINARY_ASK
        + 'Reply as JSON: {{"verdict": "yes" | "partly" | "no"}}',
        '{"verdict": "', ("yes", "partly", "no"), {"yes": 1.0, "partly": 0.5}),
    # lens's prompt as it stands (judge_prompts.FACT_GRADE_TEMPLATE).
    "lens": Variant(jp.FACT_GRADE_TEMPLATE, '{"verdict": "', ("yes", "partly", "no"),
                    {"yes": 1.0, "partly": 0.5}),
}


def text_hash(variant: Variant) -> str:
    """Identifies a variant's wording: a row measured under other words is measured again."""
    return hashlib.sha256("\0".join([jp.JUDGE_SYSTEM, variant.template, variant.reply_start])
                          .encode()).hexdigest()[:12]


def render(variant: Variant, question: str, fact: str, answer: str) -> str:
    """The raw ChatML prompt the judge path sends to the local model, with the start of the reply
    its grammar forces."""
    from lens.models.local_prompt import render_prompt

    user = variant.template.format(question=question, fact=fact,
                                   answer=answer.replace("<<<", "< < <").replace(">>>", "> > >"))
    request = CompletionRequest(messages=[Message(role="system", content=jp.JUDGE_SYSTEM),
                                          Message(role="user", content=user)])
    return render_prompt(request) + variant.reply_start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--source", choices=("locomo", "longmemeval"), default="locomo")
    ap.add_argument("--per-kind", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path("runs/judge_screen"))
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--longmemeval", type=Path, default=LONGMEMEVAL)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in VARIANTS]
    path = args.locomo if args.source == "locomo" else args.longmemeval
    if unknown or not path.is_file():
        print(f"--variants: unknown {', '.join(unknown)}; choose from {', '.join(VARIANTS)}"
              if unknown else f"--{args.source}: {path} is absent")
        return 2
    questions = load_locomo(path) if args.source == "locomo" else load_longmemeval(path)
    by_id = {q.id: q for q in questions}
    answers = sample(build_all(questions), args.per_kind)
    args.work.mkdir(parents=True, exist_ok=True)
    out = args.work / "probabilities.jsonl"
    current = {n: text_hash(v) for n, v in VARIANTS.items()}
    done = ({(r["variant"], r["id"]): r for r in map(json.loads, out.read_text().splitlines())
             if r.get("text") == current[r["variant"]]} if out.exists() else {})
    print(machine_line())
    if not args.report_only:
        from lens.data.config import ModelConfig
        from lens.models.llama_backend import LlamaCppClient

        client = LlamaCppClient(ModelConfig(model="llama_cpp/qwen2.5-coder-1.5b", options={
            "n_ctx": 4096, "n_threads": args.threads}))
        with out.open("a") as sink:
            # Variant by variant: its instructions are a prefix the model evaluates once.
            for name in names:
                v = VARIANTS[name]
                for a in answers if v.reads is None else []:
                    if (name, a.id) in done:
                        continue
                    q = by_id[a.question_id]
                    started = time.perf_counter()
                    probs = client.choice_probabilities(render(v, q.question, q.gold, a.answer),
                                                        v.choices)
                    row = {"variant": name, "text": current[name], "id": a.id, "kind": a.kind,
                           "probs": probs, "seconds": round(time.perf_counter() - started, 2)}
                    done[(name, a.id)] = row
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                    print(f"{name} {a.kind} {max(probs, key=probs.__getitem__)} "
                          f"{row['seconds']} s", flush=True)
    rows = []
    for name in names:
        v = VARIANTS[name]
        got = [r for (n, _), r in done.items()
               if n == (v.reads or name) and r["id"].startswith(args.source)]
        credit = {r["id"]: (float(r["probs"]["yes"] >= v.yes_at) if v.yes_at is not None
                            else v.credit.get(max(r["probs"], key=r["probs"].__getitem__), 0.0))
                  for r in got}
        p_yes = {k: [r["probs"][v.choices[0]] for r in got
                     if (r["kind"] in WRONG_KINDS) == (k == "wrong")] for k in ("wrong", "right")}
        kinds = {r["id"]: r["kind"] for r in got}

        def share(ks: tuple[str, ...], ids: dict[str, float] = credit,
                  kind_of: dict[str, str] = kinds) -> str:
            vals = [c > 0 for i, c in ids.items() if kind_of[i] in ks]
            return f"{sum(vals)}/{len(vals)}" if vals else "-"

        seconds = [r["seconds"] for r in got]
        rows.append([name, *(share((k,)) for k in WRONG_KINDS), share(WRONG_KINDS),
                     *(share((k,)) for k in RIGHT_KINDS), share(RIGHT_KINDS),
                     f"{max(p_yes['wrong']):.2f}" if p_yes["wrong"] else "-",
                     f"{min(p_yes['right']):.2f}" if p_yes["right"] else "-",
                     f"{sum(seconds) / len(seconds):.1f}" if seconds else "-"])
    print(md_table(["variant", *WRONG_KINDS, "wrong accepted", *RIGHT_KINDS, "right accepted",
                    "highest P(yes or present), wrong", "lowest, right", "s per answer"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
