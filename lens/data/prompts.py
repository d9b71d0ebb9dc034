"""Prompt templates. Their hash is part of a run's condition: change one, and results are no
longer comparable with runs made before."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Mapping
from datetime import datetime

from lens.core import plugins

AGENT_SYSTEM_PROMPT = """\
You answer questions about a stream of records (logs, reports, notes) that a memory system has \
stored. You cannot see the records directly: use the tools to search the memory and retrieve \
records, then answer.
Rules:
- Base every statement on records you retrieved; do not use outside knowledge.
- Cite the records you rely on by their ref id in square brackets, e.g. [ep_012].
- If the records do not support an answer, say so plainly.
- When you are done, give your final answer (no tool call)."""

# The question as the agent's first user message when "now" is known (the question's asked_at,
# else its checkpoint's time): the date first, as LongMemEval's reader prompt gives it, so that
# "how many days ago" and "last Saturday" have a reference.
QUESTION_WITH_DATE = "Current date: {date}\n\n{question}"
# The line's own prefix, for a reader (the scripted policy) that separates date and question.
CURRENT_DATE_PREFIX = "Current date: "
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def format_now(now: datetime) -> str:
    """"2023/05/30 (Tue) 23:40", LongMemEval's date form (the weekday in English whatever the
    locale); the time as given, without its zone."""
    return f"{now:%Y/%m/%d} ({_WEEKDAYS[now.weekday()]}) {now:%H:%M}"


def question_message(prompt: str, now: datetime | None) -> str:
    """The agent's first user message: the question, after the current date when known."""
    if now is None:
        return prompt
    return QUESTION_WITH_DATE.format(date=format_now(now), question=prompt)


# Sent once when the agent ends its session with an empty message: some servers' tool-calling
# templates return nothing after a tool result, and a silent session is not an answer.
EMPTY_ANSWER_REMINDER = (
    "Your last reply was empty. Give your final answer to the question now, as text, citing "
    "the records you rely on by their ref id in square brackets. If the records do not "
    "support an answer, say so plainly.")

# Sent once when the agent answers before it has made ``min_tool_rounds`` rounds of tool calls
# and the server cannot be made to call a tool (no ``tool_choice: required``): some models
# narrate the calls they mean to make instead of making them.
TOOL_REMINDER = (
    "You answered without consulting the memory. Call one of the tools now (for example "
    "memory_search with a short query); your answer must rest on the records the tools "
    "return, cited by their ref id in square brackets.")

TOOL_DESCRIPTIONS = {
    "memory_search": "Search the memory. Returns matching records with their ref_id and a "
    "snippet of text.",
    "memory_retrieve": "Retrieve the full text of one record by its ref_id.",
    "memory_capabilities": "Describe what this memory system supports (search modes, filters, "
    "result limits, extra tools).",
}

_extra_templates: dict[str, str] = {}


def register_template(name: str, text: str) -> None:
    """Judges and scenarios register their templates so the condition hash covers them."""
    _extra_templates[name] = text


# lens's own modules that register templates when imported. Importing them all here makes the
# hash the same whatever else the process happened to import first.
_TEMPLATE_MODULES = ("lens.scoring.judging.judge", "lens.models.local_prompt", "lens.data.standing")


def plugin_templates() -> dict[str, str]:
    """Templates declared in the ``lens.prompt_templates`` entry-point group."""
    found: dict[str, str] = {}
    for name, target in plugins.targets(plugins.PROMPT_TEMPLATES).items():
        try:
            obj = plugins.load_target(target)
        except (ImportError, AttributeError) as exc:
            raise RuntimeError(f"prompt template plugin {name!r} ({target}): {exc}") from exc
        templates = obj() if callable(obj) else obj
        if not isinstance(templates, Mapping):
            raise RuntimeError(f"prompt template plugin {name!r} ({target}) must give a mapping "
                               "{template name: text}")
        found.update({str(k): str(v) for k, v in templates.items()})
    return found


def all_templates() -> dict[str, str]:
    """Every template the prompts hash covers, by name: the agent's, the judge's, the
    scenarios' and the plugins'."""
    for module in _TEMPLATE_MODULES:
        importlib.import_module(module)
    return {"agent_system": AGENT_SYSTEM_PROMPT, "empty_answer_reminder": EMPTY_ANSWER_REMINDER,
            "tool_reminder": TOOL_REMINDER, "question_with_date": QUESTION_WITH_DATE,
            **TOOL_DESCRIPTIONS, **_extra_templates,
            **plugin_templates()}


def prompts_hash() -> str:
    h = hashlib.sha256()
    parts = all_templates()
    for name in sorted(parts):
        h.update(name.encode() + b"\0" + parts[name].encode() + b"\0")
    return h.hexdigest()
