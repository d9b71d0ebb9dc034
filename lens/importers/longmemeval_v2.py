"""Import LongMemEval-V2 (Wu et al., 2026, "Evaluating Long-Term Agent Memory Toward Experienced
Colleagues") into the LENS format, as text.

The benchmark is released (Hugging Face ``xiaowu0162/longmemeval-v2``) as a data root holding
``questions.jsonl`` (one question a line: ``id``, ``domain``, ``environment``, ``question_type``,
``question``, ``image``, ``answer``, ``eval_function``), ``trajectories.jsonl`` (the shared pool of
web-agent trajectories: ``id``, ``domain``, ``goal``, ``start_url``, ``outcome`` and ``states``,
each state a page with ``url``, ``thought``, ``action``, ``accessibility_tree`` and
``screenshot``) and ``haystacks/lme_v2_<tier>.json`` (question id -> the ids of the trajectories
its memory is built from, in insertion order). Trajectories written by the collection tools keep
each state's page under ``observation`` (``content: [{url, thoughts, action, observation: {text,
screenshot}}]``, the goal in ``metadata.original_goal``); both shapes are read.

A haystack becomes a scope (questions whose haystacks are the same list share it), each of its
trajectories one episode in haystack order (parts of one, cut at state boundaries, when its text
passes the episode limit), a minute apart from an invented start: the data has no times. Every
question is asked after the last episode. Screenshots and question images are not passed (LENS
episodes and prompts are text); the import counts them and says so. The pool is indexed by byte
offset in one pass that also checks every record; a trajectory is then read back for each scope
that holds it, so memory holds one trajectory, never the pool. Every malformed record is listed
(file, line, field) before anything is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from lens.dataset import MAX_EPISODE_CHARS, MAX_ID_CHARS, QuestionType
from lens.errors import DatasetError, Problem
from lens.importers.common import answer_truth, short_facts
from lens.importers.writer import StreamingDatasetWriter

QUESTIONS_FILE = "questions.jsonl"
TRAJECTORIES_FILE = "trajectories.jsonl"
HAYSTACK_DIR = "haystacks"
TIERS = ("small", "medium")
DOMAINS = ("web", "enterprise")
_HAYSTACK_NAME = re.compile(r"^lme_v2_(?P<tier>[A-Za-z0-9_-]+)\.json$")

# The official question types, their category (the benchmark's table rows) and lens's type.
CATEGORIES: dict[str, str] = {
    "static-environment": "static", "static-environment-abs": "static-abs",
    "dynamic-environment": "dynamic", "dynamic-environment-abs": "dynamic-abs",
    "procedure": "procedure", "procedure-abs": "procedure-abs",
    "errors-gotchas": "gotchas",
}
LENS_TYPES: dict[str, QuestionType] = {
    "static": QuestionType.NULL_HYPOTHESIS,
    "dynamic": QuestionType.LONGITUDINAL,
    "procedure": QuestionType.ACTION_RECOMMENDATION,
    "gotchas": QuestionType.ACTION_RECOMMENDATION,
}
# Flawed-premise questions: the right answer names what is wrong with the question.
PREMISE_TYPE = QuestionType.NEGATIVE

# The grading functions a question's ``eval_function`` may name, with the options each takes.
# The two phrase matchers pass their options to the normaliser, so an unknown one is an error
# in the benchmark's own harness; the others ignore options they do not know.
PHRASE_OPTIONS = frozenset({"lower", "normalize_hyphen", "strip_punct", "separators",
                            "separator", "require_non_empty"})
EVAL_FUNCTIONS: dict[str, frozenset[str] | None] = {
    "norm_phrase_set_match": PHRASE_OPTIONS,
    "norm_phrase_set_match_ordered": PHRASE_OPTIONS,
    "mc_choice_match": None,
    "mc_choice_set_match": None,
    "llm_abstention_checker": None,
    "llm_gotchas_checker": None,
}
JUDGED_FUNCTIONS = frozenset({"llm_abstention_checker", "llm_gotchas_checker"})

_EPOCH = datetime(2024, 1, 1)
_CUT_NOTE = "\n[… page text cut by lens: the state alone passes the episode limit]"

# The reader's instructions of the benchmark (its per-domain system prompt), in lens's words;
# the answer format is what its grading reads.
DOMAIN_FRAMES = {
    "web": ("You are an experienced colleague who knows a customised web environment: a "
            "Magento shopping site, its Magento admin site and a Postmill (Reddit-like) forum."),
    "enterprise": "You are an experienced colleague who knows a customised ServiceNow instance.",
}
ANSWER_FORMAT = (
    "Answer from your memory of this environment. Put your final answer inside \\boxed{}. If "
    "you do not know, answer exactly \\boxed{UNKNOWN}; never guess. If the question rests on "
    "a premise that is wrong in this environment, explain inside \\boxed{} what is wrong.")
IMAGE_NOTE = ("(This question came with a screenshot, which is not available here: the "
              "benchmark is imported as text.)")


# -- eval_function specs --------------------------------------------------------------------------
def parse_eval_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"norm_phrase_set_match|lower=true|separators=,;"`` -> (name, options), values read as
    the benchmark reads them: true/false, none/null, numbers, separators as a list of
    characters (or a JSON list). A ValueError says what is wrong."""
    parts = [p.strip() for p in spec.split("|")]
    name = parts[0]
    if name not in EVAL_FUNCTIONS:
        raise ValueError(f"unknown grading function {name!r}; known: "
                         f"{', '.join(EVAL_FUNCTIONS)}")
    options: dict[str, Any] = {}
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
    if "separator" in options:
        options["separators"] = options.pop("separator")
    return name, options


def _option_value(key: str, value: str) -> Any:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if key in ("separators", "separator"):
        if value.startswith("[") and value.endswith("]"):
            items = json.loads(value)
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


class _Problems:
    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, file: Path, where: str, message: str) -> None:
        self.items.append(Problem(str(file), where, message))


def _jsonl(path: Path, problems: _Problems) -> Iterator[tuple[int, int, Any]]:
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
                yield no, start, json.loads(text.decode("utf-8"))
            except UnicodeDecodeError as exc:
                problems.add(path, f"line {no}", f"not UTF-8 text ({exc.reason})")
            except json.JSONDecodeError as exc:
                problems.add(path, f"line {no}", f"invalid JSON: {exc.msg} (expected one JSON "
                             "object a line)")
            except RecursionError:
                problems.add(path, f"line {no}", "JSON nested too deeply")


def _opt_str(obj: dict[str, Any], key: str) -> bool:
    return obj.get(key) is None or isinstance(obj.get(key), str)


# -- questions ------------------------------------------------------------------------------------
@dataclass
class _Question:
    line: int
    row: dict[str, Any]
    eval_name: str
    eval_options: dict[str, Any]


def read_questions(path: Path, problems: _Problems, flawed: set[str]) -> dict[str, _Question]:
    """The well-formed questions by id; the ids of the others go into ``flawed`` (their
    problems are listed already, so the haystack check does not list them again)."""
    out: dict[str, _Question] = {}
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
        if not isinstance(row.get("answer"), str):
            problems.add(path, f"{where}: answer", "required: a string")
        image = row.get("image")
        if image is not None and (not isinstance(image, str) or not image.strip()):
            problems.add(path, f"{where}: image", "expected null or a path string")
        if not _opt_str(row, "environment"):
            problems.add(path, f"{where}: environment", "expected a string")
        spec = row.get("eval_function")
        name, options = "", {}
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
        if len(problems.items) == before:
            out[qid] = _Question(no, row, name, options)
        elif isinstance(qid, str):
            flawed.add(qid)
    return out


# -- trajectories ---------------------------------------------------------------------------------
@dataclass
class _Entry:
    line: int
    offset: int
    domain: str | None


@dataclass
class _State:
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
    states: list[_State]
    screenshots: int


def _goal(raw: Any) -> str | None:
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, list) and all(isinstance(p, str) for p in raw):
        return " ".join(p.strip() for p in raw if p.strip())
    return None


def parse_trajectory(row: Any, path: Path, where: str, problems: _Problems) -> Trajectory | None:
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
    states: list[_State] = []
    screenshots = 0
    key = "content" if nested else "states"
    for i, st in enumerate(raw_states):
        at = f"{where}: {key}[{i}]"
        if not isinstance(st, dict):
            problems.add(path, at, "expected an object")
            continue
        page = st.get("observation") if nested else st
        if not isinstance(page, dict):
            problems.add(path, f"{at}.observation", "required: an object with 'text'")
            continue
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
        screenshots += isinstance(shot, str) and bool(shot.strip())
        step = st.get("step", st.get("state_index", i))
        if ok:
            states.append(_State(st["url"], thought, st.get("action"), text,
                                 step if isinstance(step, int) and not isinstance(step, bool)
                                 else i))
    if nested:
        meta = row.get("metadata")
        goal = _goal(meta.get("original_goal")) if isinstance(meta, dict) else None
        start = states[0].url if states else ""
    else:
        goal = _goal(row.get("goal"))
        if goal is None:
            problems.add(path, f"{where}: goal", "required: a string")
        start = row.get("start_url")
        if not isinstance(start, str) or not start.strip():
            problems.add(path, f"{where}: start_url", "required: a non-empty string")
    if len(problems.items) != before:
        return None
    return Trajectory(tid, row.get("domain"), row.get("environment"),
                      goal or "<goal not given>", str(start), row.get("outcome"), states,
                      screenshots)


def index_trajectories(path: Path, problems: _Problems, flawed: set[str]
                       ) -> tuple[dict[str, _Entry], int]:
    """Every pool record checked, and where each lies (byte offset): (id -> entry, screenshots
    in the pool); the ids of malformed records go into ``flawed``."""
    out: dict[str, _Entry] = {}
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
        out[t.tid] = _Entry(no, offset, t.domain)
        shots += t.screenshots
    return out, shots


def read_trajectory(path: Path, entry: _Entry) -> Trajectory:
    with path.open("rb") as fh:
        fh.seek(entry.offset)
        raw = fh.readline()
    if entry.line == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    problems = _Problems()
    try:
        t = parse_trajectory(json.loads(raw.decode("utf-8")), path, f"line {entry.line}",
                             problems)
    except (UnicodeDecodeError, json.JSONDecodeError):
        t = None
    if t is None:
        raise DatasetError(f"{path}: line {entry.line}: the file changed while it was imported; "
                           "import again")
    return t


# -- haystacks ------------------------------------------------------------------------------------
def read_haystack(path: Path, problems: _Problems) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                           f"{exc.msg}") from None
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


# -- writing --------------------------------------------------------------------------------------
def render_state(s: _State, limit: int) -> tuple[str, bool]:
    """A state as text, and whether its page text was cut to fit ``limit`` characters."""
    head = [f"Step {s.step}: {s.url}"]
    if s.thought:
        head.append(f"Thought: {s.thought}")
    if s.action:
        head.append(f"Action: {s.action}")
    head.append("Page (accessibility tree):")
    top = "\n".join(head) + "\n"
    if len(top) + len(s.text) <= limit:
        return top + s.text, False
    keep = max(0, limit - len(top) - len(_CUT_NOTE))
    return top + s.text[:keep] + _CUT_NOTE, True


def trajectory_parts(t: Trajectory, limit: int = MAX_EPISODE_CHARS) -> tuple[list[str], int]:
    """The trajectory's text in as few parts as fit ``limit`` characters each, cut at state
    boundaries (each part opens with the trajectory's header); and how many states had to be
    cut to fit alone."""
    header = [f"Web-agent trajectory {t.tid}"
              + (f" ({', '.join(x for x in (t.domain, t.environment) if x)})"
                 if t.domain or t.environment else ""),
              f"Goal: {t.goal}", f"Start URL: {t.start_url}"]
    if t.outcome:
        header.append(f"Outcome: {t.outcome}")
    head = "\n".join(header)
    # Room for the part marker added below when the trajectory needs several parts.
    room = limit - len(head) - 40
    blocks, cut = [], 0
    for s in t.states:
        text, was_cut = render_state(s, room)
        blocks.append(text)
        cut += was_cut
    parts: list[list[str]] = [[]]
    size = 0
    for b in blocks:
        if parts[-1] and size + len(b) + 2 > room:
            parts.append([])
            size = 0
        parts[-1].append(b)
        size += len(b) + 2
    n = len(parts)
    out = [head + (f"\n(part {i + 1} of {n})" if n > 1 else "") + "\n\n" + "\n\n".join(p)
           for i, p in enumerate(parts)]
    return out, cut


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]+", "-", text).strip("-")[:80] or "x"


def _good_id(text: str) -> bool:
    return (len(text) <= MAX_ID_CHARS and text == text.strip()
            and not any(c in "/\\" or ord(c) < 32 or c == "\x7f" for c in text))


def _unique(base: str, used: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3`` … when an earlier id took it."""
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}-{n}"
    used.add(name)
    return name


def _facts(q: _Question) -> tuple[list[str], str | None]:
    """Key facts of a phrase-matched answer (each phrase, when short); a lone phrase that is a
    verdict ("No") is the conclusion. Letters of a multiple choice and judged answers have
    none."""
    answer = q.row["answer"]
    if q.eval_name not in ("norm_phrase_set_match", "norm_phrase_set_match_ordered"):
        return [], None
    seps = q.eval_options.get("separators", [",", ";"]) or []
    pieces = re.split("|".join(re.escape(s) for s in seps), answer) if seps else [answer]
    pieces = [p.strip() for p in pieces if p.strip()]
    if len(pieces) == 1:
        return answer_truth(pieces[0])
    facts = [f for p in pieces for f in short_facts(p)]
    return (facts if len(facts) == len(pieces) else []), None


def _prompt(row: dict[str, Any]) -> str:
    parts = [DOMAIN_FRAMES[row["domain"]], ANSWER_FORMAT]
    if row.get("image"):
        parts.append(IMAGE_NOTE)
    parts.append(f"Question: {row['question']}")
    return "\n\n".join(parts)


_KNOWN_FIELDS = ("id", "domain", "environment", "question_type", "question", "image", "answer",
                 "eval_function")


def _question(q: _Question, qid: str, scope_id: str, checkpoint: int, tier: str | None,
              haystack_size: int) -> dict[str, Any]:
    row = q.row
    category = CATEGORIES[row["question_type"]]
    premise = category.endswith("-abs")
    facts, conclusion = ([], None) if premise else _facts(q)
    truth: dict[str, Any] = {"canonical_answer": row["answer"], "required_evidence_refs": [],
                             "key_facts": facts}
    if conclusion is not None:
        truth["conclusion"] = conclusion
    meta: dict[str, Any] = {
        "source": "longmemeval-v2", "question_id": row["id"],
        "question_type": row["question_type"], "category": category,
        "domain": row["domain"], "environment": row.get("environment"),
        "eval_function": row["eval_function"], "image": row.get("image"),
        "raw_question": row["question"], "abstention": premise, "tier": tier,
        "haystack_size": haystack_size,
    }
    extra = {k: v for k, v in row.items() if k not in _KNOWN_FIELDS}
    if extra:
        meta["lme_v2"] = extra
    return {"question_id": qid, "scope_id": scope_id, "checkpoint_after": checkpoint,
            "question_type": (PREMISE_TYPE if premise else LENS_TYPES[category]).value,
            "prompt": _prompt(row), "ground_truth": truth, "meta": meta}


@dataclass
class _Counts:
    episodes_split: int = 0
    states_cut: int = 0
    screenshots: int = 0
    images: int = 0
    left_out: list[str] = field(default_factory=list)


def write_longmemeval_v2(src: Path, out: Path) -> dict[str, Any]:
    """Import the haystack ``src`` names (a haystack file or a data root with one) straight into
    the LENS file ``out``. Returns the counts, and what the text-only import leaves out."""
    source = find_source(src)
    problems = _Problems()
    haystack = read_haystack(source.haystack, problems)
    flawed: set[str] = set()
    questions = read_questions(source.questions, problems, flawed)
    pool, pool_shots = index_trajectories(source.trajectories, problems, flawed)
    _cross_check(source, haystack, questions, pool, flawed, problems)
    if problems.items:
        raise DatasetError(f"{src}: {len(problems.items)} problem(s) in the LongMemEval-V2 data; "
                           "nothing was written", problems.items)
    counts = _Counts()
    # Questions with the same haystack (the same list, in the same order) share a scope.
    groups: dict[tuple[str, ...], list[_Question]] = {}
    for qid, q in questions.items():
        if qid in haystack:
            groups.setdefault(tuple(haystack[qid]), []).append(q)
        else:
            counts.left_out.append(qid)
    tier = source.tier
    used: set[str] = set()
    with StreamingDatasetWriter(out, f"longmemeval-v2-{tier or source.haystack.stem}") as w:
        for ids, qs in groups.items():
            scope_id = _unique(f"lme2_{tier or 'custom'}_{_slug(qs[0].row['id'])}", used)
            w.begin_scope(scope_id)
            n = 0
            for k, tid in enumerate(ids):
                t = read_trajectory(source.trajectories, pool[tid])
                parts, cut = trajectory_parts(t)
                counts.states_cut += cut
                counts.episodes_split += len(parts) > 1
                counts.screenshots += t.screenshots
                for pi, text in enumerate(parts):
                    eid = f"{scope_id}_t{k + 1:03d}" + (f"p{pi + 1}" if len(parts) > 1 else "")
                    w.episode({"episode_id": eid, "scope_id": scope_id,
                               "timestamp": (_EPOCH + timedelta(minutes=n)).strftime(
                                   "%Y-%m-%dT%H:%M:%S"),
                               "text": text,
                               "meta": {"trajectory_id": tid, "part": pi + 1,
                                        "parts": len(parts), "states": len(t.states),
                                        "screenshots_not_passed": t.screenshots,
                                        "outcome": t.outcome}},
                              f"{source.trajectories}: line {pool[tid].line}")
                    n += 1
            w.end_scope({"source": "longmemeval-v2", "tier": tier,
                         "domain": qs[0].row["domain"], "haystack": list(ids),
                         "question_ids": [q.row["id"] for q in qs]})
            for q in qs:
                counts.images += bool(q.row.get("image"))
                qid = q.row["id"]
                qid = _unique(qid if _good_id(qid) else _slug(qid), used)
                w.question(_question(q, qid, scope_id, n, tier, len(ids)),
                           f"{source.questions}: line {q.line}")
        result: dict[str, Any] = w.finish({"source": {
            "format": "longmemeval-v2", "haystack": source.haystack.name, "tier": tier,
            "text_only": True, "pool_trajectories": len(pool),
            "pool_screenshots": pool_shots,
            "screenshots_not_passed": counts.screenshots,
            "question_images_not_passed": counts.images,
            "trajectories_split": counts.episodes_split, "states_cut": counts.states_cut,
            "questions_left_out": counts.left_out}})
    result.update({"screenshots_not_passed": counts.screenshots,
                   "question_images_not_passed": counts.images,
                   "trajectories_split": counts.episodes_split,
                   "states_cut": counts.states_cut,
                   "questions_left_out": len(counts.left_out)})
    return result


def _cross_check(source: Source, haystack: dict[str, list[str]],
                 questions: dict[str, _Question], pool: dict[str, _Entry], flawed: set[str],
                 problems: _Problems) -> None:
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
