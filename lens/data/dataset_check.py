"""The checks of a dataset: pydantic's field errors as problems with their JSON path, and the
checks beyond field types (unique ids, membership, checkpoints, evidence refs, future leaks)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import ValidationError

from lens.core.errors import Problem
from lens.data.dataset import Dataset, Question


def json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
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
        return None, validation_problems(exc, file)
    problems.extend(semantic_problems(ds, file))
    return ds, problems


def validation_problems(exc: ValidationError, file: str,
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
    episode_scope = _scope_problems(ds, file, problems)
    streams = _Streams(ds, episode_scope)
    q_counts = Counter(q.question_id for q in ds.questions)
    for qi, q in enumerate(ds.questions):
        loc = f"$.questions[{qi}]"
        if q_counts[q.question_id] > 1:
            problems.append(Problem(file, f"{loc}.question_id",
                                    f"duplicate question_id {q.question_id!r}"))
        if q.scope_id not in streams.sizes:
            problems.append(Problem(file, f"{loc}.scope_id",
                                    f"no scope {q.scope_id!r} in this dataset"))
            continue
        problems.extend(_checkpoint_problems(q, loc, file, streams))
    return problems


def _scope_problems(ds: Dataset, file: str, problems: list[Problem]) -> dict[str, str]:
    """Appends the problems of the scopes and their episodes (duplicate ids, an empty scope,
    an episode in the wrong scope); returns the scope of each episode id."""
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
    return episode_scope


class _Streams:
    """Each scope's stream, as the checks of a question read it."""

    def __init__(self, ds: Dataset, episode_scope: dict[str, str]) -> None:
        self.episode_scope = episode_scope
        self.sizes = {s.scope_id: len(s.episodes) for s in ds.scopes}
        # 1-based position of each episode in its scope's stream order.
        self.position = {e.episode_id: i for s in ds.scopes
                         for i, e in enumerate(s.ordered_episodes(), start=1)}
        self.times = {s.scope_id: [e.timestamp for e in s.ordered_episodes()]
                      for s in ds.scopes}


def _checkpoint_problems(q: Question, loc: str, file: str, streams: _Streams) -> list[Problem]:
    """A question of a known scope against its stream: its checkpoint in range, its evidence
    ingested by then, and nothing ingested by then dated after it is asked."""
    problems = []
    size = streams.sizes[q.scope_id]
    if not 1 <= q.checkpoint_after <= size:
        problems.append(Problem(file, f"{loc}.checkpoint_after",
                                f"{q.checkpoint_after} is outside 1..{size} "
                                f"(the number of episodes in scope {q.scope_id!r})"))
    for ri, ref in enumerate(q.ground_truth.required_evidence_refs):
        base = ref.split("#", 1)[0]
        where = f"{loc}.ground_truth.required_evidence_refs[{ri}]"
        if streams.episode_scope.get(base) != q.scope_id:
            problems.append(Problem(file, where,
                                    f"{ref!r} is not an episode of scope {q.scope_id!r}"))
        elif streams.position[base] > q.checkpoint_after:
            problems.append(Problem(file, where,
                                    f"{ref!r} is episode {streams.position[base]} of the stream, "
                                    f"after the question's checkpoint "
                                    f"({q.checkpoint_after}): it is not ingested yet when "
                                    "the question is asked"))
    if q.asked_at is not None and not q.allow_later_episodes:
        seen = streams.times[q.scope_id][:q.checkpoint_after]
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
