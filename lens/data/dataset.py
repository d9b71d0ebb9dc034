"""The LENS dataset format: models, loader and validator.

A dataset is ``{version, scopes: [{scope_id, episodes: [...]}], questions: [...]}``. Episodes of a
scope are streamed in timestamp order; a question's ``checkpoint_after`` counts episodes of its
scope in that order. Ground truth stays in :class:`Question` and is never handed to an adapter or
to the agent: they receive :meth:`Episode.for_adapter` and :meth:`Question.for_agent`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import ijson
from ijson.common import ObjectBuilder
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)

from lens.core.errors import DatasetError, Problem
from lens.core.jsonguard import (
    MAX_JSON_DEPTH,
    STREAM_BUFFER,
    JsonRefused,
    TokenChunks,
)

# Files up to this size that hold a problem are read whole, so that every problem is listed with
# its JSON path; reading whole peaks at about five times the file (bytes, text, parsed objects).
# Larger files are only ever streamed (they are held once, as models, whatever their size) and
# report the first problem the stream meets.
MAX_WHOLE_FILE_BYTES = 64 * 1024 * 1024
# Caps that keep one hostile record from exhausting memory or a model's context downstream.
MAX_ID_CHARS = 200
MAX_EPISODE_CHARS = 2_000_000
MAX_PROMPT_CHARS = 20_000
MAX_ANSWER_CHARS = 20_000
MAX_FACT_CHARS = 2_000
MAX_FACTS = 200
MAX_REFS = 1_000
MAX_META_BYTES = 1024 * 1024
# Characters an id may not hold: ids name files and refs, "#" separates a chunk from its
# episode, and control characters would garble every report and terminal they reach.
_BAD_ID_CHARS = frozenset("/\\") | {chr(c) for c in range(32)} | {"\x7f"}


def _check_id(value: str) -> str:
    bad = sorted({c for c in value if c in _BAD_ID_CHARS})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise ValueError(f"ids may not contain {shown}: ids name files and refs; use '_' or '-'")
    if value != value.strip():
        raise ValueError("ids may not begin or end with spaces")
    return value


def _check_episode_id(value: str) -> str:
    if "#" in value:
        raise ValueError("episode ids may not contain '#': it separates an episode from a "
                         "chunk in refs ('ep_001#c0'), so this id would read as a chunk")
    return _check_id(value)


def _check_meta(value: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"))
    if size > MAX_META_BYTES:
        raise ValueError(f"meta is {size} bytes; the limit is {MAX_META_BYTES}")
    return value


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_check_id)]
EpisodeId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS),
                      AfterValidator(_check_episode_id)]
Ref = Annotated[str, Field(min_length=1, max_length=2 * MAX_ID_CHARS)]
Meta = Annotated[dict[str, Any], AfterValidator(_check_meta)]


class QuestionType(StrEnum):
    LONGITUDINAL = "longitudinal"
    NULL_HYPOTHESIS = "null_hypothesis"
    ACTION_RECOMMENDATION = "action_recommendation"
    NEGATIVE = "negative"
    PARAPHRASE = "paraphrase"
    TEMPORAL = "temporal"
    COUNTERFACTUAL = "counterfactual"
    DISTRACTOR_RESISTANCE = "distractor_resistance"
    SEVERITY_ASSESSMENT = "severity_assessment"
    EVIDENCE_SUFFICIENCY = "evidence_sufficiency"


SYNTHESIS_TYPES: frozenset[QuestionType] = frozenset(QuestionType) - {
    QuestionType.NULL_HYPOTHESIS
}


def parse_timestamp(value: str | datetime) -> datetime:
    """Parse an ISO-8601 timestamp; naive times are taken as UTC so all compare."""
    ts = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _timestamp(v: Any) -> datetime:
    """A dataset's timestamp field: an ISO-8601 string or a datetime."""
    if not isinstance(v, str | datetime):
        raise ValueError("must be an ISO-8601 timestamp string such as 2024-01-15T10:00:00")
    try:
        return parse_timestamp(v)
    except ValueError as exc:
        raise ValueError(
            f"{v!r} is not an ISO-8601 timestamp (use e.g. 2024-01-15T10:00:00)"
        ) from exc


class Episode(_Model):
    episode_id: EpisodeId
    scope_id: Id
    timestamp: datetime
    text: str = Field(max_length=MAX_EPISODE_CHARS)
    meta: Meta = Field(default_factory=dict)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _parse_ts(cls, v: Any) -> datetime:
        return _timestamp(v)

    def for_adapter(self) -> Episode:
        """The episode as a memory system may see it: scenario metadata removed."""
        return self.model_copy(update={"meta": {}})


# A conclusion's verdict: "yes" or "no", alone or before the claim it stands for
# ("no: DEP-4230 did not cause the rise in auth p99 latency").
_VERDICT = re.compile(r"^\s*(yes|no)\s*(?:[:.,;\u2014-]\s*(.*))?$", re.I | re.S)
# A key fact in subject form: what it is about, a colon, and one value with a digit (a figure,
# a date or an identifier): "auth p99 latency: 224 ms", "change that set off the rise: CHG-5382".
_SUBJECT_FORM = re.compile(r"^(?P<subject>[^:]*[A-Za-z][^:]*?)\s*:\s+(?P<value>[^:\s][^:]*)$")
MAX_VALUE_WORDS = 4


def parse_conclusion(text: str) -> tuple[str | None, str]:
    """(verdict, claim) of a ground-truth conclusion: the verdict is "yes", "no" or None (a
    claim without a verdict), the claim the words after it (may be empty)."""
    m = _VERDICT.match(text)
    if m:
        return m.group(1).lower(), (m.group(2) or "").strip()
    return None, text.strip()


def fact_subject(fact: str) -> tuple[str | None, str]:
    """(subject, value) of a key fact in subject form ("auth p99 latency: 224 ms"), else
    (None, fact). The form applies when the part after the last colon is one short value that
    holds a digit, so a finding written as a sentence is never split."""
    m = _SUBJECT_FORM.match(fact.strip())
    if not m:
        return None, fact
    value = m.group("value").strip()
    if not any(c.isdigit() for c in value) or len(value.split()) > MAX_VALUE_WORDS:
        return None, fact
    return m.group("subject").strip(), value


def _check_conclusion(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("the conclusion is blank; give the decisive claim (e.g. 'no: DEP-4230 "
                         "did not cause the rise') or leave the field out")
    return value


class GroundTruth(_Model):
    canonical_answer: str = Field(max_length=MAX_ANSWER_CHARS)
    required_evidence_refs: list[Ref] = Field(default_factory=list, max_length=MAX_REFS)
    key_facts: list[Annotated[str, Field(max_length=MAX_FACT_CHARS)]] = Field(
        default_factory=list, max_length=MAX_FACTS)
    # The decisive claim of the answer (yes/no, the direction of a change, the cause named or
    # ruled out, the action); optional. See docs/datasets.md.
    conclusion: Annotated[str | None, Field(max_length=MAX_FACT_CHARS),
                          AfterValidator(_check_conclusion)] = None

    @model_serializer(mode="wrap")
    def _drop_absent_conclusion(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Ground truth without a conclusion dumps (and hashes) as it always did.
        data = handler(self)
        if data.get("conclusion") is None:
            data.pop("conclusion", None)
        return data


class AgentQuestion(_Model):
    """What the agent is told about a question: its id, its prompt and when it is asked."""

    question_id: str
    prompt: str
    # "Now" for the agent: the question's ``asked_at``, else the time of the last episode
    # ingested before it; None when neither is known.
    now: datetime | None = None


class Question(_Model):
    question_id: Id
    scope_id: Id
    checkpoint_after: int = Field(ge=0)
    question_type: QuestionType
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    ground_truth: GroundTruth
    meta: Meta = Field(default_factory=dict)
    # When the question is asked (optional; naive times are UTC). The agent is told it as
    # "now"; without it, "now" is the time of the checkpoint's last episode.
    asked_at: datetime | None = None
    # Episodes dated after ``asked_at`` may be ingested before the question: a benchmark whose
    # official protocol gives the whole haystack whatever its dates (LongMemEval). Without it,
    # such an episode is a problem of the question (a future leak). See docs/datasets.md.
    allow_later_episodes: bool = False

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the prompt is blank; a question needs words to ask")
        return v

    @field_validator("asked_at", mode="before")
    @classmethod
    def _parse_asked_at(cls, v: Any) -> datetime | None:
        return None if v is None else _timestamp(v)

    @model_serializer(mode="wrap")
    def _drop_absent_timing(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A question without a time dumps (and hashes) as it always did.
        data = handler(self)
        if data.get("asked_at") is None:
            data.pop("asked_at", None)
        if not data.get("allow_later_episodes"):
            data.pop("allow_later_episodes", None)
        return data

    def for_agent(self, checkpoint_time: datetime | None = None) -> AgentQuestion:
        """The question as the agent sees it; ``checkpoint_time`` (the timestamp of the last
        episode ingested before it) is "now" when the question has no ``asked_at``."""
        return AgentQuestion(question_id=self.question_id, prompt=self.prompt,
                             now=self.asked_at or checkpoint_time)


class Scope(_Model):
    scope_id: Id
    episodes: list[Episode]
    meta: Meta = Field(default_factory=dict)

    def ordered_episodes(self) -> list[Episode]:
        """Episodes in stream order: by timestamp, ties kept in file order."""
        return sorted(self.episodes, key=lambda e: e.timestamp)


class Dataset(_Model):
    version: str = Field(default="0.1.0", max_length=50)
    dataset_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    scopes: list[Scope]
    questions: list[Question]
    meta: Meta = Field(default_factory=dict)

    def scope(self, scope_id: str) -> Scope:
        for s in self.scopes:
            if s.scope_id == scope_id:
                return s
        raise KeyError(scope_id)

    def questions_for(self, scope_id: str) -> list[Question]:
        return [q for q in self.questions if q.scope_id == scope_id]

    def content_hash(self) -> str:
        """sha256 of the dataset's canonical JSON (without its id: renaming a file must not
        change its hash), fed one scope and question at a time: the same bytes as dumping the
        whole dataset, without holding a second copy of a large one."""
        return _fields_hash({k: getattr(self, k) for k in type(self).model_fields
                             if k != "dataset_id"})

    def select_scopes(self, scope_ids: list[str]) -> Dataset:
        keep = set(scope_ids)
        return self.model_copy(
            update={
                "scopes": [s for s in self.scopes if s.scope_id in keep],
                "questions": [q for q in self.questions if q.scope_id in keep],
            }
        )


def _fields_hash(fields: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of ``fields``, a list item by item; a list may be given as a
    function that feeds its items, one at a time, to the function it is called with."""
    h = hashlib.sha256()
    for i, key in enumerate(sorted(fields)):
        h.update(("," if i else "{").encode() + _canon(key).encode() + b":")
        value = fields[key]
        if isinstance(value, list) or callable(value):
            count = 0

            def add(item: Any) -> None:
                nonlocal count
                dumped = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
                h.update((b"," if count else b"") + _canon(dumped).encode("utf-8"))
                count += 1

            h.update(b"[")
            if callable(value):
                value(add)
            else:
                for item in value:
                    add(item)
            h.update(b"]")
        else:
            h.update(_canon(value).encode("utf-8"))
    h.update(b"}")
    return h.hexdigest()


def file_content_hash(path: str | Path) -> str:
    """``load_dataset(path).content_hash()`` with one scope in memory at a time (the file is
    streamed twice), for checking a file against a recorded hash while a run holds its dataset.
    A file the stream cannot read is loaded, which raises the usual :class:`DatasetError`."""
    p = Path(path)
    try:
        head = _stream(p, on_scope=lambda scope: None)
        fields: dict[str, Any] = {k: getattr(head, k) for k in Dataset.model_fields
                                  if k != "dataset_id"}
        fields["scopes"] = lambda add: _stream(p, on_scope=add)
        return _fields_hash(fields)
    except (OSError, _StreamProblem):
        return load_dataset(p).content_hash()


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content_hash(obj: Any) -> str:
    """sha256 of the canonical JSON form of ``obj``."""
    return hashlib.sha256(_canon(obj).encode("utf-8")).hexdigest()


def json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _read_json(path: Path) -> Any:
    name = str(path)
    if not path.exists():
        raise DatasetError(f"{name}: dataset file not found; check the path (relative paths in a "
                           "config are resolved against the config file's folder)")
    if path.is_dir():
        raise DatasetError(f"{name}: is a folder; give the path of a LENS JSON file")
    if not path.is_file():
        # A FIFO would block the read for good, a device (/dev/zero) would never end.
        raise DatasetError(f"{name}: not a regular file; give the path of a LENS JSON file")
    size = path.stat().st_size
    if size > MAX_WHOLE_FILE_BYTES:
        # Reached only when the file could not be streamed either (an unreadable file).
        raise DatasetError(f"{name}: {size} bytes is over the {MAX_WHOLE_FILE_BYTES} byte limit "
                           "for reading a dataset file whole, and the file could not be read "
                           "as a stream; check that it is readable")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{name}: not UTF-8 text (byte {exc.start}); re-save the file as UTF-8"
        ) from None
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise DatasetError(f"{name}: JSON nested too deeply (a LENS dataset is a few levels "
                           "deep)") from None
    except ValueError as exc:
        # Raised by the hooks below, or by int() for a number over Python's 4,300-digit limit.
        message = str(exc) if isinstance(exc, _Refused) else (
            "a number is too long to read (over 4,300 digits)" if "digits" in str(exc)
            else f"unreadable value: {str(exc)[:200]}")
        raise DatasetError(f"{name}: invalid JSON: {message}") from None


class _Refused(ValueError):
    pass


class _TooDeep(_Refused):
    """Nesting past :data:`MAX_JSON_DEPTH`: refused at once, never read whole."""


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a number JSON allows; write a finite number or null")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = key if len(key) <= 80 else key[:80] + "…"
            raise _Refused(f"duplicate key {shown!r} in one object; a reader would keep only "
                           "one of the two values")
        out[key] = value
    return out


def validate_raw(data: Any, file: str) -> tuple[Dataset | None, list[Problem]]:
    """Validate parsed JSON; return the dataset (when it could be built) and every problem."""
    problems: list[Problem] = []
    if not isinstance(data, dict):
        return None, [Problem(file, "$", "the top level must be a JSON object with "
                                         "'scopes' and 'questions'")]
    try:
        ds = Dataset.model_validate(data)
    except ValidationError as exc:
        return None, _validation_problems(exc, file)
    problems.extend(semantic_problems(ds, file))
    return ds, problems


def _validation_problems(exc: ValidationError, file: str,
                         at: tuple[int | str, ...] = ()) -> list[Problem]:
    """pydantic's errors as problems, located from ``at`` (the JSON path of what was checked)."""
    problems = []
    for err in exc.errors():
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field; remove it or move it under 'meta'"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "enum":
            msg = f"{msg} (got {err.get('input')!r})"
        elif err["type"] == "string_unicode":
            msg = ("holds a lone surrogate escape (\\uD800 to \\uDFFF outside a pair): half "
                   "of a UTF-16 pair, not a character (UTF-8 cannot hold it); replace it with "
                   "the character meant or remove it")
        problems.append(Problem(file, json_path((*at, *err["loc"])),
                                msg.removeprefix("Value error, ")))
    return problems


def semantic_problems(ds: Dataset, file: str) -> list[Problem]:
    """Checks beyond field types: ids, membership, checkpoints and evidence refs."""
    problems: list[Problem] = []
    if not ds.scopes:
        problems.append(Problem(file, "$.scopes", "a dataset needs at least one scope"))
    if not ds.questions:
        problems.append(Problem(file, "$.questions", "a dataset needs at least one question; "
                                "without questions nothing is measured"))
    scope_counts = Counter(s.scope_id for s in ds.scopes)
    episode_scope: dict[str, str] = {}
    for si, scope in enumerate(ds.scopes):
        if scope_counts[scope.scope_id] > 1:
            problems.append(Problem(file, f"$.scopes[{si}].scope_id",
                                    f"duplicate scope_id {scope.scope_id!r}"))
        if not scope.episodes:
            problems.append(Problem(file, f"$.scopes[{si}].episodes",
                                    "a scope needs at least one episode"))
        for ei, ep in enumerate(scope.episodes):
            loc = f"$.scopes[{si}].episodes[{ei}]"
            if ep.scope_id != scope.scope_id:
                problems.append(Problem(file, f"{loc}.scope_id",
                                        f"episode says scope {ep.scope_id!r} but sits in scope "
                                        f"{scope.scope_id!r}"))
            if ep.episode_id in episode_scope:
                problems.append(Problem(file, f"{loc}.episode_id",
                                        f"duplicate episode_id {ep.episode_id!r}"))
            episode_scope[ep.episode_id] = scope.scope_id
    sizes = {s.scope_id: len(s.episodes) for s in ds.scopes}
    # 1-based position of each episode in its scope's stream order.
    position = {e.episode_id: i for s in ds.scopes
                for i, e in enumerate(s.ordered_episodes(), start=1)}
    stream_times = {s.scope_id: [e.timestamp for e in s.ordered_episodes()] for s in ds.scopes}
    q_counts = Counter(q.question_id for q in ds.questions)
    for qi, q in enumerate(ds.questions):
        loc = f"$.questions[{qi}]"
        if q_counts[q.question_id] > 1:
            problems.append(Problem(file, f"{loc}.question_id",
                                    f"duplicate question_id {q.question_id!r}"))
        if q.scope_id not in sizes:
            problems.append(Problem(file, f"{loc}.scope_id",
                                    f"no scope {q.scope_id!r} in this dataset"))
            continue
        if not 1 <= q.checkpoint_after <= sizes[q.scope_id]:
            problems.append(Problem(file, f"{loc}.checkpoint_after",
                                    f"{q.checkpoint_after} is outside 1..{sizes[q.scope_id]} "
                                    f"(the number of episodes in scope {q.scope_id!r})"))
        for ri, ref in enumerate(q.ground_truth.required_evidence_refs):
            base = ref.split("#", 1)[0]
            where = f"{loc}.ground_truth.required_evidence_refs[{ri}]"
            if episode_scope.get(base) != q.scope_id:
                problems.append(Problem(file, where,
                                        f"{ref!r} is not an episode of scope {q.scope_id!r}"))
            elif position[base] > q.checkpoint_after:
                problems.append(Problem(file, where,
                                        f"{ref!r} is episode {position[base]} of the stream, "
                                        f"after the question's checkpoint "
                                        f"({q.checkpoint_after}): it is not ingested yet when "
                                        "the question is asked"))
        if q.asked_at is not None and not q.allow_later_episodes:
            seen = stream_times[q.scope_id][:q.checkpoint_after]
            later = sum(1 for ts in seen if ts > q.asked_at)
            if later:
                problems.append(Problem(
                    file, f"{loc}.asked_at",
                    f"{later} of the {len(seen)} episodes ingested before the question are "
                    f"dated after its asked_at ({q.asked_at.isoformat()}): the memory would "
                    "hold records from the question's future; lower checkpoint_after, correct "
                    "asked_at, or set allow_later_episodes: true where the benchmark gives "
                    "the whole haystack whatever its dates"))
    return problems


def evidence_after_asked_at(ds: Dataset) -> list[str]:
    """Ids of the questions whose required evidence holds an episode dated after the
    question's ``asked_at`` (kept only under ``allow_later_episodes``)."""
    times = {e.episode_id: e.timestamp for s in ds.scopes for e in s.episodes}
    out = []
    for q in ds.questions:
        if q.asked_at is None:
            continue
        refs = (r.split("#", 1)[0] for r in q.ground_truth.required_evidence_refs)
        if any(times[r] > q.asked_at for r in refs if r in times):
            out.append(q.question_id)
    return out


class _StreamProblem(Exception):
    """The first problem the stream met: where (a JSON path) and what, with the fix."""

    def __init__(self, loc: tuple[int | str, ...] | str, message: str) -> None:
        super().__init__(message)
        self.location = loc if isinstance(loc, str) else json_path(loc)
        self.message = message

    @classmethod
    def first_of(cls, exc: ValidationError, at: tuple[int | str, ...] = ()) -> _StreamProblem:
        first = _validation_problems(exc, "", at)[0]
        return cls(first.location, first.message)


class _StrictBuilder(ObjectBuilder):
    """ijson's object builder, refusing what the whole-file reader refuses: a key repeated in
    one object and numbers that are not finite."""

    def __init__(self) -> None:
        super().__init__()
        self._keys: list[set[str]] = []

    def event(self, event: str, value: Any) -> None:
        if event == "start_map":
            self._keys.append(set())
        elif event == "end_map":
            self._keys.pop()
        elif event == "map_key":
            if value in self._keys[-1]:
                self.key = value
                shown = value if len(value) <= 80 else value[:80] + "…"
                raise _Refused(f"duplicate key {shown!r} in one object; a reader would keep "
                               "only one of the two values")
            self._keys[-1].add(value)
        elif event == "number" and isinstance(value, float) and not math.isfinite(value):
            raise _Refused(f"{value} is not a number JSON allows; write a finite number or null")
        super().event(event, value)

    def where(self, base: tuple[int | str, ...]) -> tuple[int | str, ...]:
        """The JSON path of the value being read, from ``base`` (the path of the root)."""
        loc = list(base)
        for parent in self.containers[:-1]:
            # Each open container is the last value added to its parent.
            loc.append(len(parent) - 1 if isinstance(parent, list) else next(reversed(parent)))
        if self.containers:
            inner = self.containers[-1]
            if isinstance(inner, list):
                loc.append(len(inner))
            elif hasattr(self, "key"):
                loc.append(self.key)
        return tuple(loc)


def _json_message(exc: Exception) -> str:
    # yajl's message spans several lines of context; its first line names the problem.
    text = str(exc).removeprefix("b'").removeprefix('b"')
    return text.replace("\\n", "\n").split("\n", 1)[0].strip() or type(exc).__name__


def _stream(path: Path, on_scope: Callable[[Scope], None] | None = None) -> Dataset:
    """A dataset file read one scope at a time (each scope's parsed JSON is dropped once it is
    a model), so a file of any size is held in memory once, as models; with ``on_scope``, each
    scope goes to it instead and the dataset returned has none. Raises
    :class:`_StreamProblem` at the first problem it meets (JSON, structure or a field)."""
    known = set(Dataset.model_fields)
    top: dict[str, Any] = {}
    scopes: list[Scope] = []
    seen: set[str] = set()
    read = 0  # scopes read so far
    depth = 0
    builder: _StrictBuilder | None = None
    base: tuple[int | str, ...] = ()
    target = ""
    prefix = ""
    with path.open("rb") as fh:
        if fh.read(3) != b"\xef\xbb\xbf":
            fh.seek(0)
        try:
            chunks = TokenChunks(fh, refuse_lone_surrogates=True)
            for prefix, event, value in ijson.parse(chunks, use_float=True,
                                                    buf_size=STREAM_BUFFER):
                if event in ("start_map", "start_array"):
                    depth += 1
                    if depth > MAX_JSON_DEPTH:
                        raise _TooDeep(f"JSON nested more than {MAX_JSON_DEPTH} levels deep "
                                       "(a LENS dataset is a few levels deep); repair the "
                                       "file or export it again")
                elif event in ("end_map", "end_array"):
                    depth -= 1
                if builder is not None:
                    builder.event(event, value)
                    if prefix == target and event in ("end_map", "end_array"):
                        if target == "scopes.item":
                            try:
                                scope = Scope.model_validate(builder.value)
                            except ValidationError as exc:
                                raise _StreamProblem.first_of(exc, base) from None
                            read += 1
                            if on_scope is None:
                                scopes.append(scope)
                            else:
                                on_scope(scope)
                        else:
                            top[target] = builder.value
                        builder = None
                    continue
                if prefix == "":
                    if event == "map_key":
                        if value not in known:
                            raise _StreamProblem((value,), "unknown field; remove it or move "
                                                 "it under 'meta'")
                        if value in seen:
                            raise _StreamProblem((value,), f"duplicate key {value!r} in one "
                                                 "object; a reader would keep only one of the "
                                                 "two values")
                        seen.add(value)
                    elif event not in ("start_map", "end_map"):
                        raise _StreamProblem((), "the top level must be a JSON object with "
                                             "'scopes' and 'questions'")
                elif prefix == "scopes":
                    if event not in ("start_array", "end_array"):
                        raise _StreamProblem(("scopes",), "must be a list of scopes")
                    top["scopes"] = scopes
                elif (prefix == "scopes.item" and event == "start_map") or (
                        prefix in known and event in ("start_map", "start_array")):
                    builder = _StrictBuilder()
                    builder.event(event, value)
                    target = prefix
                    base = ("scopes", read) if prefix == "scopes.item" else (prefix,)
                elif prefix in known and prefix != "scopes.item":
                    top[prefix] = value
                else:
                    raise _StreamProblem(("scopes", read),
                                         "must be an object with scope_id and episodes")
        except (_Refused, ijson.JSONError, UnicodeDecodeError) as exc:
            if builder is not None:
                where = builder.where(base)
            elif prefix.startswith("scopes.item"):
                # Between two scopes: the one after the last read.
                where = ("scopes", read)
            else:
                where = tuple(p for p in prefix.split(".") if p)
            if isinstance(exc, _TooDeep):
                raise DatasetError(f"{path}: {exc}") from None
            if isinstance(exc, _Refused):
                raise _StreamProblem(where, str(exc)) from None
            if chunks.lone_surrogate is not None and isinstance(exc, ijson.JSONError):
                raise _StreamProblem(where, chunks.lone_surrogate) from None
            if isinstance(exc, UnicodeDecodeError) or "UTF8" in str(exc):
                raise _StreamProblem(where, "not UTF-8 text here; re-save the file as UTF-8"
                                     ) from None
            raise _StreamProblem(where, f"invalid JSON in or after this value "
                                 f"({_json_message(exc)}); repair the file or export it "
                                 "again") from None
        except JsonRefused as exc:
            raise DatasetError(f"{path}: {exc}") from None
    try:
        return Dataset.model_validate(top)
    except ValidationError as exc:
        raise _StreamProblem.first_of(exc) from None


def _stream_or_problem(path: Path) -> tuple[Dataset | None, _StreamProblem | None]:
    """The streamed dataset, or the first problem the stream met (both None when the path is
    not a readable regular file: the whole-file reader names why)."""
    try:
        return (_stream(path), None) if path.is_file() else (None, None)
    except _StreamProblem as exc:
        return None, exc
    except OSError:
        return None, None


def _too_big_to_read_whole(path: Path) -> bool:
    try:
        return path.stat().st_size > MAX_WHOLE_FILE_BYTES
    except OSError:
        return False


def _first_problem_error(path: Path, problem: _StreamProblem) -> DatasetError:
    return DatasetError(
        f"{path}: invalid dataset (the first problem in file order: the file is "
        f"{path.stat().st_size} bytes, over the {MAX_WHOLE_FILE_BYTES} bytes lens reads whole "
        "to list every problem; fix this one and load it again for the next)",
        [Problem(str(path), problem.location, problem.message)])


def _load_with_problems(p: Path) -> tuple[Dataset | None, list[Problem]]:
    ds, first = _stream_or_problem(p)
    if ds is not None:
        return ds, semantic_problems(ds, str(p))
    if first is not None and _too_big_to_read_whole(p):
        raise _first_problem_error(p, first)
    # The whole file at once, for the messages: every problem with its JSON path.
    return validate_raw(_read_json(p), str(p))


def load_dataset(path: str | Path) -> Dataset:
    """Load and validate a LENS dataset file; raise :class:`DatasetError` listing every problem
    (only the first one for a file over :data:`MAX_WHOLE_FILE_BYTES`, which is never read
    whole)."""
    return load_dataset_dropping(path)[0]


class DroppedQuestion(BaseModel):
    """A question left out of a run because the dataset gets it wrong, and why."""

    question_id: str
    reason: str


_QUESTION_LOC = re.compile(r"^\$\.questions\[(\d+)\]")


def load_dataset_dropping(path: str | Path, *, drop: Collection[str] = (),
                          drop_invalid: bool = False
                          ) -> tuple[Dataset, list[DroppedQuestion]]:
    """:func:`load_dataset`, leaving out the questions that have problems of their own (a
    ref streamed after the checkpoint, a checkpoint out of range, an unknown scope) when
    ``drop_invalid`` is set or their id is in ``drop`` (an errata file's exclusions); every
    other problem still refuses the file. Returns the dataset and what was left out."""
    p = Path(path)
    ds, problems = _load_with_problems(p)
    dropped: dict[str, list[str]] = {}
    kept: list[Problem] = []
    for problem in problems:
        m = _QUESTION_LOC.match(problem.location)
        qid = ds.questions[int(m.group(1))].question_id if ds is not None and m else None
        if qid is not None and (drop_invalid or qid in drop):
            where = _QUESTION_LOC.sub("", problem.location).lstrip(".")
            dropped.setdefault(qid, []).append(f"{where}: {problem.message}" if where
                                               else problem.message)
        else:
            kept.append(problem)
    if ds is not None and dropped and not kept:
        questions = [q for q in ds.questions if q.question_id not in dropped]
        if not questions:
            kept.append(Problem(str(p), "$.questions", "every question has a problem; "
                                "nothing would be asked"))
        ds = ds.model_copy(update={"questions": questions})
    if kept or ds is None:
        message = f"{p}: invalid dataset ({len(kept)} problem(s))"
        own = sum(1 for x in kept if _QUESTION_LOC.match(x.location))
        if ds is not None and own and not drop_invalid:
            message += (f"; {own} of them belong to single questions: run with "
                        "--drop-invalid-questions to leave those questions out (reported in "
                        "the checklist), or exclude them in an errata file (scoring.errata)")
        raise DatasetError(message, kept)
    if ds.dataset_id is None:
        ds = ds.model_copy(update={"dataset_id": p.stem})
    return ds, [DroppedQuestion(question_id=q, reason="; ".join(r)) for q, r in dropped.items()]


def check_dataset_file(path: str | Path) -> list[Problem]:
    """Every problem with a dataset file (empty when it is valid); for a file over
    :data:`MAX_WHOLE_FILE_BYTES`, the first problem the stream meets."""
    p = Path(path)
    try:
        if p.is_file() and _too_big_to_read_whole(p):
            load_dataset(p)
            return []
        data = _read_json(p)
    except DatasetError as exc:
        if exc.problems:
            return list(exc.problems)
        return [Problem(str(p), "", str(exc.args[0]).removeprefix(f"{p}: "))]
    return validate_raw(data, str(p))[1]
