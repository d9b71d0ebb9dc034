"""The price of a run before it runs (``lens plan CONFIG``): calls, tokens and cost per role and
arm, from the dataset, the budget and the price map.

The agent's expected session is the one a tool-using agent needs at least: one search with the
question, one round retrieving the ``RETRIEVES`` best hits, one answer; each call re-sends the
conversation so far (the system prompt, the question, the tool results). Search results are the
adapter's hits (``max_results`` or ``n`` from its options, else ``DEFAULT_HITS``, never more
than the episodes ingested at the question's checkpoint), each a snippet of at most
``SNIPPET_CHARS`` of an episode; the floor (``null``) finds nothing and answers at the second
call. The worst case is the budget: ``max_turns`` calls and ``max_agent_tokens`` per question.
Sizes are counted as lens counts them (lens.core.tokens). A scripted agent counts the messages
only; a hosted model also counts its tool definitions, which are added for it.

The fixed reader (``agent.mode: fixed_reader``) makes one call per question: the reader prompt
with the history of its ``top_k`` hits (never more than the adapter's hits), cut where the
reader cuts it (``reader_cut``, the rule the run's condition records). Its worst case is one
call per question of the whole context window in (the model takes no more; the cut leaves the
answer's ``max_tokens`` and 1,000 tokens beside the history) and the answer's ``max_tokens``
out; when ``max_payload_bytes`` cuts the history, the history's bytes and the prompt's own text,
counted as lens counts them.

The judge (tier 2's position-swapped pair on every answered question, tier 3's on action
questions) is priced at list price and at the batch rate; sequential stopping (the config's
``stopping``) scales every arm by the share of scope blocks used: the whole run in the worst
case, the expected share at an assumed effect (lens.stats.sequential.expected_share).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from lens.core.tokens import CHARS_PER_TOKEN, estimate_tokens
from lens.data.config import AdapterConfig, AgentConfig, ModelConfig, RunConfig
from lens.data.dataset import Dataset, Question, QuestionType, Scope
from lens.data.prompts import AGENT_SYSTEM_PROMPT, TOOL_DESCRIPTIONS, question_message
from lens.data.reader_prompts import (
    DATE_FORMAT,
    DEFAULT_READING,
    DEFAULT_TOP_K,
    READER_TEMPLATES,
    SESSION_TEMPLATE,
    ReaderCut,
    load_reader_prompt,
    reader_cut,
    reader_prompt,
)
from lens.memory.oracle import evidence_episodes, is_oracle
from lens.models.pricing import Pricing, pricing_for, why_unpriced
from lens.stats.bounded import scopes_needed
from lens.stats.sequential import expected_share, family_alpha, fewest_blocks

# Hits a search returns when the adapter's options do not say.
DEFAULT_HITS = 10
# An episode's snippet in a search hit, at most (sqlite_fts's default); a retrieve returns the
# whole episode.
SNIPPET_CHARS = 600
# The JSON around each hit or document (ref id, score, metadata, quoting).
HIT_OVERHEAD_CHARS = 90
RETRIEVES = 2
# A final answer, in tokens, when the config sets no max_tokens; a tool call's arguments.
ANSWER_TOKENS = 120
TOOL_CALL_TOKENS = 12
# Adapters whose search finds nothing (the floor), by registered name; and those whose hits are
# the latest episodes, whole (lens.adapters.in_context).
EMPTY_SEARCH = frozenset({"null"})
LATEST_WHOLE = frozenset({"recency", "full_context"})
# full_context's defaults (lens.adapters.in_context).
FULL_CONTEXT_HITS = 200
FULL_CONTEXT_CHARS = 32_000
# The "Current date: …" line before the question.
DATE_LINE_TOKENS = 10
# An answer saying nothing was found.
NOTHING_FOUND_TOKENS = 20
# A judge call: its instructions (about this many tokens) plus the question, the reference
# and the answer; its verdict.
JUDGE_PROMPT_TOKENS = 450
JUDGE_VERDICT_TOKENS = 60
# The batch APIs (OpenAI's, Anthropic's message batches) charge half the list price.
BATCH_RATE = 0.5
# The effect assumed for the expected case of sequential stopping: the block difference's
# mean and spread across scopes (a clear win).
ASSUMED_DELTA = 0.15
ASSUMED_SD = 0.1


@dataclass
class Spend:
    """Calls and tokens (expected), and the cost when the model's price is known."""

    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    cost_usd: float | None = None

    @property
    def tokens(self) -> float:
        return self.prompt_tokens + self.completion_tokens

    def add(self, calls: float, prompt: float, completion: float) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens += completion

    def priced(self, pricing: Pricing | None, rate: float = 1.0) -> Spend:
        cost = None if pricing is None else rate * (
            self.prompt_tokens * pricing.input_per_mtok
            + self.completion_tokens * pricing.output_per_mtok) / 1_000_000
        return Spend(self.calls, self.prompt_tokens, self.completion_tokens, cost)

    def scaled(self, share: float) -> Spend:
        return Spend(self.calls * share, self.prompt_tokens * share,
                     self.completion_tokens * share,
                     None if self.cost_usd is None else self.cost_usd * share)


@dataclass
class ArmPlan:
    arm: str
    questions: int
    agent: Spend
    # The agent's worst case: the budget's max_turns calls and max_agent_tokens per question;
    # the fixed reader's: one call of the window in and max_tokens out per question.
    agent_worst: Spend
    judge: Spend | None
    judge_batch: Spend | None


@dataclass
class CostPlan:
    agent_model: str
    judge_model: str | None
    price_source: str | None
    arms: list[ArmPlan]
    blocks: int
    # Share of the blocks used with sequential stopping: expected (at the assumed effect) and
    # best; None without a ``stopping`` section. The worst case is always the whole run.
    stop_expected_share: float | None = None
    stop_best_share: float | None = None
    notes: list[str] = field(default_factory=list)
    # What bounds the worst case: the agent's budget, or the fixed reader's one call.
    worst_bound: str = "the budget"

    def total(self, role: str) -> Spend:
        out = Spend(0.0, 0.0, 0.0, 0.0)
        for arm in self.arms:
            part: Spend | None = getattr(arm, role)
            if part is None:
                continue
            out.add(part.calls, part.prompt_tokens, part.completion_tokens)
            out.cost_usd = None if out.cost_usd is None or part.cost_usd is None \
                else out.cost_usd + part.cost_usd
        return out

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(json.dumps(asdict(self)))
        return data


def _search_shape(adapter: AdapterConfig, scope: Scope, question: Question,
                  seen: list[int]) -> tuple[int, int, float]:
    """What one search returns for ``question``: (hits, characters of the hits' text, mean
    characters of a retrieved episode)."""
    opts = adapter.options
    if adapter.name in EMPTY_SEARCH or not seen:
        return 0, 0, 0.0
    if is_oracle(adapter):
        # Sizes by stream position: the scope may be an outline, its episodes without text.
        wanted = {e.episode_id for e in evidence_episodes(scope, question, len(seen))}
        evidence = [size for e, size in zip(scope.ordered_episodes(), seen, strict=False)
                    if e.episode_id in wanted]
        if not evidence:
            return 0, 0, 0.0
        return len(evidence), sum(evidence), sum(evidence) / len(evidence)
    if adapter.name == "full_context":
        hits = min(_int(opts.get("max_results"), FULL_CONTEXT_HITS), len(seen))
        text = min(sum(seen[-hits:]), _int(opts.get("max_chars"), FULL_CONTEXT_CHARS))
        return hits, text, sum(seen[-hits:]) / hits
    hits = min(_int(opts.get("max_results", opts.get("n")), DEFAULT_HITS), len(seen))
    if adapter.name in LATEST_WHOLE:
        latest = seen[-hits:]
        return hits, sum(latest), sum(latest) / hits
    mean = sum(seen) / len(seen)
    return hits, int(hits * min(mean, _int(opts.get("snippet_chars"), SNIPPET_CHARS))), mean


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _tool_tokens(model: ModelConfig) -> int:
    """Tool definitions, counted by a hosted model in every call's prompt."""
    if model.provider == "scripted":
        return 0
    return sum(estimate_tokens(name) + estimate_tokens(text) + 40
               for name, text in TOOL_DESCRIPTIONS.items())


def agent_session(config: RunConfig, adapter: AdapterConfig, scope: Scope, question: Question,
                  sizes: list[int]) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) of the expected session of one question."""
    base = (estimate_tokens(AGENT_SYSTEM_PROMPT)
            + estimate_tokens(question_message(question.prompt, None))
            + DATE_LINE_TOKENS + _tool_tokens(config.agent))
    answer = min(config.agent.max_tokens or ANSWER_TOKENS, ANSWER_TOKENS)
    hits, text, doc = _search_shape(adapter, scope, question,
                                    sizes[:question.checkpoint_after])
    if hits == 0:
        # A search that finds nothing, then the answer.
        return 2, base * 2 + TOOL_CALL_TOKENS + 5, TOOL_CALL_TOKENS + NOTHING_FOUND_TOKENS
    search = (text + hits * HIT_OVERHEAD_CHARS) // 4
    fetched = min(RETRIEVES, hits)
    docs = fetched * (doc + HIT_OVERHEAD_CHARS) // 4
    prompt_tokens = (base + (base + TOOL_CALL_TOKENS + search)
                     + (base + TOOL_CALL_TOKENS * 2 + search + docs))
    completion = TOOL_CALL_TOKENS * (1 + fetched) + answer
    return 3, int(prompt_tokens), int(completion)


def _reader_text(agent: AgentConfig) -> str:
    """The fixed reader's prompt template: a reader prompt file's text, or lens's wording."""
    if agent.reader_prompt_file is not None:
        return load_reader_prompt(agent.reader_prompt_file).template
    return READER_TEMPLATES[agent.reading or DEFAULT_READING]


# A session's header in the reader's history ("### Session N: / Session Date: ..."), in
# characters, beside its text.
SESSION_HEADER_CHARS = len(SESSION_TEMPLATE.format(
    n=DEFAULT_TOP_K, date=datetime(2000, 1, 1).strftime(DATE_FORMAT), text=""))


def _reader_frame(template: str, question: Question) -> int:
    """Characters of the reader's prompt without its history (with a "Current Date" line)."""
    prompt, _, _ = reader_prompt(question.prompt, datetime(2000, 1, 1), [], 0, "",
                                 template=template)
    return len(prompt)


def reader_session(config: RunConfig, adapter: AdapterConfig, scope: Scope, question: Question,
                   sizes: list[int], cut: ReaderCut, template: str) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) of the fixed reader's one call for
    ``question``: the prompt's own text and the history of its top_k hits, cut at ``cut``."""
    hits, text, _ = _search_shape(adapter, scope, question, sizes[:question.checkpoint_after])
    kept = min(hits, config.agent.top_k or DEFAULT_TOP_K)
    chars = (text * kept // hits if hits else 0) + kept * SESSION_HEADER_CHARS
    history = chars // CHARS_PER_TOKEN
    if cut.max_history_tokens is not None:
        history = min(history, cut.max_history_tokens)
    if cut.max_payload_bytes is not None:
        history = min(history, cut.max_payload_bytes // CHARS_PER_TOKEN)
    prompt = _reader_frame(template, question) // CHARS_PER_TOKEN + history
    return 1, prompt, min(cut.answer_tokens, ANSWER_TOKENS)


def reader_worst(question: Question, cut: ReaderCut, template: str) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) of the fixed reader's call for ``question`` at
    its most: the whole window in (or, cut in bytes, the history's bytes and the prompt's own
    text) and the answer's max_tokens out."""
    if cut.context_window is not None:
        return 1, cut.context_window, cut.answer_tokens
    chars = (cut.max_payload_bytes or 0) + _reader_frame(template, question)
    return 1, -(-chars // CHARS_PER_TOKEN), cut.answer_tokens


def _judge_calls(config: RunConfig, action: bool) -> int:
    if config.judge is None:
        return 0
    return 2 + (2 if action else 0)


def _pricing(model: ModelConfig) -> Pricing | None:
    if model.provider == "scripted" and model.price_input_per_mtok is None:
        # The scripted model calls nothing and costs nothing.
        return Pricing(0.0, 0.0, "scripted (free)")
    return pricing_for(model)


def plan_cost(config: RunConfig, dataset: Dataset) -> CostPlan:
    """The expected and worst-case spend of ``config`` on ``dataset``."""
    agent_price = _pricing(config.agent)
    judge_price = _pricing(config.judge) if config.judge is not None else None
    sizes = {s.scope_id: dataset.text_sizes(s.scope_id) for s in dataset.scopes}
    arms = [_arm_plan(config, adapter, dataset, sizes, (agent_price, judge_price))
            for adapter in config.adapters]
    plan = CostPlan(agent_model=config.agent.model,
                    judge_model=config.judge.model if config.judge else None,
                    price_source=agent_price.source if agent_price else None, arms=arms,
                    blocks=len(dataset.scopes))
    if config.agent.mode == "fixed_reader":
        plan.worst_bound = "one reader call a question"
        plan.notes.append(reader_note(reader_cut(config.agent)))
    _price_notes(plan, config, agent_price, judge_price)
    _stopping_notes(plan, config)
    if len(config.adapters) > 1 and plan.blocks:
        plan.notes.append(verdict_scopes_note(plan.blocks, len(config.adapters)))
    return plan


def _arm_plan(config: RunConfig, adapter: AdapterConfig, dataset: Dataset,
              sizes: dict[str, list[int]], prices: tuple[Pricing | None, Pricing | None]
              ) -> ArmPlan:
    """One arm's expected agent and judge spend over the dataset (``sizes``: each scope's text
    sizes), and its worst case, priced at the agent's and the judge's ``prices``."""
    agent_price, judge_price = prices
    budget = config.agent.budget
    scopes = {s.scope_id: s for s in dataset.scopes}
    reader = config.agent.mode == "fixed_reader"
    cut = reader_cut(config.agent)
    template = _reader_text(config.agent) if reader else ""
    agent = Spend()
    judge = Spend()
    n = len(dataset.questions) * config.repeats
    # The budget bounds the tokens of a session, prompt and completion together; priced
    # at the input rate. The fixed reader's one call is bounded by its window instead.
    worst = Spend() if reader else Spend(n * budget.max_turns, n * budget.max_agent_tokens, 0.0)
    for q in dataset.questions:
        scope, seen = scopes[q.scope_id], sizes[q.scope_id]
        session = (reader_session(config, adapter, scope, q, seen, cut, template) if reader
                   else agent_session(config, adapter, scope, q, seen))
        agent.add(*(part * config.repeats for part in session))
        if reader:
            worst.add(*(part * config.repeats for part in reader_worst(q, cut, template)))
        jc = _judge_calls(config, q.question_type == QuestionType.ACTION_RECOMMENDATION)
        if jc:
            reference = sum(estimate_tokens(f) for f in q.ground_truth.key_facts) \
                + estimate_tokens(q.ground_truth.canonical_answer or "")
            per = JUDGE_PROMPT_TOKENS + estimate_tokens(q.prompt) + reference \
                + ANSWER_TOKENS
            judge.add(jc * config.repeats, jc * per * config.repeats,
                      jc * JUDGE_VERDICT_TOKENS * config.repeats)
    return ArmPlan(
        arm=adapter.display, questions=n, agent=agent.priced(agent_price),
        agent_worst=worst.priced(agent_price),
        judge=judge.priced(judge_price) if config.judge is not None else None,
        judge_batch=judge.priced(judge_price, BATCH_RATE)
        if config.judge is not None else None)


def reader_note(cut: ReaderCut) -> str:
    """The fixed reader's worst case in words: one call a question, and what bounds it."""
    if cut.context_window is not None:
        return (f"fixed reader: one call a question, at most {cut.context_window:,} tokens in "
                f"(the context window, {cut.window_source}; the history is cut at "
                f"{cut.max_history_tokens or 0:,} tokens, the window less "
                f"{cut.answer_tokens:,} for the answer and {cut.margin_tokens or 0:,}) and "
                f"{cut.answer_tokens:,} out")
    return (f"fixed reader: one call a question, at most the history's "
            f"{cut.max_payload_bytes or 0:,} bytes (agent.budget.max_payload_bytes) and the "
            f"prompt's own text in, counted at {CHARS_PER_TOKEN} characters a token, and "
            f"{cut.answer_tokens:,} out")


def _price_notes(plan: CostPlan, config: RunConfig, agent_price: Pricing | None,
                 judge_price: Pricing | None) -> None:
    """Notes on a model without a price, and on a judge priced from another source."""
    if agent_price is None:
        plan.notes.append(f"no price for the agent: its costs are unknown: "
                          f"{why_unpriced(config.agent)}")
    if config.judge is not None and judge_price is None:
        plan.notes.append(f"no price for the judge: its costs are unknown: "
                          f"{why_unpriced(config.judge)}")
    elif judge_price is not None and judge_price.source != (agent_price.source
                                                            if agent_price else None):
        plan.notes.append(f"the judge's price is from {judge_price.source}")


def _stopping_notes(plan: CostPlan, config: RunConfig) -> None:
    """With sequential stopping over several arms: the share of the run it is expected to save
    and at best, and a note saying so (or that it cannot save anything)."""
    s = config.stopping
    if s is None or len(config.adapters) <= 1 or not plan.blocks:
        return
    pairs = len(config.adapters) * (len(config.adapters) - 1) // 2
    plan.stop_expected_share = expected_share(
        ASSUMED_DELTA, ASSUMED_SD, plan.blocks, alpha=s.alpha, margin=s.margin,
        comparisons=pairs, look_every=s.look_every, method=s.method, simulations=200)
    best = fewest_blocks(alpha=s.alpha, comparisons=pairs, method=s.method)
    plan.stop_best_share = min(1.0, best / plan.blocks) if best else 1.0
    if best is None or best >= plan.blocks:
        plan.notes.append(
            f"sequential stopping cannot save anything on {plan.blocks} scope blocks: the "
            f"{s.method} sequence settles a pair at the earliest after "
            f"{best if best is not None else 'more than 200'} blocks (every block +0.5 "
            f"apart, α per pair {family_alpha(s.alpha, pairs):.3g}), so every block is "
            "answered; remove 'stopping' or use a dataset with more scopes")
    else:
        plan.notes.append(
            f"sequential stopping: expected {plan.stop_expected_share:.0%} of the run at "
            f"an assumed Δ {ASSUMED_DELTA} (spread {ASSUMED_SD} across scopes), at best "
            f"{plan.stop_best_share:.0%} (after {best} blocks); a tie or a close call uses "
            f"the whole run (worst case); α per pair {family_alpha(s.alpha, pairs):.3g}")


def verdict_scopes_note(blocks: int, arms: int, alpha: float = 0.05) -> str:
    """How many scopes a better/worse verdict needs (the bounded-mean test every one passes),
    beside the dataset's."""
    pairs = arms * (arms - 1) // 2
    each = family_alpha(alpha, pairs)
    need = ", ".join(f"{scopes_needed(d, alpha=each)} at |Δ| {d:g}" for d in (0.5, 0.2, 0.1))
    return (f"verdicts: a better/worse verdict at α={alpha:g} over {pairs} pair(s) needs at "
            f"least {need} (every scope differing alike; more with spread), and the dataset "
            f"has {blocks} scopes; below that lens says undecided")


def _money(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:,.4f}"


def _row(label: str, spend: Spend) -> str:
    return (f"  {label:<28} {spend.calls:>9,.0f} {spend.prompt_tokens:>13,.0f} "
            f"{spend.completion_tokens:>11,.0f} {_money(spend.cost_usd):>12}")


def cost_lines(plan: CostPlan) -> list[str]:
    """The plan as the terminal shows it."""
    head = f"  {'role / arm':<28} {'calls':>9} {'prompt tok':>13} {'output tok':>11} {'cost':>12}"
    lines = [f"Estimated spend (agent {plan.agent_model}"
             + (f", judge {plan.judge_model}" if plan.judge_model else "")
             + (f"; prices from {plan.price_source}" if plan.price_source else "") + "):", head]
    for arm in plan.arms:
        lines.append(_row(f"agent · {arm.arm}", arm.agent))
    for arm in plan.arms:
        if arm.judge is not None and arm.judge_batch is not None:
            lines.append(_row(f"judge · {arm.arm}", arm.judge))
            lines.append(_row(f"judge · {arm.arm} (batch)", arm.judge_batch))
    agent, judge = plan.total("agent"), plan.total("judge")
    lines.append(_row("total, judge at list price" if plan.judge_model else "total",
                      _sum(agent, judge)))
    if plan.judge_model:
        lines.append(_row("total, judge at batch price", _sum(agent, plan.total("judge_batch"))))
    # The budget bounds the agent; the judge judges every answered question whatever the
    # agent spent, so the worst case carries it at list price.
    lines.append(_row(f"worst case ({plan.worst_bound}"
                      + (", judge at list price)" if plan.judge_model else ")"),
                      _sum(plan.total("agent_worst"), judge)))
    if plan.stop_expected_share is not None:
        lines.append(_row("with stopping, expected",
                          _sum(agent, judge).scaled(plan.stop_expected_share)))
        lines.append(_row("with stopping, worst case", _sum(agent, judge)))
    lines.append("  memory systems' own model calls are not estimated")
    lines += [f"  note: {n}" for n in plan.notes]
    return lines


def _sum(a: Spend, b: Spend) -> Spend:
    cost = None if a.cost_usd is None or (b.calls and b.cost_usd is None) \
        else a.cost_usd + (b.cost_usd or 0.0)
    return Spend(a.calls + b.calls, a.prompt_tokens + b.prompt_tokens,
                 a.completion_tokens + b.completion_tokens, cost)
