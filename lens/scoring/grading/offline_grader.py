"""The offline fact grader (``local``): reads meaning without a hosted judge.

Each (question, key fact, answer) is settled by the cheapest check that can settle it:

1. an empty answer grades 0;
2. the phrase matcher (lens.scoring.text.facts) credits a fact it finds stated: 1; a fact
   whose words the answer restates (80% or more) but that the matcher rejects (denied,
   reversed, about another subject) is the matcher's: 0;
3. an answer that abstains ("I do not have enough information") grades 0: it states nothing;
   so does one that only lists three or more values and references ("CHG-5382, 224 ms,
   531 ms [e1]");
4. a long answer (``LONG_ANSWER_CHARS`` or more) that holds less than ``SUPPORT_AT`` of the
   fact's content words and figures anywhere grades 0 (``unsupported``): the small model,
   reading a long analysis of the fact's topic, says yes to facts it never states, and an
   answer that states a sentence-long fact in its own words still shares some of them. The
   gate only refuses; an answer that passes it is still the model's to credit, so stuffing an
   answer with the fact's words earns nothing on its own;
5. otherwise the local model (Qwen2.5-Coder-1.5B, llama.cpp) reads lens's per-fact judge
   prompt (judge_prompts.FACT_GRADE_TEMPLATE: does the answer state the key fact, yes /
   partly / no) and its probability that the reply's next word is ``yes`` is read, normalised
   over the three words, in one forward pass: ``P(yes) >= present_at`` grades 1 (the local
   judge's ``LOCAL_YES_AT``; ``long_present_at`` for a long answer the gate passed),
   ``P(yes) >= partial_at`` 0.5, anything else 0. The prompt is the one the local judge
   reads (lens.scoring.judging.judge.local_fact_prompt), so on a short answer the two give
   the same grade to the same fact.

The matcher's rules on figures, dates and identifiers (denied, reversed, bare lists, another
subject) still bind in lens's scoring: a fact the matcher vetoes earns no points whatever its
grade (lens.scoring.grading.fact_grader.VETO_REASONS). Model verdicts are kept as
``offline_fact_grade`` events in the run (re-scoring reads them back) and in lens's model cache
(another run grading the same fact of the same answer makes no model call); a call that fails
leaves its grade unknown (None), never 0.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lens.data.config import CacheConfig
from lens.models.base import Completion, ModelError
from lens.models.cache import ModelCache, default_cache_path
from lens.runs.store import RunStore
from lens.scoring.judging.judge import local_fact_prompt
from lens.scoring.judging.judge_prompts import (
    FACT_GRADE_CHOICES,
    LOCAL_YES_AT,
    judge_prompts_hash,
)
from lens.scoring.text.facts import AnswerText, match_fact
from lens.scoring.text.lexicon import content_stems, normalise

NAME = "local"
# The grader's version, recorded in the scoring condition: raise it when a grade can change.
# 2: lens's per-fact judge prompt read by P(yes), the matcher's misses read by the model.
# 3: a long answer sharing too few of the fact's words is not read by the model (unsupported).
VERSION = 3
# Part of every saved P(yes)'s key: raise it when what the model is asked changes. The decision
# made from P(yes) is applied after the lookup, so a change of decision alone (version 3) keeps
# the probabilities already paid for (about 11 s a fact on 2 cores).
PROBABILITY_VERSION = 2
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
EVENT = "offline_fact_grade"
CHOICES = FACT_GRADE_CHOICES
# The local judge's threshold on P(yes), chosen on LoCoMo's answers known to be wrong and
# right; measured on graded third-party sources, each left out (docs/scoring.md).
PRESENT_AT = LOCAL_YES_AT
# Equal to PRESENT_AT: the model's grades are 1 or 0 (a 1.5B model puts its doubt on "partly",
# which says nothing a grade could use); the band stays for users who set it.
PARTIAL_AT = LOCAL_YES_AT
# A fact whose words the answer restates this completely is the matcher's to decide.
RULED_COVERAGE = 0.8
# An answer this long (characters) must hold SUPPORT_AT of the fact's content words and figures
# before the model reads it, and the model's P(yes) of a long answer the gate passes credits at
# LONG_PRESENT_AT: on long answers the model's P(yes) of the facts its judge credited sat near or
# below PRESENT_AT (mean 0.59, the others 0.49), and the gate refuses much of what the lower
# threshold would wrongly let through.
# The three chosen together on lens-v2's development half (bench/grader_gate.py; the
# third-party sources' answers are shorter and read as before): docs/scoring.md, "Version 3".
LONG_ANSWER_CHARS = 1500
SUPPORT_AT = 0.4
LONG_PRESENT_AT = 0.45


def prompt_hash() -> str:
    # The judge prompts hash covers the template, the reply's start, the choices and the
    # threshold; the rendering is the local prompt's.
    return judge_prompts_hash()


def render(question: str, fact: str, answer: str) -> str:
    """The raw ChatML prompt: the model continues it with its verdict's first token (the
    local judge's prompt for the same fact, character for character)."""
    return local_fact_prompt(question, fact, answer)


class ChoiceModel(Protocol):
    """What the grader needs from a model: a name for cache keys, and the probabilities of a
    prompt's next token among a few choices (lens.models.llama_backend.LlamaCppClient)."""

    def choice_probabilities(self, prompt: str, choices: tuple[str, ...]) -> dict[str, float]:
        ...


@dataclass(frozen=True)
class FactTask:
    question: str
    fact: str
    answer: str


@dataclass(frozen=True)
class FactGrade:
    # 1, 0.5, 0, or None when the model call failed (unknown, never 0).
    grade: float | None
    # "empty", "matcher", "abstain", "no_claim", "unsupported", "model" or "error": which check
    # settled it.
    method: str
    # The model's probabilities of "yes" (the fact is present) and "partly".
    p_present: float | None = None
    p_partial: float | None = None
    reused: bool = False
    reason: str = ""

    def as_detail(self) -> dict[str, Any]:
        out: dict[str, Any] = {"grade": self.grade, "method": self.method}
        if self.p_present is not None:
            out["p_present"] = round(self.p_present, 4)
            out["p_partial"] = round(self.p_partial or 0.0, 4)
        if self.reason:
            out["reason"] = self.reason
        return out


# An answer that says it cannot answer. Checked only on short answers without figures: a real
# answer that mentions a gap in the records still states what they hold.
_ABSTAIN = re.compile(
    r"\b(?:(?:do not|don't|does not|doesn't|did not|didn't) (?:have|contain|include|mention|"
    r"provide|find)|(?:cannot|can't|could not|couldn't|unable to) (?:find|answer|determine|"
    r"tell|say|identify|access|locate)|lack (?:sufficient |enough |the )?(?:information|data|"
    r"access|evidence|context)|(?:no|insufficient|not enough) (?:relevant )?(?:information|data|"
    r"records?|evidence|details)|no access to|not (?:available|mentioned|found) in)\b", re.I)


def abstains(answer: str) -> bool:
    text = answer.strip()
    return (len(text) <= 400 and not re.search(r"\d", text)
            and _ABSTAIN.search(text) is not None)


_VALUE = re.compile(r"\S*\d\S*")
_REF = re.compile(r"\[[^\[\]]*\]")
_WORD = re.compile(r"[A-Za-z]{3,}")


def bare_list(answer: str) -> bool:
    """Three or more values and references listed with (almost) no words between them:
    "CHG-5382, 224 ms, 531 ms [e1]" asserts nothing about what they measure. A short answer
    that is one value or one date ("14 January 2022", "Drama.") is a claim, read by the
    model."""
    items = [part for part in re.split(r"[,;]", _REF.sub(" ", answer)) if _VALUE.search(part)]
    words = _WORD.findall(_VALUE.sub(" ", _REF.sub(" ", answer)))
    return len(items) >= 3 and len(words) < 3


_FIGURE = re.compile(r"\d+(?:[.,]\d+)?")


def support(fact: str, answer: str) -> float:
    """The share of the fact's content words (as crude stems) and figures that the answer holds
    anywhere, in any order (1.0 for a fact with none)."""
    words = set(content_stems(normalise(fact)))
    figures = set(_FIGURE.findall(fact))
    if not words and not figures:
        return 1.0
    held = len(words & set(content_stems(normalise(answer))))
    held += len(figures & set(_FIGURE.findall(answer)))
    return held / (len(words) + len(figures))


def long_answer(task: FactTask) -> bool:
    return len(task.answer) >= LONG_ANSWER_CHARS


def unsupported(task: FactTask) -> float | None:
    """The fact's :func:`support` in a long answer when it is below ``SUPPORT_AT``, else None
    (a short answer may state a fact in few words of its own: "Drama." for "drama and
    romance")."""
    if not long_answer(task):
        return None
    share = support(task.fact, task.answer)
    return share if share < SUPPORT_AT else None


def grade_from(p_present: float, present_at: float = PRESENT_AT,
               partial_at: float = PARTIAL_AT) -> float:
    if p_present >= present_at:
        return 1.0
    if p_present >= partial_at:
        return 0.5
    return 0.0


def cheap_grade(task: FactTask) -> FactGrade | None:
    """The grade the cheap checks settle (empty, the matcher's credit, a restated fact the
    matcher rejects, abstention, a bare list of values, a long answer without the fact's
    words), or None when the model must read the answer. Any other fact the matcher misses
    goes to the model, short golds, dates and figures included: on graded third-party answers
    the model, reading "August 2023" for "early August, 2023" or "Drama." for "drama and
    romance", agreed with the sources' judges where the matcher's misses did not
    (docs/scoring.md)."""
    if not task.answer.strip():
        return FactGrade(0.0, "empty")
    match = match_fact(task.fact, AnswerText(task.answer))
    if match.matched:
        return FactGrade(1.0, "matcher")
    if match.coverage >= RULED_COVERAGE:
        # The answer restates the fact's words and the matcher still rejects it: a denial,
        # another subject, the opposite direction. Its rules know these shapes; the model is
        # not asked to second-guess them.
        return FactGrade(0.0, "matcher", reason=f"the matcher rejects it: {match.reason}")
    if abstains(task.answer):
        return FactGrade(0.0, "abstain")
    if bare_list(task.answer):
        return FactGrade(0.0, "no_claim", reason="only values and references, no claim")
    if (share := unsupported(task)) is not None:
        return FactGrade(0.0, "unsupported", reason=f"a long answer holding {share:.0%} of the "
                                                    "fact's words and figures")
    return None


class OfflineGrader:
    """Grades key facts with the cheap checks and, for the rest, the local model."""

    name = NAME

    def __init__(self, model: ChoiceModel | None = None, *, model_name: str = DEFAULT_MODEL,
                 model_identity: str | None = None, n_threads: int | None = None,
                 n_ctx: int = 4096, present_at: float = PRESENT_AT,
                 partial_at: float = PARTIAL_AT, long_present_at: float = LONG_PRESENT_AT,
                 store: RunStore | None = None, cache: ModelCache | None = None) -> None:
        self.model_name = model_name
        self._model = model
        self._identity = model_identity
        self._n_threads = n_threads
        self._n_ctx = n_ctx
        self.present_at = present_at
        self.partial_at = partial_at
        self.long_present_at = long_present_at
        self.cache = cache
        self._cache_path: Path | None = None
        self.calls = 0
        self.reused = 0
        self.errors: list[str] = []
        self._known: dict[str, dict[str, float]] = {}
        self.store: RunStore | None = None
        if store is not None:
            self.attach(store)

    def attach(self, store: RunStore) -> None:
        """Keep model verdicts in ``store``'s events, and read back the ones already there."""
        self.store = store
        for e in store.events():
            if e.get("kind") == EVENT and isinstance(e.get("probabilities"), dict):
                self._known[str(e.get("key"))] = e["probabilities"]

    @classmethod
    def with_cache(cls, cache: CacheConfig | None = None, **kwargs: Any) -> OfflineGrader:
        """A grader on the default local model using the model cache a run's ``cache`` section
        names (lens's default cache when None; none when disabled). Close it with
        :meth:`close`."""
        cache = cache or CacheConfig()
        grader = cls(**kwargs)
        if cache.enabled:
            grader._cache_path = cache.path or default_cache_path()
        return grader

    def _model_cache(self) -> ModelCache | None:
        # Opened at the first model call: a scoring the cheap checks settle touches no file.
        if self.cache is None and self._cache_path is not None:
            self.cache = ModelCache(self._cache_path)
        return self.cache

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def _client(self) -> ChoiceModel:
        if self._model is None:
            from lens.data.config import ModelConfig
            from lens.models.llama_backend import LlamaCppClient

            options: dict[str, Any] = {"n_ctx": self._n_ctx}
            if self._n_threads:
                options["n_threads"] = self._n_threads
            client = LlamaCppClient(ModelConfig(model=f"llama_cpp/{self.model_name}",
                                                options=options))
            client.share_loaded()
            self._identity = str(client.cache_identity["model"])
            self._model = client
        return self._model

    @property
    def model_identity(self) -> str:
        if self._identity is None:
            from lens.models.local_models import ALIASES, LOCAL_MODELS

            spec = LOCAL_MODELS.get(ALIASES.get(self.model_name, self.model_name))
            if spec is not None:
                # The same identity the llama_cpp client gives, without assembling the model.
                self._identity = f"{spec.name}:{spec.sha256}"
            else:
                self._identity = str(self._client_identity())
        return self._identity

    def _client_identity(self) -> str:
        client = self._client()
        return self._identity or type(client).__name__

    def condition(self) -> dict[str, Any]:
        """What this grader's grades depend on: it enters the run's scoring condition."""
        return {"grader": NAME, "version": VERSION, "model": self.model_identity,
                "prompt_hash": prompt_hash(), "present_at": self.present_at,
                "partial_at": self.partial_at, "long_answer_chars": LONG_ANSWER_CHARS,
                "support_at": SUPPORT_AT, "long_present_at": self.long_present_at}

    def key(self, task: FactTask) -> str:
        payload = json.dumps([PROBABILITY_VERSION, self.model_identity, prompt_hash(),
                              task.question, task.fact, task.answer], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def _from_probabilities(self, task: FactTask, probs: dict[str, float],
                            reused: bool) -> FactGrade:
        p, q = float(probs["yes"]), float(probs["partly"])
        present_at = self.long_present_at if long_answer(task) else self.present_at
        return FactGrade(grade_from(p, present_at, min(self.partial_at, present_at)), "model",
                         p, q, reused)

    def _ask(self, task: FactTask, key: str) -> FactGrade:
        if key in self._known:
            self.reused += 1
            return self._from_probabilities(task, self._known[key], True)
        cache = self._model_cache()
        if cache is not None and (hit := cache.get(key)) is not None:
            self.reused += 1
            probs = json.loads(hit.text)
            self._remember(key, probs, cached=True)
            return self._from_probabilities(task, probs, True)
        try:
            probs = self._client().choice_probabilities(
                render(task.question, task.fact, task.answer), CHOICES)
        except ModelError as exc:
            if len(self.errors) < 5:
                self.errors.append(str(exc))
            return FactGrade(None, "error", reason=str(exc)[:300])
        self.calls += 1
        if cache is not None:
            cache.put(key, Completion(text=json.dumps(probs), provider="offline_grader",
                                               model=self.model_name, cost_usd=0.0))
        self._remember(key, probs, cached=False)
        return self._from_probabilities(task, probs, False)

    def _remember(self, key: str, probs: dict[str, float], *, cached: bool) -> None:
        self._known[key] = probs
        if self.store is not None:
            self.store.append_event(EVENT, key, model=self.model_identity,
                                    prompt_hash=prompt_hash(), probabilities=probs,
                                    cached=cached)

    def grade(self, tasks: Sequence[FactTask],
              progress: Callable[[int, int], None] | None = None) -> list[FactGrade]:
        """Grades in the order of ``tasks``. The model reads the facts of one question one
        after another, so the instructions and the question are evaluated once;
        ``progress(done, total)`` follows the model's work (the cheap checks are instant)."""
        out: list[FactGrade | None] = [cheap_grade(t) for t in tasks]
        todo = sorted((i for i, g in enumerate(out) if g is None),
                      key=lambda i: (tasks[i].question, tasks[i].fact, tasks[i].answer, i))
        for n, i in enumerate(todo, 1):
            out[i] = self._ask(tasks[i], self.key(tasks[i]))
            if progress is not None:
                progress(n, len(todo))
        return [g for g in out if g is not None]


def fact_tasks(question: str, facts: Iterable[str], answer: str) -> dict[str, FactTask]:
    """One task per distinct key fact of a question."""
    return {f: FactTask(question, f, answer) for f in dict.fromkeys(facts)}
