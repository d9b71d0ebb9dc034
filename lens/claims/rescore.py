"""The publisher's answers re-scored by lens: LoCoMo's official token F1 (lens's LoCoMo
protocol), lens's fact grader with the gold answer as the one key fact (the phrase matcher, or
the offline grader with the local model), and a judge model under a prompt (lens's LoCoMo judge
prompt or the publisher's, by file). Each scorer gets an interval clustered by conversation and,
where it gives verdicts, its agreement with the publisher's and the answers where they differ."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from lens.claims.arithmetic import item_credit
from lens.claims.items import ClaimItem, ClaimSet
from lens.core.errors import UserError
from lens.models.base import CompletionRequest, Message, ModelClient, ModelError
from lens.scoring.grading.offline_grader import FactTask, OfflineGrader, cheap_grade
from lens.scoring.protocols.locomo import J_PROMPT, J_PROMPT_ID, category_f1, token_f1
from lens.scoring.text.facts import MATCHER_VERSION, AnswerText, match_fact
from lens.stats.agreement import Agreement, agreement
from lens.stats.intervals import Estimate, clustered_estimate, unknown

# The placeholders a judge prompt file may use, as lens's and the publishers' prompts spell them.
QUESTION_SLOTS = ("question",)
GOLD_SLOTS = ("gold_answer", "gold")
ANSWER_SLOTS = ("response", "generated_answer", "answer")
_SLOT = re.compile(r"\{(" + "|".join(QUESTION_SLOTS + GOLD_SLOTS + ANSWER_SLOTS) + r")\}")
_LABEL = re.compile(r"\b(CORRECT|WRONG)\b", re.I)


@dataclass(frozen=True)
class Scored:
    """One scorer's figure on the items it scored."""

    name: str
    # What its figure depends on (method, model, prompt hash, sample): its condition.
    condition: dict[str, Any]
    ids: tuple[str, ...]
    values: tuple[float | None, ...]
    estimate: Estimate
    agreement: Agreement | None = None
    # The answers where this scorer and the publisher's verdict differ: (id, publisher, lens).
    disagreements: tuple[tuple[str, bool, bool], ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def unknown(self) -> int:
        return sum(v is None for v in self.values)


def sample(claims: ClaimSet, limit: int | None) -> tuple[ClaimItem, ...]:
    """Up to ``limit`` items, the same ones for the same file: ordered by a hash of the file's
    content hash and each item's id, kept in file order."""
    items = claims.items
    if limit is None or limit >= len(items):
        return items
    seed = "".join(f.sha256 for f in claims.inputs)
    ranked = sorted(range(len(items)), key=lambda i: hashlib.sha256(
        f"{seed}\0{items[i].id}".encode()).hexdigest())
    keep = set(ranked[:limit])
    return tuple(i for n, i in enumerate(items) if n in keep)


def _scored(name: str, condition: dict[str, Any], items: Sequence[ClaimItem],
            values: Sequence[float | None], binary: bool) -> Scored:
    known = [(i, v) for i, v in zip(items, values, strict=True) if v is not None]
    est = (clustered_estimate([v for _, v in known], [i.group for i, _ in known])
           if known else unknown(len(items)))
    if not binary:
        return Scored(name, condition, tuple(i.id for i in items), tuple(values), est)
    agr, disagreements = _against_publisher(known)
    return Scored(name, condition, tuple(i.id for i in items), tuple(values), est, agr,
                  disagreements)


def _against_publisher(known: Sequence[tuple[ClaimItem, float]]
                       ) -> tuple[Agreement | None, tuple[tuple[str, bool, bool], ...]]:
    """A binary scorer's agreement with the publisher's majority verdict, where the publisher
    gave one, and the (id, publisher, lens) verdicts where they differ."""
    pairs = [(i.id, pub >= 0.5, v >= 0.5) for i, v in known
             if (pub := item_credit(i, "majority")) is not None]
    agr = agreement([str(p) for _, p, _ in pairs], [str(v) for _, _, v in pairs]) if pairs \
        else None
    return agr, tuple(p for p in pairs if p[1] != p[2])


def _locomo_category(item: ClaimItem) -> int | None:
    return int(item.category) if item.category in {"1", "2", "3", "4", "5"} else None


def locomo_f1(claims: ClaimSet, items: Sequence[ClaimItem]) -> Scored:
    """LoCoMo's token F1 as its evaluation script computes it (per category rules)."""
    values = []
    for item in items:
        cat = _locomo_category(item) if claims.benchmark == "locomo" else None
        values.append(category_f1(cat, item.answer, item.gold) if cat is not None
                      else token_f1(item.answer, item.gold))
    if claims.benchmark == "locomo":
        return _scored("LoCoMo F1", {"scorer": "locomo-f1", "rules": "task_eval/evaluation.py"},
                       items, values, binary=False)
    # Not the benchmark's own metric: LoCoMo's token F1 read as a plain overlap measure.
    return _scored("token F1", {"scorer": "token-f1", "rules": "LoCoMo's tokenizer"}, items,
                   values, binary=False)


def matcher_grades(items: Sequence[ClaimItem]) -> Scored:
    """The phrase matcher alone: 1 when the answer states the gold answer as a key fact."""
    values = [1.0 if item.answer.strip() and match_fact(item.gold, AnswerText(item.answer))
              .matched else 0.0 for item in items]
    cond = {"scorer": "matcher", "matcher_version": MATCHER_VERSION, "fact": "the gold answer"}
    return _scored("fact matcher", cond, items, values, binary=True)


def offline_grades(items: Sequence[ClaimItem], grader: OfflineGrader,
                   progress: Callable[[int, int], None] | None = None) -> Scored:
    """The offline grader: the matcher's cheap checks, then the local model for the rest. Its
    verdicts are kept in the grader's cache (the work directory), so a second call resumes."""
    tasks = [FactTask(i.question, i.gold, i.answer) for i in items]
    grades = grader.grade(tasks, progress)
    values = [g.grade for g in grades]
    model_calls = sum(cheap_grade(t) is None for t in tasks)
    # Its cheap checks are the matcher's: a new matcher moves its figure too.
    cond = {"scorer": "offline-grader", "matcher_version": MATCHER_VERSION,
            "fact": "the gold answer", **grader.condition()}
    note = f"{model_calls} of {len(tasks)} answer(s) read by the local model"
    s = _scored("offline grader", cond, items, values, binary=True)
    return Scored(s.name, s.condition, s.ids, s.values, s.estimate, s.agreement,
                  s.disagreements, (note, *grader.errors))


@dataclass(frozen=True)
class JudgePrompt:
    name: str
    text: str
    sha256: str

    def render(self, item: ClaimItem) -> str:
        def fill(m: re.Match[str]) -> str:
            slot = m.group(1)
            return (item.question if slot in QUESTION_SLOTS else item.gold
                    if slot in GOLD_SLOTS else item.answer)
        # Only the named slots are filled: a prompt's own JSON braces stay as written.
        return _SLOT.sub(fill, self.text)


LENS_PROMPT_TEXT = J_PROMPT.replace("{{", "{").replace("}}", "}")


def lens_prompt() -> JudgePrompt:
    return JudgePrompt(J_PROMPT_ID, LENS_PROMPT_TEXT,
                       hashlib.sha256(LENS_PROMPT_TEXT.encode()).hexdigest())


def load_prompt(path: Path) -> JudgePrompt:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--judge-prompt {path}: cannot read it ({exc}); give a UTF-8 text file "
                        "holding the judge's prompt") from None
    slots = set(_SLOT.findall(text))
    missing = [what for what, names in (("question", QUESTION_SLOTS), ("gold", GOLD_SLOTS),
                                        ("answer", ANSWER_SLOTS)) if not slots & set(names)]
    if missing:
        raise UserError(f"{path}: the judge prompt has no place for the {', '.join(missing)}; "
                        "write {question}, {gold_answer} and {response} (or {generated_answer}) "
                        "where the publisher's prompt puts them")
    return JudgePrompt(path.name, text, hashlib.sha256(text.encode()).hexdigest())


def parse_label(text: str) -> bool | None:
    """CORRECT or WRONG from a judge's reply: the JSON's label, else the last label word."""
    for m in re.finditer(r"\{[^{}]*\}", text):
        try:
            obj = json.loads(m.group())
        except json.JSONDecodeError:
            continue
        for key in ("label", "is_correct", "grade"):
            if isinstance(obj, dict) and isinstance(obj.get(key), str):
                word = obj[key].strip().upper()
                if word in ("CORRECT", "WRONG"):
                    return bool(word == "CORRECT")
    words = _LABEL.findall(text)
    return None if not words else words[-1].upper() == "CORRECT"


async def judge_verdicts(client: ModelClient, prompt: JudgePrompt,
                         items: Sequence[ClaimItem], *, concurrency: int,
                         errors: list[str]) -> list[bool | None]:
    """One verdict per item; a failed call or an unreadable reply is unknown (None)."""
    out: list[bool | None] = [None] * len(items)
    limiter = anyio.Semaphore(concurrency)

    async def one(n: int, item: ClaimItem) -> None:
        async with limiter:
            request = CompletionRequest(messages=[Message(role="user",
                                                          content=prompt.render(item))],
                                        role="judge", temperature=0.0)
            try:
                reply = await client.complete(request)
            except ModelError as exc:
                if len(errors) < 5:
                    errors.append(str(exc)[:300])
                return
            out[n] = parse_label(reply.text)

    async with anyio.create_task_group() as tg:
        for n, item in enumerate(items):
            tg.start_soon(one, n, item)
    return out


def judged(model: str, prompt: JudgePrompt, items: Sequence[ClaimItem],
           verdicts: Sequence[bool | None], errors: Sequence[str]) -> Scored:
    values = [None if v is None else float(v) for v in verdicts]
    cond = {"scorer": "judge", "model": model, "prompt": prompt.name,
            "prompt_sha256": prompt.sha256}
    s = _scored(f"judge {model} ({prompt.name})", cond, items, values, binary=True)
    unreadable = sum(v is None for v in verdicts)
    notes = tuple(errors) + ((f"{unreadable} verdict(s) unknown (failed or unreadable)",)
                             if unreadable else ())
    return Scored(s.name, s.condition, s.ids, s.values, s.estimate, s.agreement,
                  s.disagreements, notes)
