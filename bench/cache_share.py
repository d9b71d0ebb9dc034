"""How much of the agent's prompt a provider's prompt cache could serve, on recorded runs: a
count over the transcripts, not a timing.

    python -m bench.cache_share RUN_DIR [RUN_DIR ...]

For every model call of every answered question, the prompt is the transcript before that call.
Counted per arm, in lens's token estimate (lens.core.tokens, as the scripted agent reports
usage):

- ``stable prefix``: the system prompt (with the standing context) and the tool definitions,
  the same for every question of a unit: what lens marks with Anthropic's cache breakpoints
  (lens.models.litellm_backend) and what OpenAI's automatic cache matches first;
- ``session prefix``: everything an earlier call of the same session already sent (its prompt
  and reply), which a breakpoint on the conversation's last message would let a later call
  read from the cache;
- ``cacheable``: of the prompt with tool definitions, the part a later call could read from
  Anthropic's cache with lens's breakpoints (tools, system prompt, the last tool result), where
  that prefix reaches Anthropic's shortest cacheable prompt (1,024 tokens; 2,048 for the Haiku
  models): a shorter prefix is never cached, breakpoint or not.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from lens.core.tokens import estimate_tokens
from lens.data.prompts import TOOL_DESCRIPTIONS
from lens.models.base import Message
from lens.runs.store import RunStore

ANTHROPIC_MIN_CACHEABLE = 1024
# A hosted model counts each tool's name, description and JSON schema in the prompt.
TOOL_SCHEMA_TOKENS = 40


def _tokens(m: Message) -> int:
    return estimate_tokens(m.content) + sum(estimate_tokens(c.arguments) for c in m.tool_calls)


def tool_tokens() -> int:
    return sum(estimate_tokens(n) + estimate_tokens(d) + TOOL_SCHEMA_TOKENS
               for n, d in TOOL_DESCRIPTIONS.items())


def shares(run_dir: Path) -> dict[str, dict[str, float]]:
    """Per arm: prompt tokens, stable-prefix and session-prefix tokens, with and without the
    tool definitions a hosted model counts, and the mean stable prefix per call."""
    store = RunStore.open(run_dir)
    try:
        records = store.load_records()
    finally:
        store.close()
    tools = tool_tokens()
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in records:
        t = r.transcript
        if not t:
            continue
        arm = out[r.adapter]
        # Each assistant message ends one call; its prompt is everything before it.
        sent_before = 0
        for i, m in enumerate(t):
            if m.role != "assistant":
                continue
            prompt = t[:i]
            stable = sum(_tokens(x) for x in prompt if x.role == "system")
            total = sum(_tokens(x) for x in prompt)
            arm["calls"] += 1
            arm["prompt"] += total
            arm["stable"] += stable
            arm["session"] += max(0, sent_before - stable)
            # What Anthropic would cache: a prefix up to a breakpoint of at least its minimum
            # (tool definitions included, as a hosted model counts them).
            reusable = max(stable, sent_before) + tools
            if reusable >= ANTHROPIC_MIN_CACHEABLE:
                arm["cacheable"] += reusable
            arm["prompt_with_tools"] += total + tools
            arm["stable_with_tools"] += stable + tools
            sent_before = total + _tokens(m)
    return {a: dict(v) for a, v in out.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path)
    args = p.parse_args()
    print("| run | arm | calls | prompt tokens | stable prefix | + session prefix | "
          "stable prefix, with tool definitions | mean stable prefix per call (with tools) | "
          "cacheable at Anthropic's 1,024-token minimum |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in args.runs:
        for arm, v in shares(run).items():
            calls = v["calls"] or 1
            mean = v["stable_with_tools"] / calls
            print(f"| {run.name} | {arm} | {v['calls']:.0f} | {v['prompt']:,.0f} | "
                  f"{v['stable'] / v['prompt']:.1%} | "
                  f"{(v['stable'] + v['session']) / v['prompt']:.1%} | "
                  f"{v['stable_with_tools'] / v['prompt_with_tools']:.1%} | "
                  f"{mean:,.0f} tokens"
                  f"{'' if mean >= ANTHROPIC_MIN_CACHEABLE else ' (below 1,024: not cached)'} | "
                  f"{v.get('cacheable', 0.0) / v['prompt_with_tools']:.1%} |")


if __name__ == "__main__":
    main()
