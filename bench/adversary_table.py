"""The adversary table of docs/scoring.md: answer shapes that try to win without being right.

A real scripted-policy run over datasets/standard.json (sqlite_fts, 150 questions) is rewritten
into each shape (the retrieval stays the run's own; each answer cites with lens's ``[ref]``
syntax) and re-scored without a judge and with the scripted judge of the tests (``fair``: it
grades a fact present when the answer holds its words). Gaming shapes must score below the
canonical answer; faithful formats (bullets, a table, JSON, honest rounding) within 0.02 of it.

    python -m bench.adversary_table [--out DIR]

tests/scoring/test_scoring_adversary_table.py builds the same shapes and asserts the rules.
This measures scores, not time.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.common import ROOT, md_table
from lens.data.dataset import Dataset, Question
from lens.data.dataset_load import load_dataset
from lens.data.ground_truth_text import fact_subject
from lens.runner.agent import extract_citations
from lens.runs.records import QuestionRecord
from lens.runs.store import RunStore
from lens.scoring import score_run_sync
from lens.scoring.foundations.types import RunScores
from lens.scoring.judging.calibration_answers import (
    VERDICT_LEAD,
    bare_list_answer,
    hedged_answer,
    reversed_answer,
)
from lens.scoring.text.claims import ScopeText
from lens.scoring.text.refs import episode_of

STANDARD = ROOT / "datasets" / "standard.json"
ADAPTER = "sqlite_fts"
# Shapes that state the same answer in another format: within FAITHFUL_MARGIN of the canonical.
FAITHFUL = ("bullets", "table", "json", "rounded", "lead_in")
FAITHFUL_MARGIN = 0.02
GAMING = ("reversed", "either_or", "hedged", "bare_list", "wrong_to_say", "doubt", "only_if",
          "never_reached", "sources_footer", "distractor", "other_question", "invented_chunks",
          "wrong_heading")
SHAPES = ("canonical", *GAMING, *FAITHFUL)
DESCRIPTIONS = {
    "canonical": "canonical answer, citing its evidence",
    "reversed": "canonical with its conclusion reversed (\"Yes, already as of …\" where the "
                "answer is No; \"No action is needed\" where action is)",
    "either_or": "\"Either: ⟨canonical⟩. Or, equally possible: ⟨its opposite⟩\"",
    "hedged": "every figure hedged: \"211 ms (or possibly 252 ms)\"",
    "bare_list": "a bare list of the key values: \"CHG-5382, 224 ms, 307 ms, 2024-03-22 "
                 "[refs]\"",
    "wrong_to_say": "\"It would be wrong to say that …\" + canonical",
    "doubt": "\"I doubt that …\" + canonical",
    "only_if": "\"Only if the reports were wrong would …\" + canonical",
    "never_reached": "each key fact denied: \"auth p99 latency never reached 224 ms\"",
    "sources_footer": "a vague line, the values in a \"Sources:\" footer",
    "distractor": "canonical with its figures attributed to the distractor metric",
    "other_question": "the canonical answer of another question of the scope",
    "invented_chunks": "canonical citing every record received + 20 invented chunk refs "
                       "(`…#c1` … `#c20`) of an adapter that hands out whole episodes",
    "bullets": "faithful: the canonical answer as bullets",
    "table": "faithful: the canonical answer as a Markdown table",
    "json": "faithful: the canonical answer as a JSON object",
    "rounded": "faithful: measured figures rounded honestly (\"about 220 ms\" for 224 ms)",
    "lead_in": "faithful: each sentence as a lead-in and list items (\"Auth p99 latency has "
               "climbed since CHG-5382 on 2024-03-18:\" then \"- from 224 ms … to 531 ms …\")",
    "wrong_heading": "the distractor metric as a heading over the canonical sentences, the "
                     "subject's name replaced by \"it\": the values attached to the wrong "
                     "subject",
}
_MEASURED = re.compile(r"(?<![\w.,$-])(\d{1,3}(?:,\d{3})+|\d{3,})"
                       r"(\s?(?:ms|U/L|g/L|mg/L|min|per hour))\b")
_SENTENCES = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+")


def cite(refs: list[str]) -> str:
    return " ".join(f"[{r}]" for r in refs)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() or text[1:2] == " " else text


class ShapeBuilder:
    """Rewrites a run's answers into the shapes, given the dataset."""

    def __init__(self, dataset: Dataset) -> None:
        self.questions = {(q.scope_id, q.question_id): q for q in dataset.questions}
        self.scopes = {s.scope_id: ScopeText({e.episode_id: e.text for e in s.episodes})
                       for s in dataset.scopes}
        self.by_scope: dict[str, list[Question]] = {}
        for q in dataset.questions:
            self.by_scope.setdefault(q.scope_id, []).append(q)
        # Each scope's distractor (the peer metric that spiked) and its subject as the answers
        # write it ("Brightline Facilities's 30-day invoice count"), from the question that
        # names both.
        self.labels: dict[str, str] = {}
        self.subjects: dict[str, str] = {}
        for q in dataset.questions:
            if m := re.match(r"The (.+?) jumped on .*problem with (.+)\?$", q.prompt):
                self.labels[q.scope_id], self.subjects[q.scope_id] = m.group(1), m.group(2)

    def question(self, r: QuestionRecord) -> Question:
        return self.questions[(r.scope_id, r.question_id)]

    def refs(self, r: QuestionRecord) -> list[str]:
        """The records received that support the canonical answer: the required evidence, or a
        record stating a key fact (when there is none, the first record received)."""
        gt = self.question(r).ground_truth
        received = list(dict.fromkeys(r.retrieved_refs))
        required = {episode_of(x) for x in gt.required_evidence_refs}
        scope = self.scopes[r.scope_id]
        return [x for x in received if episode_of(x) in required
                or scope.states_fact(episode_of(x), gt.key_facts)] or received[:1]

    def canonical_text(self, r: QuestionRecord) -> str:
        return self.question(r).ground_truth.canonical_answer

    def canonical(self, r: QuestionRecord) -> str:
        return f"{self.canonical_text(r)} {cite(self.refs(r))}"

    def reversed_text(self, r: QuestionRecord) -> str:
        q = self.question(r)
        text = reversed_answer(q)
        if text is not None:
            return text
        # A conclusion without a verdict (a severity): the answer plays it down instead.
        body = VERDICT_LEAD.sub("", q.ground_truth.canonical_answer)
        return f"Nothing serious: {_lower_first(body)}"

    def reversed(self, r: QuestionRecord) -> str:
        return f"{self.reversed_text(r)} {cite(self.refs(r))}"

    def either_or(self, r: QuestionRecord) -> str:
        return (f"Either: {self.canonical_text(r)} Or, equally possible: "
                f"{self.reversed_text(r)} {cite(self.refs(r))}")

    def _values(self, r: QuestionRecord) -> list[tuple[str | None, str]]:
        return [fact_subject(f) for f in self.question(r).ground_truth.key_facts]

    def hedged(self, r: QuestionRecord) -> str:
        """Every figure of the key facts offered with another one beside it."""
        text = hedged_answer(self.question(r)) or self.canonical_text(r)
        return f"{text} {cite(self.refs(r))}"

    def bare_list(self, r: QuestionRecord) -> str:
        return f"{bare_list_answer(self.question(r)) or ''} {cite(self.refs(r))}"

    def _prefixed(self, r: QuestionRecord, prefix: str) -> str:
        return f"{prefix} {_lower_first(self.canonical_text(r))} {cite(self.refs(r))}"

    def wrong_to_say(self, r: QuestionRecord) -> str:
        return self._prefixed(r, "It would be wrong to say that")

    def doubt(self, r: QuestionRecord) -> str:
        return self._prefixed(r, "I doubt that")

    def only_if(self, r: QuestionRecord) -> str:
        return self._prefixed(r, "Only if the reports were wrong would it hold that")

    def never_reached(self, r: QuestionRecord) -> str:
        claims = " ".join(f"{s or 'It'} never reached {v}." for s, v in self._values(r))
        return f"{claims} {cite(self.refs(r))}"

    def sources_footer(self, r: QuestionRecord) -> str:
        listed = "; ".join(f"{s} {v}" if s else v for s, v in self._values(r))
        return (f"The records discuss this over the period. {cite(self.refs(r))}\n"
                f"Sources: {listed}")

    def distractor(self, r: QuestionRecord) -> str:
        """The canonical answer with its subject's figures given to the distractor: every
        mention of the subject becomes the distractor (the scope's main subject, as the answers
        write it or as the key facts name it; else the key facts' most common subject), and an
        answer that names the distractor too swaps the two."""
        text = self.canonical_text(r)
        label = self.labels.get(r.scope_id)
        if label:
            written = self.subjects[r.scope_id]
            # The key facts name it without a window figure ("Brightline Facilities's invoice
            # count"), as lens.data.datagen writes them.
            names = {written, re.sub(r"\b\d+-day\s+", "", written)}
            subjects = [s for s, _ in self._values(r) if s]
            if not any(n.lower() in text.lower() for n in names) and subjects:
                names = {max(set(subjects), key=subjects.count)}
            if label.lower() in {n.lower() for n in names}:
                label, names = written, {label}
            subject = re.compile("|".join(re.escape(n) for n in sorted(names, key=len,
                                                                         reverse=True)), re.I)
            swap = re.compile(f"{subject.pattern}|{re.escape(label)}", re.I)
            first = min(names, key=len)
            text = swap.sub(lambda m: label if subject.fullmatch(m.group(0)) else first, text)
        return f"{text} {cite(self.refs(r))}"

    def other_question(self, r: QuestionRecord) -> str:
        q = self.question(r)
        scope = self.by_scope[r.scope_id]
        i = scope.index(q)
        other = next(x for x in scope[i + 1:] + scope[:i] if x.prompt != q.prompt
                     and x.ground_truth.canonical_answer != q.ground_truth.canonical_answer)
        return f"{other.ground_truth.canonical_answer} {cite(self.refs(r))}"

    def invented_chunks(self, r: QuestionRecord) -> str:
        received = list(dict.fromkeys(r.retrieved_refs))
        base = episode_of((self.refs(r) or received)[0])
        invented = [f"{base}#c{i}" for i in range(1, 21)]
        return f"{self.canonical_text(r)} {cite(received)} {cite(invented)}"

    def _sentences(self, r: QuestionRecord) -> list[str]:
        return _SENTENCES.split(self.canonical_text(r))

    def bullets(self, r: QuestionRecord) -> str:
        rows = "\n".join(f"- {s}" for s in self._sentences(r))
        return f"{rows}\n- Evidence: {cite(self.refs(r))}"

    def table(self, r: QuestionRecord) -> str:
        rows = "\n".join(f"| {i} | {s} |" for i, s in enumerate(self._sentences(r), start=1))
        return f"| # | statement |\n| --- | --- |\n{rows}\n\n{cite(self.refs(r))}"

    def json(self, r: QuestionRecord) -> str:
        first, *rest = self._sentences(r)
        obj: dict[str, Any] = {"answer": first, "details": rest, "evidence": cite(self.refs(r))}
        return json.dumps(obj, ensure_ascii=False, indent=2)

    def rounded(self, r: QuestionRecord) -> str:
        def about(m: re.Match[str]) -> str:
            value = int(m.group(1).replace(",", ""))
            step = 10 ** (len(str(value)) - 2)
            return f"about {round(value / step) * step:,}{m.group(2)}"

        return f"{_MEASURED.sub(about, self.canonical_text(r))} {cite(self.refs(r))}"

    def lead_in(self, r: QuestionRecord) -> str:
        """Each sentence with a ": " or "; " split into its lead-in and the items after it."""
        lines: list[str] = []
        for sentence in self._sentences(r):
            lead, sep, rest = sentence.partition(": ")
            if not sep:
                lead, sep, rest = sentence.partition("; ")
            if not sep:
                lines.append(sentence)
                continue
            lines.append(f"{lead}:")
            lines.extend(f"- {item.rstrip('.')}" for item in rest.split("; "))
        return "\n".join(lines) + f"\n\nEvidence: {cite(self.refs(r))}"

    def wrong_heading(self, r: QuestionRecord) -> str:
        text = self.canonical_text(r)
        subjects = [s for s, _ in self._values(r) if s]
        subject = max(set(subjects), key=subjects.count) if subjects else ""
        mention = re.compile(re.escape(subject), re.I) if subject else None
        label = self.labels.get(r.scope_id, "")
        if mention is None or not mention.search(text) or not label:
            return self.distractor(r)
        items = "\n".join(f"- {mention.sub('it', s)}" for s in self._sentences(r))
        return f"## {label[:1].upper()}{label[1:]}\n{items}\n\nEvidence: {cite(self.refs(r))}"

    def shape(self, name: str) -> Callable[[QuestionRecord], str]:
        return getattr(self, name)  # type: ignore[no-any-return]

    def rewrite(self, records: list[QuestionRecord], name: str) -> list[QuestionRecord]:
        return rewrite_answers(records, self.shape(name))


def rewrite_answers(records: list[QuestionRecord],
                    answer: Callable[[QuestionRecord], str]) -> list[QuestionRecord]:
    """Each answered record with its answer replaced by ``answer(record)`` and its citations
    read again from the new text; the others as they were."""
    out = []
    for r in records:
        if r.status != "answered":
            out.append(r)
            continue
        text = answer(r)
        out.append(r.model_copy(update={"answer": text, "cited_refs": extract_citations(text)}))
    return out


def scripted_run(tmp: Path) -> Path:
    """A real run: the scripted retrieval policy over sqlite_fts, through the CLI."""
    cfg = {"name": "std", "dataset": {"path": str(STANDARD)}, "adapters": [{"name": ADAPTER}],
           "agent": {"model": "scripted/policy",
                     "budget": {"max_turns": 6, "max_tool_calls": 8,
                                "max_payload_bytes": 64000, "max_agent_tokens": 100000,
                                "max_seconds": 60}},
           "out_dir": str(tmp / "runs"), "cache": {"enabled": False}, "report": False,
           "scoring": {"enabled": False}}
    path = tmp / "std.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lens", "run", str(path), "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    (run,) = (tmp / "runs").iterdir()
    return run


def store_arm(source: Path, parent: Path, name: str, records: list[QuestionRecord]) -> Path:
    """A run directory holding ``records`` under the source run's manifest (same condition)."""
    manifest = RunStore.open(source).manifest_data()
    store = RunStore.create(parent, name, name)
    store.write_manifest({**manifest, "run_id": name})
    for unit in dict.fromkeys(r.unit_key for r in records):
        store.append_event("unit_started", unit, capabilities={})
    for r in records:
        store.save_question(r)
    store.close()
    return store.root


def aggregate(scores: RunScores) -> dict[str, float | None]:
    return scores.aggregates["adapter"][ADAPTER]


def per_question(scores: RunScores, metric: str = "composite") -> dict[str, float]:
    return {q.key: float(q.metrics.get(metric) or 0.0) for q in scores.questions}


def ties(good: RunScores, bad: RunScores) -> int:
    """Questions on which the shape's composite ties or beats the canonical answer's."""
    g, b = per_question(good), per_question(bad)
    return sum(b[k] >= g[k] - 1e-12 for k in g)


def measure(parent: Path, judge_factory: Callable[[], Any] | None = None,
            shapes: tuple[str, ...] = SHAPES) -> dict[str, dict[str, RunScores]]:
    """{shape: {"mechanical": scores, "judge": scores}} over one scripted run."""
    run = scripted_run(parent)
    records = RunStore.open(run).load_records()
    builder = ShapeBuilder(load_dataset(STANDARD))
    out: dict[str, dict[str, RunScores]] = {}
    for name in shapes:
        root = store_arm(run, parent / "arms", name, builder.rewrite(records, name))
        out[name] = {"mechanical": score_run_sync(root, judge=None, write=False)}
        if judge_factory is not None:
            # The judge grades the facts too (fact_grader None: the judge when there is one).
            out[name]["judge"] = score_run_sync(root, judge=judge_factory(), fact_grader=None,
                                                write=False)
    return out


def table(results: dict[str, dict[str, RunScores]]) -> str:
    rows = []
    good = results["canonical"]
    for name, by in results.items():
        m = aggregate(by["mechanical"])
        row = [DESCRIPTIONS[name], f"{m['composite']:.3f}", f"{m['fact_recall']:.3f}",
               "—" if name == "canonical" else f"{ties(good['mechanical'], by['mechanical'])}"]
        if "judge" in by:
            j = aggregate(by["judge"])
            row += [f"{j['composite']:.3f}", f"{j['fact_recall']:.3f}"]
        rows.append(row)
    head = ["answer", "composite", "fact_recall", "ties or beats canonical (questions)"]
    if any("judge" in by for by in results.values()):
        head += ["composite (scripted judge)", "fact_recall (scripted judge)"]
    return md_table(head, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the runs in DIR")
    args = parser.parse_args(argv)
    from tests.scoring.scoring_fixtures import ScriptedJudge, fair

    with tempfile.TemporaryDirectory() as tmp:
        parent = args.out or Path(tmp)
        parent.mkdir(parents=True, exist_ok=True)
        results = measure(parent, lambda: ScriptedJudge("scripted/judge", fair))
        print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
