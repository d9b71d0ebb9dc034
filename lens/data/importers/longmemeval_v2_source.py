"""Reading and checking LongMemEval-V2's released files: the data root and haystack file a
source names, ``questions.jsonl`` (with each question's grading spec), the trajectory pool
``trajectories.jsonl`` (in both released shapes) and ``haystacks/lme_v2_<tier>.json``. Every
problem is collected (file, line or JSON path, field), none stops the reading, so an import can
list them all before it writes anything (:mod:`lens.data.importers.longmemeval_v2`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Required, TypedDict, cast

from lens.core.errors import DatasetError, Problem
from lens.core.jsonguard import JsonRefused, JsonTooDeep, loads_guarded
from lens.data.dataset import MAX_ANSWER_CHARS, MAX_PROMPT_CHARS

QUESTIONS_FILE = "questions.jsonl"
TRAJECTORIES_FILE = "trajectories.jsonl"
HAYSTACK_DIR = "haystacks"
TIERS = ("small", "medium")
DOMAINS = ("web", "enterprise")
_HAYSTACK_NAME = re.compile(r"^lme_v2_(?P<tier>[A-Za-z0-9_-]+)\.json$")
# Room a LENS prompt keeps for the reader's instructions around the question.
PROMPT_FRAME_CHARS = 1_000

# The official question types and their category (the rows of the benchmark's tables).
CATEGORIES: dict[str, str] = {
    "static-environment": "static", "static-environment-abs": "static-abs",
    "dynamic-environment": "dynamic", "dynamic-environment-abs": "dynamic-abs",
    "procedure": "procedure", "procedure-abs": "procedure-abs",
    "errors-gotchas": "gotchas",
}

# The grading functions a question's ``eval_function`` may name, with the options each takes.
# The two phrase matchers pass their options to the normaliser, so an unknown one is an error
# in the benchmark's own harness; the others ignore options they do not know.
PHRASE_OPTIONS = frozenset({"lower", "normalize_hyphen", "strip_punct", "separators",
                            "require_non_empty"})
EVAL_FUNCTIONS: dict[str, frozenset[str] | None] = {
    "norm_phrase_set_match": PHRASE_OPTIONS,
    "norm_phrase_set_match_ordered": PHRASE_OPTIONS,
    "mc_choice_match": None,
    "mc_choice_set_match": None,
    "llm_abstention_checker": None,
    "llm_gotchas_checker": None,
}
JUDGED_FUNCTIONS = frozenset({"llm_abstention_checker", "llm_gotchas_checker"})

# -- eval_function specs --------------------------------------------------------------------------
# An option of a grading spec, read as the benchmark reads it.
EvalOption = bool | int | float | str | list[str] | None


def parse_eval_spec(spec: str) -> tuple[str, dict[str, EvalOption]]:
    """``"norm_phrase_set_match|lower=true|separators=,;"`` -> (name, options), values read as
    the benchmark reads them: true/false, none/null, numbers, separators as a list of
    characters (or a JSON list). A ValueError says what is wrong."""
    parts = [p.strip() for p in spec.split("|")]
    name = parts[0]
    if name not in EVAL_FUNCTIONS:
        raise ValueError(f"unknown grading function {name!r}; known: "
                         f"{', '.join(EVAL_FUNCTIONS)}")
    options: dict[str, EvalOption] = {}
    for part in parts[1:]:
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            raise ValueError(f"option {part!r} is not key=value")
        if key in options:
            raise ValueError(f"option {key!r} given twice")
        allowed = EVAL_FUNCTIONS[name]
        if allowed is not None and key not in allowed:
            raise ValueError(f"{name} takes no option {key!r}; its options: "
                             f"{', '.join(sorted(allowed))}")
        options[key] = _option_value(key, value)
    return name, options


def _option_value(key: str, value: str) -> EvalOption:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if key == "separators":
        if value.startswith("[") and value.endswith("]"):
            items = loads_guarded(value, what=f"option {key}")
            if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
                raise ValueError(f"{key} must be a JSON list of strings")
            return items
        return [ch for ch in value if not ch.isspace()]
    try:
        return float(value) if "." in value else int(value)
    except ValueError:
        return value


# -- the source -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    root: Path
    haystack: Path
    tier: str | None

    @property
    def questions(self) -> Path:
        return self.root / QUESTIONS_FILE

    @property
    def trajectories(self) -> Path:
        return self.root / TRAJECTORIES_FILE


def find_source(src: Path) -> Source:
    """The data root and haystack file ``src`` names: a haystack file, or a data root with one
    haystack file (with several, name the one to import)."""
    if not src.exists():
        raise DatasetError(f"{src}: not found")
    if src.is_file():
        root = src.parent.parent if src.parent.name == HAYSTACK_DIR else src.parent
        haystack = src
    else:
        root = src
        found = sorted((src / HAYSTACK_DIR).glob("*.json")) if (src / HAYSTACK_DIR).is_dir() \
            else []
        if not found:
            raise DatasetError(f"{src}: no haystack file (expected {HAYSTACK_DIR}/lme_v2_small"
                               f".json or {HAYSTACK_DIR}/lme_v2_medium.json under the data root)")
        if len(found) > 1:
            names = ", ".join(str(p) for p in found)
            raise DatasetError(f"{src}: several haystack files ({names}); give the one to import "
                               f"as SRC, e.g. {found[0]}")
        haystack = found[0]
    m = _HAYSTACK_NAME.match(haystack.name)
    tier = m.group("tier") if m and m.group("tier") in TIERS else None
    missing = [p for p in (root / QUESTIONS_FILE, root / TRAJECTORIES_FILE) if not p.is_file()]
    if missing:
        raise DatasetError(f"{missing[0]}: file not found (a LongMemEval-V2 data root holds "
                           f"{QUESTIONS_FILE}, {TRAJECTORIES_FILE} and {HAYSTACK_DIR}/)")
    return Source(root, haystack, tier)


class Problems:
    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, file: Path, where: str, message: str) -> None:
        self.items.append(Problem(str(file), where, message))


def _jsonl(path: Path, problems: Problems) -> Iterator[tuple[int, int, Any]]:
    """(line number, byte offset, parsed object) per non-blank line; a line that is not JSON is
    a problem and skipped, so every bad line is listed."""
    offset = 0
    with path.open("rb") as fh:
        for no, raw in enumerate(fh, start=1):
            start = offset
            offset += len(raw)
            text = raw[3:] if no == 1 and raw.startswith(b"\xef\xbb\xbf") else raw
            if not text.strip():
                continue
            try:
                item = loads_guarded(text, what=f"line {no}")
            except JsonTooDeep:
                problems.add(path, f"line {no}", "JSON nested too deeply")
                continue
            except JsonRefused as exc:
                cause = exc.cause
                if isinstance(cause, UnicodeDecodeError):
                    problems.add(path, f"line {no}", f"not UTF-8 text ({cause.reason})")
                elif isinstance(cause, json.JSONDecodeError):
                    problems.add(path, f"line {no}", f"invalid JSON: {cause.msg} (expected one "
                                 "JSON object a line)")
                else:
                    problems.add(path, f"line {no}", exc.reason)
                continue
            yield no, start, item


def _opt_str(obj: Mapping[str, object], key: str) -> bool:
    return obj.get(key) is None or isinstance(obj.get(key), str)


# -- questions ------------------------------------------------------------------------------------
class V2Question(TypedDict, total=False):
    """A question line of the benchmark, as ``read_questions`` has checked it (fields it does
    not know are kept)."""

    id: Required[str]
    domain: Required[str]
    question_type: Required[str]
    question: Required[str]
    answer: Required[str]
    eval_function: Required[str]
    image: str | None
    environment: str | None


@dataclass
class QuestionRow:
    line: int
    row: V2Question
    eval_name: str
    eval_options: dict[str, EvalOption]


def read_questions(path: Path, problems: Problems, flawed: set[str]) -> dict[str, QuestionRow]:
    """The well-formed questions by id; the ids of the others go into ``flawed`` (their
    problems are listed already, so the haystack check does not list them again)."""
    out: dict[str, QuestionRow] = {}
    for no, _, row in _jsonl(path, problems):
        where = f"line {no}"
        if not isinstance(row, dict):
            problems.add(path, where, f"expected a JSON object, got {type(row).__name__}")
            continue
        before = len(problems.items)
        qid = row.get("id")
        if not isinstance(qid, str) or not qid.strip():
            problems.add(path, f"{where}: id", "required: a non-empty string")
        elif qid in out:
            problems.add(path, f"{where}: id", f"{qid!r} appears twice (first on line "
                         f"{out[qid].line}); question ids must be unique")
        if row.get("domain") not in DOMAINS:
            problems.add(path, f"{where}: domain", f"expected one of {', '.join(DOMAINS)}, got "
                         f"{row.get('domain')!r}")
        qtype = row.get("question_type")
        if qtype not in CATEGORIES:
            problems.add(path, f"{where}: question_type", f"unknown question type {qtype!r}; "
                         f"known: {', '.join(CATEGORIES)}")
        if not isinstance(row.get("question"), str) or not row["question"].strip():
            problems.add(path, f"{where}: question", "required: a non-empty string")
        if isinstance(row.get("question"), str) and \
                len(row["question"]) > MAX_PROMPT_CHARS - PROMPT_FRAME_CHARS:
            problems.add(path, f"{where}: question", f"{len(row['question'])} characters; a "
                         f"LENS prompt holds {MAX_PROMPT_CHARS - PROMPT_FRAME_CHARS} besides "
                         "the instructions")
        if not isinstance(row.get("answer"), str):
            problems.add(path, f"{where}: answer", "required: a string")
        elif len(row["answer"]) > MAX_ANSWER_CHARS:
            problems.add(path, f"{where}: answer", f"{len(row['answer'])} characters; a LENS "
                         f"answer holds {MAX_ANSWER_CHARS}")
        image = row.get("image")
        if image is not None and (not isinstance(image, str) or not image.strip()):
            problems.add(path, f"{where}: image", "expected null or a path string")
        if not _opt_str(row, "environment"):
            problems.add(path, f"{where}: environment", "expected a string")
        spec = row.get("eval_function")
        name: str = ""
        options: dict[str, EvalOption] = {}
        if not isinstance(spec, str) or not spec.strip():
            problems.add(path, f"{where}: eval_function", "required: a grading spec such as "
                         "'norm_phrase_set_match|separators=,;'")
        else:
            try:
                name, options = parse_eval_spec(spec)
            except ValueError as exc:
                problems.add(path, f"{where}: eval_function", str(exc))
            if (name == "llm_abstention_checker" and isinstance(qtype, str)
                    and "-abs" not in qtype):
                problems.add(path, f"{where}: eval_function", "llm_abstention_checker grades "
                             f"flawed-premise questions only; question_type {qtype!r} is not "
                             "one (an -abs type)")
        if len(problems.items) == before and isinstance(qid, str):
            # No problem was added: every field V2Question names is checked above.
            out[qid] = QuestionRow(no, cast(V2Question, row), name, options)
        elif isinstance(qid, str):
            flawed.add(qid)
    return out


# -- trajectories ---------------------------------------------------------------------------------
@dataclass
class PoolEntry:
    line: int
    offset: int
    domain: str | None


@dataclass
class State:
    url: str
    thought: str | None
    action: str | None
    text: str
    step: int


@dataclass
class Trajectory:
    tid: str
    domain: str | None
    environment: str | None
    goal: str
    start_url: str
    outcome: str | None
    states: list[State]
    screenshots: int


def _goal(raw: Any) -> str | None:
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, list) and all(isinstance(p, str) for p in raw):
        return " ".join(p.strip() for p in raw if p.strip())
    return None


def _parse_state(st: Any, i: int, at: str, nested: bool, path: Path, problems: Problems
                 ) -> tuple[State | None, int]:
    """One state of a trajectory (None with its problems added) and whether it names a
    screenshot (0 or 1; counted even when the state is malformed, as the pool holds it)."""
    if not isinstance(st, dict):
        problems.add(path, at, "expected an object")
        return None, 0
    page = st.get("observation") if nested else st
    if not isinstance(page, dict):
        problems.add(path, f"{at}.observation", "required: an object with 'text'")
        return None, 0
    text = page.get("text") if nested else st.get("accessibility_tree", st.get("text"))
    thought = st.get("thoughts", st.get("thought"))
    ok = True
    if not isinstance(st.get("url"), str) or not st["url"].strip():
        problems.add(path, f"{at}.url", "required: a non-empty string")
        ok = False
    if not (st.get("action") is None or isinstance(st.get("action"), str)):
        problems.add(path, f"{at}.action", "expected a string or null")
        ok = False
    if not (thought is None or isinstance(thought, str)):
        problems.add(path, f"{at}.thought", "expected a string or null")
        ok = False
    if not isinstance(text, str):
        name = "observation.text" if nested else "accessibility_tree"
        problems.add(path, f"{at}.{name}", "required: the page as text (a string)")
        ok = False
    shot = page.get("screenshot")
    if shot is not None and not isinstance(shot, str):
        problems.add(path, f"{at}.screenshot", "expected a path string or null")
        ok = False
    shots = int(isinstance(shot, str) and bool(shot.strip()))
    if not ok or not isinstance(text, str):
        return None, shots
    step = st.get("step", st.get("state_index", i))
    return State(st["url"], thought, st.get("action"), text,
                 step if isinstance(step, int) and not isinstance(step, bool) else i), shots


def _goal_and_start(row: Mapping[str, object], nested: bool, states: list[State], path: Path,
                    where: str, problems: Problems) -> tuple[str | None, str]:
    """The task's goal and start page: the collection tools' shape keeps the goal in its
    metadata and starts at the first state; the released shape names both."""
    if nested:
        meta = row.get("metadata")
        goal = _goal(meta.get("original_goal")) if isinstance(meta, dict) else None
        return goal, states[0].url if states else ""
    goal = _goal(row.get("goal"))
    if goal is None:
        problems.add(path, f"{where}: goal", "required: a string")
    given = row.get("start_url")
    if not isinstance(given, str) or not given.strip():
        problems.add(path, f"{where}: start_url", "required: a non-empty string")
    return goal, str(given)


def parse_trajectory(row: Any, path: Path, where: str, problems: Problems) -> Trajectory | None:
    """A pool record in either released shape, or None with its problems added."""
    if not isinstance(row, dict):
        problems.add(path, where, f"expected a JSON object, got {type(row).__name__}")
        return None
    before = len(problems.items)
    tid = row.get("id")
    if not isinstance(tid, str) or not tid.strip():
        problems.add(path, f"{where}: id", "required: a non-empty string")
    for key in ("domain", "environment", "outcome"):
        if not _opt_str(row, key):
            problems.add(path, f"{where}: {key}", "expected a string or null")
    nested = not isinstance(row.get("states"), list) and isinstance(row.get("content"), list)
    raw_states = row.get("content") if nested else row.get("states")
    if not isinstance(raw_states, list) or not raw_states:
        problems.add(path, f"{where}: states", "required: a non-empty list of states (or "
                     "'content', as the collection tools write it)")
        raw_states = []
    states: list[State] = []
    screenshots = 0
    key = "content" if nested else "states"
    for i, st in enumerate(raw_states):
        state, shots = _parse_state(st, i, f"{where}: {key}[{i}]", nested, path, problems)
        screenshots += shots
        if state is not None:
            states.append(state)
    goal, start = _goal_and_start(row, nested, states, path, where, problems)
    if len(problems.items) != before or not isinstance(tid, str):
        return None
    return Trajectory(tid, row.get("domain"), row.get("environment"),
                      goal or "<goal not given>", str(start), row.get("outcome"), states,
                      screenshots)


def index_trajectories(path: Path, problems: Problems, flawed: set[str]
                       ) -> tuple[dict[str, PoolEntry], int]:
    """Every pool record checked, and where each lies (byte offset): (id -> entry, screenshots
    in the pool); the ids of malformed records go into ``flawed``."""
    out: dict[str, PoolEntry] = {}
    shots = 0
    for no, offset, row in _jsonl(path, problems):
        t = parse_trajectory(row, path, f"line {no}", problems)
        if t is None:
            if isinstance(row, dict) and isinstance(row.get("id"), str):
                flawed.add(row["id"])
            continue
        if t.tid in out:
            problems.add(path, f"line {no}: id", f"{t.tid!r} appears twice (first on line "
                         f"{out[t.tid].line}); trajectory ids must be unique")
            continue
        out[t.tid] = PoolEntry(no, offset, t.domain)
        shots += t.screenshots
    return out, shots


def read_trajectory(path: Path, entry: PoolEntry) -> Trajectory:
    with path.open("rb") as fh:
        fh.seek(entry.offset)
        raw = fh.readline()
    if entry.line == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    problems = Problems()
    try:
        t = parse_trajectory(loads_guarded(raw, what=f"line {entry.line}"), path,
                             f"line {entry.line}", problems)
    except JsonRefused:
        t = None
    if t is None:
        raise DatasetError(f"{path}: line {entry.line}: the file changed while it was imported; "
                           "import again")
    return t


# -- haystacks ------------------------------------------------------------------------------------
def read_haystack(path: Path, problems: Problems) -> dict[str, list[str]]:
    try:
        data = loads_guarded(path.read_bytes(), what=str(path))
    except JsonRefused as exc:
        raise DatasetError(f"{path}: {exc.reason}") from None
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: $: expected an object of question id -> list of "
                           "trajectory ids")
    out: dict[str, list[str]] = {}
    for qid, ids in data.items():
        where = f"$.{qid}"
        if not isinstance(ids, list) or not ids:
            problems.add(path, where, "expected a non-empty list of trajectory ids")
            continue
        if not all(isinstance(t, str) and t for t in ids):
            problems.add(path, where, "every trajectory id must be a non-empty string")
            continue
        dup = sorted({t for t in ids if ids.count(t) > 1})
        if dup:
            problems.add(path, where, f"trajectory id(s) listed twice: {', '.join(dup[:5])}")
            continue
        out[qid] = list(ids)
    return out



def cross_check(source: Source, haystack: dict[str, list[str]],
                 questions: dict[str, QuestionRow], pool: dict[str, PoolEntry], flawed: set[str],
                 problems: Problems) -> None:
    """Haystack entries name known questions and trajectories of the question's domain (a
    record with problems of its own is not reported again here)."""
    for qid, ids in haystack.items():
        q = questions.get(qid)
        if q is None:
            if qid not in flawed:
                problems.add(source.haystack, f"$.{qid}", f"no question {qid!r} in "
                             f"{QUESTIONS_FILE}")
            continue
        unknown = [t for t in ids if t not in pool and t not in flawed]
        if unknown:
            problems.add(source.haystack, f"$.{qid}", f"{len(unknown)} trajectory id(s) not in "
                         f"{TRAJECTORIES_FILE}: {', '.join(unknown[:5])}")
        other = [t for t in ids if t in pool and pool[t].domain is not None
                 and pool[t].domain != q.row["domain"]]
        if other:
            problems.add(source.haystack, f"$.{qid}", f"trajectory id(s) of another domain "
                         f"than the question's ({q.row['domain']}): {', '.join(other[:5])}")
    if not haystack:
        problems.add(source.haystack, "$", "the haystack file lists no question")
