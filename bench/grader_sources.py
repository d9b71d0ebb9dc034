"""Third-party graded answers for measuring fact graders, one loader per source.

Each source is a folder beside the project (never in it: their licences differ and some have
none). Every loader gives the same rows: one (question, fact, answer) with the source judge's
grade of it (1, 0.5 or 0) and, where the source graded the same answer twice, the second
judge's grade.

- ``lens-v2``: the LENS benchmark's second version, real agents' answers graded fact by fact
  (the ``lens-v2-grades`` folder of the published scopes beside the project:
  ``grading_tasks.jsonl`` + ``claude_scores.jsonl``).
- ``mab-longmemeval`` and ``mab-ruler-qa``: MemoryAgentBench answers of a memory agent on
  LongMemEval_s and RULER QA questions, each judged right or wrong by gpt-4o and again by gpt-5
  (``judge4o_results_*.jsonl`` and ``judge_results_*.jsonl``).
- ``zep-locomo``: Zep's LoCoMo answers graded CORRECT/WRONG by Zep's own judge (getzep/zep-papers
  ``zep_locomo_grades.json``, 1,540 answers; CC BY-NC-SA: read beside the project, never
  copied into it).
- ``memobase-locomo``: Memobase's LoCoMo answers with the mem0 evaluation's LLM judge score
  ``llm_score`` (0/1), two runs (``memobase_eval_*.json``); where both runs gave the very same
  response to a question, the second run's score is the second judge's.

The answer-level sources have no key facts: their gold answer is the one fact, so a grader's
fact recall on an answer is its grade of the gold, and the grader calls an answer correct when
that recall is 0.5 or more (one fact: when it grades the gold present).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _beside(*parts: str) -> Path:
    """A folder beside the checkout (or beside the folder of worktrees it sits in)."""
    candidates = [base.joinpath(*parts) for base in (ROOT.parent, ROOT.parent.parent)]
    return next((c for c in candidates if c.is_dir()), candidates[0])


SOURCES_DIR = _beside("thirdparty", "grader-sources")
LENS_V2_DIR = _beside("shared", "lens-v2-grades")
ZEP_DIR = _beside("thirdparty", "zep-locomo")
# Memobase's published folder as laid beside the project (memodb-io/memobase
# docs/experiments/locomo-benchmark), when the grader-sources folder has no copy.
MEMOBASE_DIR = _beside("thirdparty", "memobase-locomo", "fixture", "memobase")


@dataclass(frozen=True)
class GradedFact:
    source: str
    id: str
    answer_id: str
    question: str
    fact: str
    answer: str
    label: float
    # The same answer's grade by a second judge, when the source has one.
    label2: float | None = None
    # Other accepted forms of the fact (a gold answer given several ways: "Seine or Epte"):
    # a grader credits the fact when it finds any of them.
    alternatives: tuple[str, ...] = ()

    def forms(self) -> tuple[str, ...]:
        return (self.fact, *self.alternatives)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _golds(value: object) -> list[str]:
    """The accepted forms of a gold answer, each once ("Seine or Epte" is two)."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError, SyntaxError):
            value = ast.literal_eval(value)
    values = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    forms = [f.strip() for v in values for f in v.split(" or ")]
    return list(dict.fromkeys(f for f in forms if f)) or values


def _truth(value: object) -> float:
    return 1.0 if value is True or str(value).strip().lower() in ("true", "1") else 0.0


def _question(prompt: str) -> str:
    # MemoryAgentBench prompts carry the date line before the question itself.
    marker = "Now Answer the Question:"
    return prompt.split(marker, 1)[1].strip() if marker in prompt else prompt.strip()


def load_lens_v2(folder: Path = LENS_V2_DIR) -> list[GradedFact]:
    from bench.fact_grading import load_pairs

    return [GradedFact("lens-v2", r["id"], r["answer_id"], r["question"], r["fact"],
                       r["answer"], float(r["label"])) for r in load_pairs(folder)]


def lens_v2_scope(answer_id: str) -> str:
    """The LENS v2 scope of an answer: its grade id reads ``grade-SCOPE-POLICY-QUESTION``."""
    return answer_id.split("-")[1]


def load_mab(folder: Path, part: str) -> list[GradedFact]:
    """``part``: the file stem after the judge prefix, e.g. ``longmemeval_s__replay_full``."""
    first = _jsonl(folder / f"judge4o_results_{part}.jsonl")
    second_path = folder / f"judge_results_{part}.jsonl"
    by_answer = {(_question(r["prompt"]), r["answer"]): r
                 for r in (_jsonl(second_path) if second_path.is_file() else [])}
    out = []
    for r in first:
        if r.get("judge_correct") is None or r.get("answer") is None:
            continue
        question = _question(r["prompt"])
        other = by_answer.get((question, r["answer"]))
        golds = _golds(r["golds"])
        out.append(GradedFact(
            f"mab-{_mab_name(part)}", r["qa_pair_id"], r["qa_pair_id"], question,
            golds[0], str(r["answer"]), _truth(r["judge_correct"]),
            _truth(other["judge_correct"]) if other and other.get("judge_correct") is not None
            else None, tuple(golds[1:])))
    return out


def _mab_name(part: str) -> str:
    return "longmemeval" if part.startswith("longmemeval") else "ruler-qa"


def load_memobase(folder: Path) -> list[GradedFact]:
    runs = sorted(folder.glob("memobase_eval_*.json"))
    if not runs:
        return []
    first = json.loads(runs[0].read_text(encoding="utf-8"))
    second: dict[tuple[str, str], float] = {}
    for path in runs[1:2]:
        for items in json.loads(path.read_text(encoding="utf-8")).values():
            for r in items:
                second[(r["question"], str(r["response"]))] = float(r["llm_score"])
    out = []
    for conv, items in first.items():
        for n, r in enumerate(items):
            rid = f"locomo-{conv}-{n}"
            answer = str(r["response"])
            out.append(GradedFact("memobase-locomo", rid, rid, r["question"], str(r["answer"]),
                                  answer, float(r["llm_score"]),
                                  second.get((r["question"], answer))))
    return out


def load_zep(folder: Path) -> list[GradedFact]:
    """Zep's graded LoCoMo answers; category 5 (adversarial: no gold answer) left out."""
    path = folder / "zep_locomo_grades.json"
    out = []
    for user, items in json.loads(path.read_text(encoding="utf-8")).items():
        for n, r in enumerate(items):
            if r.get("category") == 5:
                continue
            rid = f"zep-{user.rsplit('_', 1)[-1]}-{n}"
            out.append(GradedFact("zep-locomo", rid, rid, r["question"],
                                  str(r["golden_answer"]), str(r["answer"]),
                                  1.0 if r["grade"] else 0.0))
    return out


def hash_order(answer_ids: Iterable[str]) -> list[str]:
    """Answer ids, each once, in the order of a hash of the id: the same every run, and a
    prefix of it spreads over the source's scopes where its file lists one scope after
    another."""
    return sorted(set(answer_ids), key=lambda a: hashlib.sha256(a.encode()).hexdigest())


def sample(rows: list[GradedFact], n: int) -> list[GradedFact]:
    """At most ``n`` answers of a source, chosen by a hash of their ids (the same every run)."""
    answers = hash_order(r.answer_id for r in rows)
    keep = set(answers[:n]) if n else set(answers)
    return [r for r in rows if r.answer_id in keep]


def load_all(base: Path = SOURCES_DIR, lens_v2: Path = LENS_V2_DIR, zep: Path = ZEP_DIR,
             memobase_published: Path = MEMOBASE_DIR
             ) -> tuple[dict[str, list[GradedFact]], list[str]]:
    """Every source found, by name, and a line for each one missing (naming its path)."""
    found: dict[str, list[GradedFact]] = {}
    missing: list[str] = []
    if (lens_v2 / "grading_tasks.jsonl").is_file():
        found["lens-v2"] = load_lens_v2(lens_v2)
    else:
        missing.append(f"lens-v2: {lens_v2} is absent")
    mab = base / "mab"
    for part in ("longmemeval_s__replay_full", "ruler_qa1_197K_replay_full",
                 "ruler_qa2_421K_replay_full"):
        if (mab / f"judge4o_results_{part}.jsonl").is_file():
            for r in load_mab(mab, part):
                found.setdefault(r.source, []).append(r)
        else:
            missing.append(f"mab {part}: {mab / f'judge4o_results_{part}.jsonl'} is absent")
    memobase = base / "memobase-locomo"
    if not list(memobase.glob("memobase_eval_*.json")):
        memobase = memobase_published
    rows = load_memobase(memobase) if memobase.is_dir() else []
    if rows:
        found["memobase-locomo"] = rows
    else:
        missing.append(f"memobase-locomo: no memobase_eval_*.json in {base / 'memobase-locomo'}"
                       f" or {memobase_published}")
    if (zep / "zep_locomo_grades.json").is_file():
        found["zep-locomo"] = load_zep(zep)
    else:
        missing.append(f"zep-locomo: {zep / 'zep_locomo_grades.json'} is absent")
    return found, missing
