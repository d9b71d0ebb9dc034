"""The LongMemEval-V2 protocol: each question graded by the function its data names, the
benchmark's tables, and the accuracy–latency frontier gain of its leaderboard.

Definitions (implemented here from LongMemEval-V2's ``evaluation/qa_eval_metrics.py``,
``evaluation/harness.py`` and ``leaderboard/compute_lafs.py``, Wu et al., 2026):

* Final answer: the content of the response's last ``\\boxed{...}`` (braces balanced), else the
  whole response, stripped. A final answer of ``UNKNOWN`` (any case) scores 0, whatever the
  grading function says, and is counted as unknown rather than wrong.
* Each question's ``eval_function`` (``name|option=value|...``) names its grading, applied to the
  final answer:

  - ``norm_phrase_set_match``: the gold answer is split at the separators (``,`` and ``;`` by
    default) into phrases; answer and phrases are normalised (lower-cased, ``-`` and ``_`` as
    spaces, ``,`` ``;`` as spaces, other punctuation removed, whitespace collapsed; each step can
    be turned off by its option); correct when every phrase occurs in the answer as whole words.
  - ``norm_phrase_set_match_ordered``: the same, the phrases found in their order.
  - ``mc_choice_match``: the answer (a ``\\boxed{}`` inside it, lower-cased, if any) without the
    words "choice" / "option" and the ``strip_chars`` (``.``), stripped and upper-cased, equals the
    gold letter.
  - ``mc_choice_set_match``: the sets of letters equal; letters are read from the runs of Latin
    letters in the upper-cased text, filler words (AND, ANSWER, CHOICE, FINAL, LETTER, OPTION and
    their plurals) skipped, every other run read letter by letter.
  - ``llm_abstention_checker`` (flawed-premise questions, types ending ``-abs``) and
    ``llm_gotchas_checker`` (``errors-gotchas``): one judge call with the question, the reference
    answer, the whole response and the final answer; the judge replies with JSON
    ``{"label": 0 | 1, "reason": ...}``. The premise judge gives 1 only when the response names
    the flaw of the reference (or says plainly that it cannot see the user's live environment,
    without answering under the premise); the gotchas judge gives 1 when the response states at
    least one insight of the reference and contradicts none.

  An empty answer (or gold) scores 0 under every function (``require_non_empty``).
* Reported as ``evaluation/harness.py`` aggregates and the leaderboard reads it: accuracy over
  every question (``overall_full_set``), over the non-premise and the premise questions (those
  graded by ``llm_abstention_checker``); per category the share correct, answered wrong and
  unknown; static, dynamic and procedure with their premise questions counted in (the
  leaderboard's columns) and gotchas alone.
* Latency and LAFS: the leaderboard puts a system at (accuracy × 100, mean memory query
  seconds) and scores the gain of adding it to the released reference frontier of its tier,
  LAFS(reference ∪ system) − LAFS(reference) over budgets of 1 to 200 s (see
  :mod:`lens.stats.frontier`). The published judge is gpt-5.2 (reasoning effort medium, at
  most 2,048 completion tokens).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lens.data.dataset import Question
from lens.data.importers.longmemeval_v2_source import (
    CATEGORIES,
    JUDGED_FUNCTIONS,
    TIERS,
    parse_eval_spec,
)
from lens.scoring.protocols.base import Protocol, ProtocolTask, json_span
from lens.stats.frontier import LATENCY_WINDOW, Point, lafs, lafs_gain

ACCURACY = "lme_v2_accuracy"
UNKNOWN = "lme_v2_unknown"
WRONG = "lme_v2_answered_wrong"
SECONDS = "lme_v2_query_seconds"
CATEGORY_ORDER = ("static", "static-abs", "dynamic", "dynamic-abs", "procedure",
                  "procedure-abs", "gotchas")
# The leaderboard's columns: each ability with its flawed-premise questions counted in.
ABILITIES = {"static": ("static", "static-abs"), "dynamic": ("dynamic", "dynamic-abs"),
             "procedure": ("procedure", "procedure-abs"), "gotchas": ("gotchas",)}
JUDGE_MAX_TOKENS = 2048
# The leaderboard's fixed reader and judge (its submission checker requires these in the run's
# model names).
LEADERBOARD_READER = "qwen3.5-9b"
LEADERBOARD_JUDGE = "gpt-5.2"

# The leaderboard's fixed reference frontier per tier (accuracy in points, query latency in
# seconds): the released baselines and AgentRunbook methods of the paper's main results table.
REFERENCE_FRONTIER: dict[str, tuple[Point, ...]] = {
    "small": (Point("RAG: query -> slice + notes", 51.0, 0.2), Point("Codex", 69.9, 177.2),
              Point("AgentRunbook-R", 58.6, 26.9), Point("AgentRunbook-C", 74.9, 108.3)),
    "medium": (Point("RAG: query -> slice + notes", 45.9, 0.3), Point("Codex", 68.7, 185.8),
               Point("AgentRunbook-R", 57.0, 25.8), Point("AgentRunbook-C", 70.1, 139.9)),
}

_REPLY = ('Reply with JSON only: {{"label": 0 or 1, "reason": "<one short sentence>"}}')
PREMISE_ID = "lme-v2-premise@1"
PREMISE_PROMPT = (
    "You grade answers to questions built on a wrong premise. Decide whether the model's "
    "answer recognises that the premise is wrong, in the way the reference answer explains.\n\n"
    "Question:\n{question}\n\nReference answer (what is wrong with the premise):\n{reference}"
    "\n\nThe model's whole response:\n{response}\n\nThe model's final answer:\n{final}\n\n"
    "Rules:\n"
    "- 1 only when the model clearly says the premise is wrong and reaches the reference's "
    "conclusion (other words are fine if the flaw is the same).\n"
    "- 1 also when the model says plainly that it cannot see the user's own live environment, "
    "instance or configuration and so cannot check, provided it gives no concrete answer that "
    "accepts the premise.\n"
    "- 0 when the model accepts the premise and answers under it.\n"
    "- 0 for a bare UNKNOWN or \"not enough information\" that names no flaw and does not state "
    "that limit of access.\n"
    "- 0 when the model contradicts itself (rejects the premise and also answers under it).\n\n"
    + _REPLY)
GOTCHAS_ID = "lme-v2-gotchas@1"
GOTCHAS_PROMPT = (
    "You grade answers to questions about the traps of a software environment. The reference "
    "answer lists the key insight(s). Decide whether the model's answer captures one.\n\n"
    "Question:\n{question}\n\nReference answer (insights):\n{reference}\n\n"
    "The model's whole response:\n{response}\n\nThe model's final answer:\n{final}\n\n"
    "Rules:\n"
    "- 1 when the model states at least one insight of the reference (in any words) and "
    "contradicts none of them; covering part of a reference of several points is enough.\n"
    "- 0 when the model points the wrong way (the opposite cause or action), even if words "
    "overlap.\n"
    "- 0 when anything in the model's answer contradicts a point of the reference.\n"
    "- 0 when the answer is off the point or generic, with no insight.\n\n"
    + _REPLY)
PROMPTS = {PREMISE_ID: PREMISE_PROMPT, GOTCHAS_ID: GOTCHAS_PROMPT}
_JUDGE_PROMPT = {"llm_abstention_checker": PREMISE_ID, "llm_gotchas_checker": GOTCHAS_ID}


# -- the final answer -----------------------------------------------------------------------------
def boxed_answer(text: str) -> str:
    """The content of the last ``\\boxed{...}``, braces balanced; the text itself (stripped)
    when there is none or it is empty."""
    start = text.rfind("\\boxed{")
    if start == -1:
        return text.strip()
    depth, out = 1, []
    for ch in text[start + len("\\boxed{"):]:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        out.append(ch)
    return "".join(out).strip() or text.strip()


def is_unknown(final: str) -> bool:
    return final.strip().lower() == "unknown"


# -- the grading functions ------------------------------------------------------------------------
def normalize_phrase(text: str, *, lower: Any = True, normalize_hyphen: Any = True,
                     strip_punct: Any = True) -> str:
    if lower:
        text = text.lower()
    if normalize_hyphen:
        text = text.replace("-", " ").replace("_", " ")
    text = re.sub(r"[,;]", " ", text)
    if strip_punct:
        text = re.sub(r"[^\w\s]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def split_phrases(text: str, separators: Sequence[str], **norm: Any) -> list[str]:
    if not separators:
        whole = normalize_phrase(text, **norm)
        return [whole] if whole else []
    parts = re.split("|".join(re.escape(s) for s in separators), text)
    return [p for p in (normalize_phrase(x, **norm) for x in parts) if p]


def _phrase_setup(prediction: str, answer: str, options: Mapping[str, Any]
                  ) -> tuple[str, list[str], bool]:
    norm = {k: options[k] for k in ("lower", "normalize_hyphen", "strip_punct") if k in options}
    seps = options.get("separators", (",", ";"))
    pred = normalize_phrase(prediction, **norm)
    phrases = split_phrases(answer, seps or (), **norm)
    empty = bool(options.get("require_non_empty", True)) and (not pred or not phrases)
    return pred, phrases, empty


def phrase_set_match(prediction: str, answer: str, options: Mapping[str, Any]) -> bool:
    pred, phrases, empty = _phrase_setup(prediction, answer, options)
    if empty:
        return False
    return all(re.search(rf"\b{re.escape(p)}\b", pred) for p in set(phrases))


def phrase_set_match_ordered(prediction: str, answer: str, options: Mapping[str, Any]) -> bool:
    pred, phrases, empty = _phrase_setup(prediction, answer, options)
    if empty:
        return False
    at = 0
    for p in phrases:
        m = re.search(rf"\b{re.escape(p)}\b", pred[at:])
        if m is None:
            return False
        at += m.end()
    return True


def mc_choice_match(prediction: str, answer: str, options: Mapping[str, Any]) -> bool:
    boxed = re.search(r"\\boxed\{([^}]*)\}", prediction.lower())
    text = boxed.group(1) if boxed else prediction
    text = re.sub(r"\b(choice|option)\b", "", text, flags=re.IGNORECASE)
    for ch in str(options.get("strip_chars", ".")):
        text = text.replace(ch, "")
    got, want = text.strip().upper(), answer.strip().upper()
    if options.get("require_non_empty", True) and (not got or not want):
        return False
    return got == want


_FILLER = frozenset({"AND", "ANSWER", "ANSWERS", "CHOICE", "CHOICES", "FINAL", "LETTER",
                     "LETTERS", "OPTION", "OPTIONS"})


def choice_letters(text: str) -> list[str]:
    return [ch for run in re.findall(r"[A-Z]+", text.upper()) if run not in _FILLER
            for ch in run]


def mc_choice_set_match(prediction: str, answer: str, options: Mapping[str, Any]) -> bool:
    got, want = choice_letters(prediction), choice_letters(answer)
    if options.get("require_non_empty", True) and (not got or not want):
        return False
    return set(got) == set(want)


MECHANICAL = {"norm_phrase_set_match": phrase_set_match,
              "norm_phrase_set_match_ordered": phrase_set_match_ordered,
              "mc_choice_match": mc_choice_match,
              "mc_choice_set_match": mc_choice_set_match}


def grade(spec: str, final: str, answer: str) -> bool | None:
    """The mechanical grade of a final answer under ``spec``; None for a judged function."""
    name, options = parse_eval_spec(spec)
    fn = MECHANICAL.get(name)
    return None if fn is None else fn(final, answer, options)


def parse_label(text: str) -> float | None:
    """A judge reply's label (1.0 or 0.0), read as the benchmark reads it: the JSON object in
    the reply (a code fence around it allowed), else a ``label: 0|1`` pattern; None when
    there is neither."""
    cleaned = text.strip()
    if cleaned.startswith("```") and cleaned.endswith("```"):
        lines = cleaned.splitlines()
        if len(lines) >= 3:
            cleaned = "\n".join(lines[1:-1]).strip()
    data = json_span(cleaned)
    # As the benchmark reads it, JSON true and false count as 1 and 0.
    if isinstance(data, dict) and data.get("label") in (0, 1, "0", "1"):
        return float(int(data["label"]))
    for pattern in (r'"label"\s*:\s*([01])', r"'label'\s*:\s*([01])", r"\blabel\b\s*[:=]\s*([01])"):
        found = re.search(pattern, cleaned, re.I)
        if found:
            return float(found.group(1))
    return None


# -- the protocol ---------------------------------------------------------------------------------
def _strict_mean(values: Sequence[float | None]) -> float | None:
    """The mean, unknown when any value is: an overall figure over the full set is not the mean
    of the questions that happen to be known."""
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def _spec(q: Question) -> str:
    return str(q.meta.get("eval_function") or "")


def _eval_name(q: Question) -> str:
    return _spec(q).split("|", 1)[0].strip()


def uses_leaderboard_reader(model: str | None, mode: str | None) -> bool:
    """The leaderboard's reader: its fixed model answering from what the memory returns (lens's
    fixed-reader mode), not an agent of another model."""
    return bool(model) and LEADERBOARD_READER in str(model).lower() and mode == "fixed_reader"


def reader_note(manifest: Mapping[str, Any]) -> str:
    """Whether the run's answers come from the leaderboard's reader, for the scoring notes."""
    agent = (manifest.get("config") or {}).get("agent") or {}
    model, mode = agent.get("model"), agent.get("mode", "tool_agent")
    if uses_leaderboard_reader(model, mode):
        return (f"the answers come from the leaderboard's fixed reader ({model}, mode "
                "fixed_reader)")
    return (f"the answers do not come from the leaderboard's fixed reader ({LEADERBOARD_READER} "
            f"answering from the memory's results): this run's reader is {model} in mode "
            f"{mode}, so its figures do not stand in the leaderboard's table")



class LongMemEvalV2Protocol(Protocol):
    name = "longmemeval-v2"
    version = 1
    title = "LongMemEval-V2"
    group_label = "category"
    group_order = CATEGORY_ORDER
    metrics = (ACCURACY, UNKNOWN, WRONG, SECONDS)
    published_judge = "openai/gpt-5.2"
    prompts = PROMPTS
    takes_prompt_file = True
    source = ("LongMemEval-V2's evaluation/qa_eval_metrics.py, evaluation/harness.py and "
              "leaderboard/compute_lafs.py")

    def run_notes(self, manifest: Mapping[str, Any]) -> list[str]:
        return [reader_note(manifest)]

    def check(self, q: Question) -> str | None:
        fix = "import the data with `lens datasets import --format longmemeval-v2`"
        if q.meta.get("question_type") not in CATEGORIES:
            return (f"question {q.question_id} has no LongMemEval-V2 question type in "
                    f"meta.question_type (got {q.meta.get('question_type')!r}; {fix})")
        try:
            parse_eval_spec(_spec(q))
        except ValueError as exc:
            return f"question {q.question_id}: meta.eval_function: {exc} ({fix})"
        return None

    def group(self, q: Question) -> str:
        return CATEGORIES[str(q.meta["question_type"])]

    def mechanical(self, q: Question, answer: str) -> dict[str, float | None]:
        final = boxed_answer(answer)
        unknown = is_unknown(final)
        gold = q.ground_truth.canonical_answer
        out: dict[str, float | None] = {
            UNKNOWN: float(unknown),
            # Markers, not scores: what the overall figures are taken over.
            # The harness splits premise questions by their grading, not their type.
            "lme_v2_premise": float(_eval_name(q) == "llm_abstention_checker"),
            "lme_v2_image": float(bool(q.meta.get("image"))),
        }
        tier = q.meta.get("tier")
        if tier in TIERS:
            out[f"lme_v2_tier_{tier}"] = 1.0
        if unknown:
            return {**out, ACCURACY: 0.0, WRONG: 0.0}
        graded = grade(_spec(q), final, gold)
        if graded is None and answer and gold.strip():
            return out  # the judge grades it
        correct = float(bool(graded))
        return {**out, ACCURACY: correct, WRONG: 1.0 - correct}

    def record_metrics(self, q: Question, record: Any) -> dict[str, float | None]:
        # The memory's share of the question's time: the agent's tool calls are its queries;
        # the answering model's own time is left out, as the benchmark leaves out its reader.
        return {SECONDS: sum(c.latency_s for c in record.tool_calls)}

    def tasks(self, q: Question, answer: str) -> dict[str, ProtocolTask]:
        name = _eval_name(q)
        final = boxed_answer(answer)
        gold = q.ground_truth.canonical_answer
        if name not in JUDGED_FUNCTIONS or is_unknown(final) or not gold.strip():
            return {}
        pid = _JUDGE_PROMPT[name]
        prompt = self.prompts[pid].format(question=q.meta.get("raw_question") or q.prompt,
                                     reference=gold, response=answer, final=final or answer)
        return {ACCURACY: ProtocolTask(pid, prompt, max_tokens=JUDGE_MAX_TOKENS)}

    def parse(self, prompt_id: str, text: str) -> float | None:
        return parse_label(text)

    def combine(self, q: Question, answer: str, values: Mapping[str, float | None]
                ) -> dict[str, float | None]:
        if ACCURACY not in values:
            return {}
        acc = values[ACCURACY]
        return {ACCURACY: acc, WRONG: None if acc is None else 1.0 - acc}

    def group_mean(self, values: list[float | None]) -> float | None:
        return _strict_mean(values)

    def overall(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                ) -> dict[str, float | None]:
        def acc(keep: Any) -> float | None:
            return _strict_mean([m.get(ACCURACY) for g, m in rows if keep(g, m)])

        out: dict[str, float | None] = {
            ACCURACY: acc(lambda g, m: True),
            "lme_v2_accuracy_non_premise": acc(lambda g, m: m.get("lme_v2_premise") == 0.0),
            "lme_v2_accuracy_premise": acc(lambda g, m: m.get("lme_v2_premise") == 1.0),
            "lme_v2_accuracy_text_only": acc(lambda g, m: m.get("lme_v2_image") == 0.0),
            "lme_v2_unknown_rate": _strict_mean([m.get(UNKNOWN) for _, m in rows]),
            SECONDS: _strict_mean([m.get(SECONDS) for _, m in rows]),
        }
        for ability, cats in ABILITIES.items():
            out[f"lme_v2_{ability}"] = acc(lambda g, m, cats=cats: g in cats)
        out.update(self._frontier(rows, out[ACCURACY], out[SECONDS]))
        return out

    def _frontier(self, rows: Sequence[tuple[str, Mapping[str, float | None]]],
                  accuracy: float | None, seconds: float | None) -> dict[str, float | None]:
        """LAFS of the reference frontier with this system added, and the gain; unknown
        unless every question is of one released tier and accuracy and latency are known."""
        tiers = [t for t in TIERS if rows and all(m.get(f"lme_v2_tier_{t}") == 1.0
                                                  for _, m in rows)]
        if len(tiers) != 1 or accuracy is None or seconds is None:
            return {"lme_v2_lafs": None, "lme_v2_lafs_gain": None}
        ref = REFERENCE_FRONTIER[tiers[0]]
        mine = [Point("this system", accuracy * 100, seconds)]
        return {"lme_v2_lafs": lafs([*ref, *mine], *LATENCY_WINDOW),
                "lme_v2_lafs_gain": lafs_gain(ref, mine, *LATENCY_WINDOW)}
