"""What a published scoring protocol is made of: per-question metrics (mechanical, or one judge
call each with the protocol's own prompt), the groups its tables report, and its overall
figures. A protocol's name and version enter the scoring condition."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import string
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens.core.errors import UserError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.promptfile import MAX_PROMPT_FILE_BYTES, read_prompt_text
from lens.core.redact import shown
from lens.core.yamlguard import YamlRefused, load_yaml
from lens.data.dataset import Question
from lens.models.base import CompletionRequest, Message


@dataclass(frozen=True)
class ProtocolTask:
    """One judge call, sent as the protocol's published script sends it (a single user
    message, its token limit, temperature 0)."""

    prompt_id: str
    prompt: str
    max_tokens: int | None = None
    schema: dict[str, Any] | None = None

    def key(self, model: str) -> str:
        payload = json.dumps([model, "protocol", self.prompt_id, self.prompt], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def request(self, key: str) -> CompletionRequest:
        return CompletionRequest(messages=[Message(role="user", content=self.prompt)],
                                 response_schema=self.schema, temperature=0.0,
                                 max_tokens=self.max_tokens,
                                 seed=int.from_bytes(bytes.fromhex(key[:8]), "big"),
                                 role="judge")


@dataclass(frozen=True)
class GroupStats:
    n: int
    values: dict[str, float | None]


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


def json_span(text: str) -> object | None:
    """What a judge reply holds from its first ``{`` to its last ``}``, parsed as JSON (as the
    published scripts read a reply); None when there is no such span or it is not JSON."""
    m = re.search(r"\{.*\}", text, re.S)
    if m is None:
        return None
    try:
        data: object = loads_guarded(m.group(0), what="a judge's reply")
    except JsonRefused:
        return None
    return data


def mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None




class Protocol(ABC):
    name: str
    version: int
    title: str
    # What the tables group by ("category", "question type") and in which order.
    group_label: str
    group_order: tuple[str, ...]
    # Per-question metrics, in table order.
    metrics: tuple[str, ...]
    # The judge model of the published numbers (None: the protocol needs no judge).
    published_judge: str | None
    # The prompt templates, by id; their text enters the condition through its hash.
    prompts: Mapping[str, str]
    source: str

    # Whether the judge's prompts can be read from a file (``scoring.judge_prompt_file``):
    # the protocols whose tasks read ``self.prompts``.
    takes_prompt_file: bool = False
    # The file the prompts were read from, and its sha256 (None: lens's own wording).
    prompt_file: tuple[str, str] | None = None

    def condition(self) -> dict[str, Any]:
        blob = json.dumps(sorted(self.prompts.items()), ensure_ascii=False)
        cond = {"name": self.name, "version": self.version,
                "prompts": sorted(self.prompts),
                "prompts_hash": hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]}
        if self.prompt_file is not None:
            cond["prompt_file"] = {"name": self.prompt_file[0], "sha256": self.prompt_file[1]}
        return cond

    def with_prompt_file(self, path: Path) -> Protocol:
        """This protocol with its judge prompts read from ``path`` (the official repository's
        prompt file, or a mapping of prompt ids to templates); a UserError naming the file and
        every problem when it cannot be read."""
        if not self.takes_prompt_file:
            raise UserError(f"scoring.judge_prompt_file: protocol {self.name} reads its judge "
                            "prompts from lens only; remove judge_prompt_file (protocols that "
                            "take one: longmemeval, longmemeval-v2, memoryagentbench)")
        text, raw = read_prompt_text(
            path, "scoring.judge_prompt_file",
            missing_fix="give the path of the official prompt file (see docs/scoring.md)",
            large_fix="give the official prompt file")
        prompts = self.read_prompt_file(path, text)
        problems = [f"{shown(pid)}: {why}" for pid, why in self._template_problems(prompts)]
        if problems:
            raise UserError(f"scoring.judge_prompt_file: {path}: " + "; ".join(problems))
        clone = copy.copy(self)
        clone.prompts = {**self.prompts, **prompts}
        clone.prompt_file = (path.name, hashlib.sha256(raw).hexdigest())
        return clone

    def read_prompt_file(self, path: Path, text: str) -> dict[str, str]:
        """Templates by prompt id from a prompt file. By default a JSON or YAML mapping of this
        protocol's prompt ids to templates with lens's placeholders; a protocol whose official
        code keeps its prompts in a source file reads that file here."""
        try:
            data = load_yaml(text, max_bytes=MAX_PROMPT_FILE_BYTES)
        except YamlRefused as exc:
            # Line and column only: the text may be anything (a credentials file by mistake).
            raise UserError(f"scoring.judge_prompt_file: {path}: not JSON or YAML ({exc})"
                            ) from None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise UserError(f"scoring.judge_prompt_file: {path}: expected a mapping of prompt "
                            f"ids to template texts (ids: {', '.join(sorted(self.prompts))})")
        return {str(k): v for k, v in data.items()}

    def _template_problems(self, prompts: Mapping[str, str]) -> list[tuple[str, str]]:
        out = []
        for pid, template in prompts.items():
            if pid not in self.prompts:
                out.append((pid, f"not a prompt of {self.name} (its prompts: "
                                 f"{', '.join(sorted(self.prompts))})"))
                continue
            want = _fields(self.prompts[pid])
            try:
                got = _fields(template)
            except ValueError as exc:
                out.append((pid, f"not a template ({exc})"))
                continue
            if got != want:
                out.append((pid, f"its placeholders are {sorted(got)}, lens fills "
                                 f"{sorted(want)}"))
        return out

    @abstractmethod
    def check(self, q: Question) -> str | None:
        """Why this question cannot be scored under the protocol (None: it can)."""

    @abstractmethod
    def group(self, q: Question) -> str: ...

    @abstractmethod
    def mechanical(self, q: Question, answer: str) -> dict[str, float | None]:
        """The metrics computed without a judge."""

    @abstractmethod
    def tasks(self, q: Question, answer: str) -> dict[str, ProtocolTask]:
        """The judge call behind each judged metric of this question."""

    @abstractmethod
    def parse(self, prompt_id: str, text: str) -> float | None:
        """A judge reply as the protocol reads it: 1.0, 0.0, or None when unreadable."""

    def applies(self, metric: str, q: Question) -> bool:
        return True

    def run_notes(self, manifest: Mapping[str, Any]) -> list[str]:
        """What the scoring notes say about the run itself under this protocol (its reader,
        say), from the run's manifest; nothing by default."""
        return []

    def score_notes(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                    ) -> list[str]:
        """What the scoring notes say about the scored questions, from (group, metrics) per
        question (what the official code would have dropped, say); nothing by default."""
        return []

    def record_metrics(self, q: Question, record: Any) -> dict[str, float | None]:
        """Metrics read from the run's record of the question (a
        :class:`lens.runs.records.QuestionRecord`: its timings, its tool calls) rather than its
        answer; none by default."""
        return {}

    def combine(self, q: Question, answer: str, values: Mapping[str, float | None]
                ) -> dict[str, float | None]:
        """The judged metrics from the values of this question's judge tasks, by task name
        (``answer`` is "" for an errored or empty answer, every value then 0). By default each
        task is the one metric of its name; a protocol that grades a question with several calls
        (one per rubric item, say) says here how they make its metrics."""
        return dict(values)

    @abstractmethod
    def overall(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                ) -> dict[str, float | None]:
        """The protocol's headline figures from (group, metrics) per scored question."""

    def by_group(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                 ) -> dict[str, GroupStats]:
        out: dict[str, GroupStats] = {}
        for g in [*self.group_order, *sorted({g for g, _ in rows} - set(self.group_order))]:
            mine = [m for gg, m in rows if gg == g]
            if mine:
                out[g] = GroupStats(len(mine), {k: self.group_mean([m.get(k) for m in mine])
                                                for k in self.metrics})
        return out

    def group_mean(self, values: list[float | None]) -> float | None:
        """A metric over a group's questions: the mean of the known values."""
        return mean(values)
