"""The MemoryAgentBench protocol: each sub-dataset's accuracy as the benchmark reports it.

Definitions (implemented here from MemoryAgentBench's ``utils/eval_other_utils.py``, its README's
metric table and ``llm_based_eval/``, Hu, Wang and McAuley, 2025):

* Normalisation: lower-case, punctuation removed, the words a/an/the removed, whitespace
  collapsed. Exact match: the normalised answer equals a normalised accepted answer. Substring
  exact match: a normalised accepted answer occurs in the normalised answer. Token F1: the
  harmonic mean of shared-token precision and recall, 0 when either side is (only) "yes", "no" or
  "noanswer" and the two differ. Each is the best over the accepted answers.
* Parsed answer: the text after the first "Answer:" on its line (case-insensitive), else the
  answer's first line. The in-context-learning and EventQA sub-datasets are scored on the parsed
  answer only; the others take, metric by metric, the better of the whole and the parsed answer.
* Accuracy (``mab_accuracy``), per the README: substring exact match for EventQA, RULER QA and
  FactConsolidation; exact match for DetectiveQA and the in-context-learning sets (strict; for ICL
  the "label:" the prompt asks for is taken off first, as the official prompt's primer is); the
  LongMemEval judge (yes/no, LongMemEval's per-type prompts) for ``longmemeval_*``, shown the
  whole list of accepted answers as ``llm_based_eval/longmem_qa_evaluate.py`` formats it (the
  Python list, ``['50']``); for ``infbench_sum`` the judged F1 of HELMET
  (``llm_based_eval/summarization_evaluate.py``): on the stripped summary, a fluency call, a
  key-point recall call (supported key points / key points) and a precision call against the
  first accepted answer (supported sentences / sentences), F1 = fluency x 2PR / (P + R), each
  reply read as the script's ``parse_json`` reads it. Recommendation (``recsys_*``, Recall@5
  against movie ids) needs the separate ``entity2id.json`` and is not scored: unknown.
* A summary whose judge reply does not parse (or whose call failed) is dropped from the official
  mean; lens leaves its accuracy unknown, which the mean skips the same way, and counts it
  (``mab_infbench_sum_unscored`` and a scoring note).
* Reported per sub-dataset (the mean over its questions), and per competency as the mean of its
  sub-datasets.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from lens.data.dataset import Question
from lens.scoring.protocols.base import Protocol, ProtocolTask, mean
from lens.scoring.protocols.longmemeval import PROMPTS as LME_PROMPTS
from lens.scoring.protocols.longmemeval import official_prompts

COMPETENCIES = ("Accurate_Retrieval", "Test_Time_Learning", "Long_Range_Understanding",
                "Conflict_Resolution")
SUBSTRING_FAMILIES = ("eventqa", "ruler_qa", "factconsolidation")
EXACT_FAMILIES = ("detective_qa", "icl")
PARSED_ONLY = ("icl", "eventqa")
# The competency of each sub-dataset, by the prefix of its name.
_COMPETENCY = {"eventqa": "Accurate_Retrieval", "ruler_qa": "Accurate_Retrieval",
               "longmemeval": "Accurate_Retrieval", "icl": "Test_Time_Learning",
               "recsys": "Test_Time_Learning", "infbench_sum": "Long_Range_Understanding",
               "detective_qa": "Long_Range_Understanding",
               "factconsolidation": "Conflict_Resolution"}
_SPECIAL = {"yes", "no", "noanswer"}
_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_LME_BY_TYPE = {"single-session-user": "longmemeval-factual@1",
                "single-session-assistant": "longmemeval-factual@1",
                "multi-session": "longmemeval-factual@1",
                "temporal-reasoning": "longmemeval-temporal@1",
                "knowledge-update": "longmemeval-update@1",
                "single-session-preference": "longmemeval-preference@1"}

FLUENCY_ID = "mab-summary-fluency@1"
FLUENCY_PROMPT = """\
Judge the fluency of the text below. Score 0 if it is incoherent, repetitive (even in different \
words), incomplete (for example only a heading) or gibberish; score 1 if it is coherent, not \
repetitive and grammatical (a cut-off last sentence is allowed).

Text: "{text}"

Reply with only JSON: {{"fluency": 0 | 1}}"""
RECALL_ID = "mab-summary-recall@1"
RECALL_PROMPT = """\
Judge a summary of a book against the key points of an expert summary. A key point is supported \
when the summary states it (in any words). Think step by step, then give the numbers of the \
supported key points and how many there are.

Key points:
{keypoints}

Summary: <start of summary>{summary}<end of summary>

End your reply with JSON: {{"supported_key_points": [<numbers>], "recall": <how many>}}"""
PRECISION_ID = "mab-summary-precision@1"
PRECISION_PROMPT = """\
Judge each sentence of a provided summary of a book against an expert summary. A sentence is \
supported when its main facts agree with the expert summary (minor details such as dates or \
names may be missing from it); it is not supported when its main facts are absent from or \
contradicted by the expert summary. Think step by step, then count.

Expert summary: <start of summary>{expert}<end of summary>

Provided summary: <start of summary>{summary}<end of summary>

End your reply with JSON: {{"precision": <supported sentences>, "sentence_count": <sentences>}}"""


_ICL_PRIMER = re.compile(r"^\s*label\s*:\s*", re.IGNORECASE)


def normalize(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(answer: str, gold: str) -> float:
    return float(normalize(answer) == normalize(gold))


def substring_match(answer: str, gold: str) -> float:
    return float(normalize(gold) in normalize(answer))


def token_f1(answer: str, gold: str) -> float:
    a, g = normalize(answer), normalize(gold)
    if (a in _SPECIAL or g in _SPECIAL) and a != g:
        return 0.0
    same = sum((Counter(a.split()) & Counter(g.split())).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(a.split()), same / len(g.split())
    return 2 * precision * recall / (precision + recall)


def parse_answer(text: str) -> str:
    m = re.search(r"(?:Answer:)(.*)(?:\n|$)", text, re.IGNORECASE)
    found = m.group(1) if m else text.split("\n", 1)[0]
    return re.sub(r"^Answer:", "", found.strip(), flags=re.IGNORECASE).strip()


def text_metrics(answer: str, golds: Sequence[str]) -> dict[str, float]:
    return {"mab_exact_match": max(exact_match(answer, g) for g in golds),
            "mab_substring_exact_match": max(substring_match(answer, g) for g in golds),
            "mab_f1": max(token_f1(answer, g) for g in golds)}


def judge_json(text: str) -> object | None:
    """A summary judge's reply as HELMET's ``parse_json`` reads it: the last ``{...}`` (shortest
    match) when it is JSON, else the last fenced ``json`` block when that is; None when neither
    is, or when the reply holds no ``{...}`` at all. An earlier well-formed object does not
    count: the script does not look for one."""
    objects = re.findall(r"\{.*?\}", text, re.S)
    if not objects:
        return None
    fenced = re.findall(r"(?:```json)(.+)(?:```)", text, re.S)
    for candidate in (objects[-1], *fenced[-1:]):
        try:
            parsed: object = json.loads(candidate)
            return parsed
        except (ValueError, RecursionError):
            continue
    return None


def _summary_f1(q: Question, values: Mapping[str, float | None]) -> float | None:
    """A summary's judged F1 as summarization_evaluate.py computes it: fluency times the F1
    of keypoint recall and precision; None when a judged part is unknown."""
    fluency, found, precision = (values.get("fluency"), values.get("recall"),
                                 values.get("precision"))
    if fluency is None or found is None or precision is None:
        return None
    keypoints = len(q.meta.get("keypoints") or [])
    recall = found / keypoints if keypoints else 0.0
    return (fluency * 2 * recall * precision / (recall + precision)
            if recall + precision > 0 else 0.0)


def _by_competency(per_source: Mapping[str, float | None]) -> dict[str, float | None]:
    """The mean of each competency's sources, for the competencies the rows have."""
    out: dict[str, float | None] = {}
    for comp in COMPETENCIES:
        mine = [v for g, v in per_source.items() if competency(g) == comp]
        if mine:
            out[f"mab_{comp.lower()}"] = mean(mine)
    return out


def _number(data: object, key: str) -> float | None:
    v = data.get(key) if isinstance(data, dict) else None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def competency(sub_dataset: str) -> str | None:
    return next((c for p, c in _COMPETENCY.items() if sub_dataset.startswith(p)), None)


def _family(q: Question) -> str:
    return str(q.meta.get("family") or "")


class MemoryAgentBenchProtocol(Protocol):
    name = "memoryagentbench"
    # 2: an ICL answer is scored after the "label:" primer its prompt asks for. 3: the
    # LongMemEval judge sees every accepted answer; summaries are judged stripped, their replies
    # read as the official parse_json reads them.
    version = 3
    title = "MemoryAgentBench"
    group_label = "sub-dataset"
    group_order = ()
    metrics = ("mab_accuracy", "mab_exact_match", "mab_substring_exact_match", "mab_f1",
               "mab_eventqa_recall")
    published_judge = "openai/gpt-4o"
    prompts: Mapping[str, str] = {**LME_PROMPTS, FLUENCY_ID: FLUENCY_PROMPT,
                                  RECALL_ID: RECALL_PROMPT, PRECISION_ID: PRECISION_PROMPT}
    source = ("MemoryAgentBench's utils/eval_other_utils.py, README metric table and "
              "llm_based_eval/ (LongMemEval judge, HELMET summary judge)")
    takes_prompt_file = True

    def read_prompt_file(self, path: Path, text: str) -> dict[str, str]:
        """The official ``llm_based_eval/longmem_qa_evaluate.py`` (its ``get_anscheck_prompt``,
        the LongMemEval judge's templates), or a mapping of prompt ids."""
        if path.suffix != ".py":
            return super().read_prompt_file(path, text)
        return official_prompts(path, text)

    def check(self, q: Question) -> str | None:
        answers = q.meta.get("answers")
        if not _family(q) or not isinstance(answers, list) or not answers:
            return (f"question {q.question_id} has no MemoryAgentBench sub-dataset and answers "
                    "in meta.family / meta.answers (import the data with `lens datasets import "
                    "--format memoryagentbench`)")
        if _family(q) == "longmemeval" and q.meta.get("question_type") not in _LME_BY_TYPE:
            return (f"question {q.question_id}: a longmemeval question needs its LongMemEval "
                    "type in meta.question_type")
        return None

    def group(self, q: Question) -> str:
        return str(q.meta.get("sub_dataset"))

    def applies(self, metric: str, q: Question) -> bool:
        return metric != "mab_eventqa_recall" or _family(q) == "eventqa"

    def mechanical(self, q: Question, answer: str) -> dict[str, float | None]:
        fam = _family(q)
        golds = [str(a) for a in q.meta["answers"]]
        out: dict[str, float | None] = {"mab_eventqa_recall": None}
        if fam == "recsys":
            return {**out, "mab_accuracy": None, "mab_exact_match": None,
                    "mab_substring_exact_match": None, "mab_f1": None}
        parsed = parse_answer(answer)
        if fam == "icl":
            # The official prompt ends in a "label:" primer and scores what the model writes
            # after it; lens's prompt asks for "label: N", so the primer it asked for is taken
            # off before the same strict match.
            parsed = _ICL_PRIMER.sub("", parsed, count=1)
        if fam in PARSED_ONLY:
            metrics = text_metrics(parsed, golds)
        else:
            whole, part = text_metrics(answer, golds), text_metrics(parsed, golds)
            metrics = {k: max(whole[k], part[k]) for k in whole}
        out.update(metrics)
        if fam == "eventqa":
            # Every accepted element, lower-cased, inside the whole answer: 1, else 0.
            out["mab_eventqa_recall"] = float(all(g.lower() in answer.lower() for g in golds))
        if fam in SUBSTRING_FAMILIES:
            out["mab_accuracy"] = metrics["mab_substring_exact_match"]
        elif fam in EXACT_FAMILIES:
            out["mab_accuracy"] = metrics["mab_exact_match"]
        return out

    def tasks(self, q: Question, answer: str) -> dict[str, ProtocolTask]:
        fam = _family(q)
        raw = str(q.meta.get("raw_question") or q.prompt)
        golds = [str(a) for a in q.meta["answers"]]
        if fam == "longmemeval":
            qid = str(q.meta.get("question_id") or q.question_id)
            pid = ("longmemeval-abstention@1" if "_abs" in qid
                   else _LME_BY_TYPE[str(q.meta.get("question_type"))])
            # The official script formats the question's whole answer list into the prompt.
            return {"mab_accuracy": ProtocolTask(pid, self.prompts[pid].format(
                question=raw, gold=str(golds), answer=answer), max_tokens=10)}
        if fam == "infbench_sum":
            summary = answer.strip()
            keypoints = [str(k) for k in q.meta.get("keypoints") or []]
            listed = "\n".join(f"{i + 1}. {k}" for i, k in enumerate(keypoints))
            return {"fluency": ProtocolTask(FLUENCY_ID, self.prompts[FLUENCY_ID].format(
                        text=summary)),
                    "recall": ProtocolTask(RECALL_ID, self.prompts[RECALL_ID].format(
                        keypoints=listed, summary=summary)),
                    "precision": ProtocolTask(PRECISION_ID, self.prompts[PRECISION_ID].format(
                        expert=golds[0], summary=summary))}
        return {}

    def parse(self, prompt_id: str, text: str) -> float | None:
        if prompt_id in LME_PROMPTS:
            return 1.0 if "yes" in text.lower() else 0.0
        data = judge_json(text)
        if prompt_id == FLUENCY_ID:
            # Whatever number the reply gives multiplies the F1, as in the script.
            return _number(data, "fluency")
        if prompt_id == RECALL_ID:
            return _number(data, "recall")
        found, total = _number(data, "precision"), _number(data, "sentence_count")
        if found is None or total is None:
            return None
        return found / total if total > 0 else 0.0

    def combine(self, q: Question, answer: str, values: Mapping[str, float | None]
                ) -> dict[str, float | None]:
        if _family(q) != "infbench_sum":
            # Only a judged family has a judged accuracy; the others keep their mechanical one.
            return {k: v for k, v in values.items() if k == "mab_accuracy"}
        if not answer:
            return {"mab_accuracy": 0.0}
        return {"mab_accuracy": _summary_f1(q, values)}

    def score_notes(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                    ) -> list[str]:
        summaries = [m.get("mab_accuracy") for g, m in rows if g.startswith("infbench_sum")]
        unscored = sum(v is None for v in summaries)
        if not unscored:
            return []
        return [f"{unscored} of {len(summaries)} infbench_sum summaries have no judged F1 (a "
                "judge reply did not parse, a call failed, or no judge was given): their "
                "accuracy is unknown and left out of the mean, as the official "
                "summarization_evaluate.py drops them (mab_infbench_sum_unscored)"]

    def overall(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                ) -> dict[str, float | None]:
        per_source = {g: mean([m.get("mab_accuracy") for gg, m in rows if gg == g])
                      for g in dict.fromkeys(g for g, _ in rows)}
        out: dict[str, float | None] = {"mab_accuracy": mean([m.get("mab_accuracy")
                                                              for _, m in rows])}
        summaries = [m.get("mab_accuracy") for g, m in rows if g.startswith("infbench_sum")]
        if summaries:
            # The official script drops these from its mean: counted here, never silent.
            out["mab_infbench_sum_unscored"] = float(sum(v is None for v in summaries))
        out.update(_by_competency(per_source))
        return out
