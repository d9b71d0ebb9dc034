"""Questions computed from the storyline: all ten types, several checkpoints, exact ground truth.

Every key fact is a claim in subject form: what it is about, then a figure, identifier or date
written exactly as an episode writes it ("auth p99 latency: 224 ms", "DEP-4230: 2024-03-23"), and
the canonical answer names that subject in the sentence that states the value. Each question
lists the episodes that state its facts as required evidence, and carries its conclusion (the
decisive claim: a yes/no verdict with what it stands for) when it has one. Synthesis questions draw
their facts from several periods so that no single episode answers them; the same prompt is asked
at several checkpoints where the storyline moves, with a different correct answer each time.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from lens.data.datagen.domains import Peer
from lens.data.datagen.storyline import Storyline
from lens.data.dataset import QuestionType as T
from lens.data.importers.records import GroundTruthJson, QuestionJson


@dataclass
class Draft:
    key: str  # the question's place in the plan, e.g. "longitudinal/mid"
    qtype: T
    day: int  # the period after which it is asked
    prompt: str
    answer: str
    facts: list[tuple[str, list[str]]] = field(default_factory=list)  # fact, episodes stating it
    conclusion: str | None = None


@dataclass(frozen=True)
class Layout:
    """Where the storyline landed in the stream of episodes."""

    signal_ids: list[str]  # episode id of each period's report
    summary_id: str
    period_end: list[int]  # number of episodes streamed by the end of each period


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _peer_label(p: Peer) -> str:
    return p.name if p.name == p.metric.label else f"{p.name} {p.metric.label}"


class QuestionBuilder:
    def __init__(self, story: Storyline, layout: Layout, rng: random.Random) -> None:
        self.s = story
        self.c = story.cast
        self.d = story.days
        self.lay = layout
        self.rng = rng

    def ep(self, day: int) -> list[str]:
        return [self.lay.signal_ids[day]]

    @property
    def about(self) -> str:
        """The subject of the primary figures, without a leading window figure ("30-day")
        that would be a second value to state."""
        return re.sub(r"\b\d+-day\s+", "", self.c.subject)

    def f_p(self, day: int, ep_day: int | None = None) -> tuple[str, list[str]]:
        return (f"{self.about}: {self.s.p(day)}", self.ep(day if ep_day is None else ep_day))

    def f_s(self, day: int) -> tuple[str, list[str]]:
        return (f"{self.c.secondary_subject}: {self.s.s(day)}", self.ep(day))

    def f_on(self) -> tuple[str, list[str]]:
        return (f"{self.about}: {self.c.onset_id}", self.ep(self.d.onset))

    def f_date(self, day: int, subject: str | None = None) -> tuple[str, list[str]]:
        return (f"{subject or self.about}: {self.s.date(day)}", self.ep(day))

    def f_wrong(self) -> tuple[str, list[str]]:
        return (f"{self.about}: {self.c.primary.fmt(self.s.wrong_value)}", self.ep(self.d.wrong))

    # -- the question families ----------------------------------------------------------------
    def longitudinal(self, when: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        prompt = f"How has {c.subject} developed over the reports so far?"
        if when == "early":
            return Draft(
                "longitudinal/early", T.LONGITUDINAL, d.early, prompt,
                f"Too early to call a trend. {cap(c.subject)} was {s.p(0)} on {s.date(0)} and "
                f"{s.p(d.early)} on {s.date(d.early)}; {c.onset_id} ({c.onset_text}) was made "
                f"on {s.date(d.onset)}, so only {d.early - d.onset + 1} reports cover the time "
                "since, too few to tell a trend from noise.",
                [self.f_on(), self.f_p(0), self.f_p(d.early)],
                f"no: too early to call a trend in {c.subject}")
        day = d.mid if when == "mid" else d.final
        tail = (f"still under {c.threshold_text}" if when == "mid"
                else f"above {c.threshold_text} since {s.date(d.breach)}")
        facts = [self.f_on(), self.f_p(d.onset - 1), self.f_p(day), self.f_s(day)]
        if when == "final":
            facts.append(self.f_date(d.breach))
        return Draft(
            f"longitudinal/{when}", T.LONGITUDINAL, day, prompt,
            f"{cap(c.subject)} has climbed steadily since {c.onset_id} ({c.onset_text}) on "
            f"{s.date(d.onset)}: from {s.p(d.onset - 1)} on {s.date(d.onset - 1)} to {s.p(day)} "
            f"on {s.date(day)}, {tail}. {cap(c.secondary_subject)} moved with it, from "
            f"{s.s(d.onset - 1)} to {s.s(day)}.",
            facts, f"yes: {c.subject} has climbed since {c.onset_id}")

    def paraphrase(self, when: str) -> Draft:
        base = self.longitudinal(when)
        prompt = (f"Is anything about {self.c.target} drifting, and since when?" if when == "mid"
                  else f"Looking back over all the reports, what changed in {self.c.subject} "
                       "and what set it off?")
        return Draft(f"paraphrase/{when}", T.PARAPHRASE, base.day, prompt, base.answer,
                     base.facts, base.conclusion)

    def null(self, when: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        lo, hi = {"early": (0, d.early), "mid": (d.early + 1, d.mid),
                  "final": (d.late + 1, d.final)}[when]
        day = self.rng.randint(lo, hi)
        choices = [i for i in range(len(c.peers)) if i != s.spike_peer]
        i = self.rng.choice(choices)
        peer = c.peers[i]
        value = peer.metric.fmt(s.peers[i][day])
        label = _peer_label(peer)
        return Draft(
            f"null_hypothesis/{when}", T.NULL_HYPOTHESIS, self._ask_day(when),
            f"What was the {label} in the {c.report} of {s.date(day)}?",
            f"{value}: the {c.report} of {s.date(day)} gives {label} {value}.",
            [(f"{label}: {value}", self.ep(day))])

    def _ask_day(self, when: str) -> int:
        return {"early": self.d.early, "mid": self.d.mid, "late": self.d.late,
                "final": self.d.final}[when]

    def action(self, when: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        prompt = f"What should be done about {c.subject}, and why?"
        if when == "mid":
            return Draft(
                "action_recommendation/mid", T.ACTION_RECOMMENDATION, d.mid, prompt,
                f"Treat {c.onset_id} ({c.onset_text}, {s.date(d.onset)}) as the likely cause "
                f"and {c.remedy} before {c.subject} reaches {c.threshold_text}: it has risen "
                f"from {s.p(d.onset - 1)} to {s.p(d.mid)} since the change.",
                [self.f_on(), self.f_p(d.onset - 1), self.f_p(d.mid)],
                f"yes: {c.remedy}")
        return Draft(
            "action_recommendation/final", T.ACTION_RECOMMENDATION, d.final, prompt,
            f"Act now: {c.remedy}. {cap(c.subject)} has been above {c.threshold_text} since "
            f"{s.date(d.breach)} and is at {s.p(d.final)} (from {s.p(d.onset - 1)} before "
            f"{c.onset_id}); {c.secondary_subject} is at {s.s(d.final)}. The climb began with "
            f"{c.onset_id}, not with {c.herring_id}.",
            [self.f_on(), self.f_p(d.onset - 1), self.f_p(d.final), self.f_s(d.final)],
            f"yes: {c.remedy}")

    def negative(self, which: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        if which == "herring":
            return Draft(
                "negative/herring", T.NEGATIVE, d.late,
                f"Did {c.herring_id} ({c.herring_text}) cause the rise in {c.subject}?",
                f"No. {cap(c.subject)} had already risen from {s.p(d.onset - 1)} to "
                f"{s.p(d.herring - 1)} by {s.date(d.herring - 1)}, the day before "
                f"{c.herring_id} on {s.date(d.herring)}; the climb started with {c.onset_id} on "
                f"{s.date(d.onset)} and kept the same pace afterwards.",
                [self.f_date(d.herring, c.herring_id), self.f_on(), self.f_p(d.herring - 1),
                 self.f_p(d.onset - 1)],
                f"no: {c.herring_id} did not cause the rise in {c.subject}")
        return Draft(
            "negative/volume", T.NEGATIVE, d.final,
            f"Is the rise in {c.subject} explained by {c.volume_hypothesis}?",
            f"No. {cap(c.volume_subject)} stayed flat ({s.v(d.onset - 1)} on "
            f"{s.date(d.onset - 1)}, {s.v(d.final)} on {s.date(d.final)}) while {c.subject} "
            f"rose from {s.p(d.onset - 1)} to {s.p(d.final)} after {c.onset_id}.",
            [(f"{c.volume_subject}: {s.v(d.onset - 1)}", self.ep(d.onset - 1)),
             (f"{c.volume_subject}: {s.v(d.final)}", self.ep(d.final)),
             self.f_p(d.onset - 1), self.f_p(d.final), self.f_on()],
            f"no: {c.volume_subject} stayed flat")

    def temporal(self, which: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        m = c.primary
        breach_prompt = (f"Has {c.subject} gone above {c.threshold_text} yet, and if so when "
                         "did it first do so?")
        if which == "breach/mid":
            return Draft(
                "temporal/breach/mid", T.TEMPORAL, d.mid, breach_prompt,
                f"No, not as of {s.date(d.mid)}: the highest verified figure for {c.subject} is "
                f"{s.p(d.mid)} on {s.date(d.mid)}. The {c.subject} figure of "
                f"{m.fmt(s.wrong_value)} first reported for {s.date(d.wrong)} was corrected to "
                f"{s.p(d.wrong)} in the {s.date(d.corrected)} report.",
                [self.f_p(d.mid), self.f_wrong(), self.f_p(d.wrong, d.corrected)],
                f"no: {c.subject} has not gone above {c.threshold_text}")
        if which == "breach/final":
            return Draft(
                "temporal/breach/final", T.TEMPORAL, d.final, breach_prompt,
                f"Yes. {cap(c.subject)} first went above on {s.date(d.breach)} at "
                f"{s.p(d.breach)} (up from {s.p(d.breach - 1)} on {s.date(d.breach - 1)}) and "
                f"has stayed above since. The {c.subject} figure of {m.fmt(s.wrong_value)} for "
                f"{s.date(d.wrong)} was a reporting error, corrected to {s.p(d.wrong)}.",
                [self.f_date(d.breach), self.f_p(d.breach), self.f_p(d.breach - 1),
                 self.f_wrong()],
                f"yes: {c.subject} has gone above {c.threshold_text}")
        if which == "onset":
            return Draft(
                "temporal/onset", T.TEMPORAL, d.late,
                f"When did {c.subject} start to rise, and what came just before it?",
                f"With the {s.date(d.onset)} report, right after {c.onset_id} "
                f"({c.onset_text}): {c.subject} was {s.p(d.onset - 1)} on "
                f"{s.date(d.onset - 1)}, then "
                f"{s.p(d.onset + 1)} on {s.date(d.onset + 1)} and {s.p(d.late)} by "
                f"{s.date(d.late)}.",
                [self.f_on(), self.f_p(d.onset - 1), self.f_p(d.onset + 1), self.f_p(d.late)],
                f"right after {c.onset_id}")
        return Draft(
            "temporal/lag", T.TEMPORAL, d.final,
            f"How many reports after {c.onset_id} did {c.subject} first exceed "
            f"{c.threshold_text}?",
            f"{d.breach - d.onset} reports: {c.onset_id} is in the {s.date(d.onset)} report "
            f"({c.subject} {s.p(d.onset)}) and the first {c.subject} figure above the limit is "
            f"{s.p(d.breach)} on {s.date(d.breach)}.",
            [self.f_date(d.onset, c.onset_id), self.f_p(d.onset), self.f_date(d.breach),
             self.f_p(d.breach)])

    def counterfactual(self, which: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        if which == "herring":
            return Draft(
                "counterfactual/herring", T.COUNTERFACTUAL, d.late,
                f"If {c.herring_id} ({c.herring_text}) had caused the rise in {c.subject}, what "
                "would the reports show, and do they?",
                f"No. {c.herring_id} would have shown as a jump right after "
                f"{s.date(d.herring)} with flat figures before it. Instead "
                f"{c.subject} was already climbing from {s.p(d.onset - 1)} after {c.onset_id} on "
                f"{s.date(d.onset)} and kept the same pace through {c.herring_id}: "
                f"{s.p(d.herring - 1)} the day before, {s.p(d.herring + 1)} the day after.",
                [self.f_on(), self.f_p(d.onset - 1), self.f_p(d.herring - 1),
                 self.f_p(d.herring + 1)],
                f"no: the reports do not show a jump after {c.herring_id}")
        return Draft(
            "counterfactual/no_change", T.COUNTERFACTUAL, d.final,
            f"If {c.onset_id} had never been made, where would {c.subject} most likely be now?",
            f"{cap(c.subject)} would most likely be near its pre-change baseline ({s.p(0)} on "
            f"{s.date(0)}, {s.p(d.onset - 1)} on "
            f"{s.date(d.onset - 1)}, the day before {c.onset_id} on {s.date(d.onset)}), under "
            f"{c.threshold_text}; it is at {s.p(d.final)} now.",
            [self.f_p(0), self.f_p(d.onset - 1), self.f_p(d.final),
             self.f_date(d.onset, c.onset_id)],
            "near its pre-change baseline")

    def distractor(self, which: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        m = c.primary
        if which == "spike":
            i = s.spike_peer
            peer = c.peers[i]
            label = _peer_label(peer)
            x, y = peer.metric.fmt(s.peers[i][d.spike]), peer.metric.fmt(s.peers[i][d.spike + 1])
            return Draft(
                "distractor_resistance/spike", T.DISTRACTOR_RESISTANCE, d.mid,
                f"The {label} jumped on {s.date(d.spike)}. Is that part of the problem with "
                f"{c.subject}?",
                f"No. {label} spiked to {x} on {s.date(d.spike)} and was back to {y} on "
                f"{s.date(d.spike + 1)}, a one-off; {c.subject} kept climbing steadily, to "
                f"{s.p(d.mid)} by {s.date(d.mid)}.",
                [(f"{label}: {x}", self.ep(d.spike)), (f"{label}: {y}", self.ep(d.spike + 1)),
                 self.f_p(d.mid)],
                f"no: the {label} spike is not part of the problem with {c.subject}")
        if which == "correction":
            return Draft(
                "distractor_resistance/correction", T.DISTRACTOR_RESISTANCE, d.late,
                f"Did {c.subject} spike on {s.date(d.wrong)}?",
                f"No. The {c.subject} figure of {m.fmt(s.wrong_value)} reported for "
                f"{s.date(d.wrong)} was an error, "
                f"corrected to {s.p(d.wrong)} in the {s.date(d.corrected)} report "
                f"({c.correction_reason}); the neighbouring reports show {s.p(d.wrong - 1)} and "
                f"{s.p(d.wrong + 1)}.",
                [self.f_wrong(), self.f_p(d.wrong, d.corrected),
                 self.f_p(d.wrong - 1), self.f_p(d.wrong + 1)],
                f"no: {c.subject} did not spike on {s.date(d.wrong)}")
        return Draft(
            "distractor_resistance/stale", T.DISTRACTOR_RESISTANCE, d.final,
            f"What is the latest figure for {c.subject}, and is the one in the monthly summary "
            "still current?",
            f"The latest {c.subject} figure is {s.p(d.final)} on {s.date(d.final)}. The monthly "
            "summary prepared "
            f"{s.date(s.summary_day)} quotes {s.p(s.stale_day)} from the "
            f"{s.date(s.stale_day)} snapshot, which is stale: {c.subject} has since risen past "
            f"{c.threshold_text}.",
            [self.f_p(d.final), (f"monthly summary: {s.p(s.stale_day)}", [self.lay.summary_id]),
             (f"monthly summary snapshot: {s.date(s.stale_day)}", [self.lay.summary_id])],
            "no: the monthly summary is stale")

    def severity(self, when: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        prompt = f"How serious is the situation with {c.subject} right now?"
        if when == "mid":
            return Draft(
                "severity_assessment/mid", T.SEVERITY_ASSESSMENT, d.mid, prompt,
                f"Moderate and rising: {c.subject} is {s.p(d.mid)}, still under "
                f"{c.threshold_text}, but it has climbed since {c.onset_id} on "
                f"{s.date(d.onset)} (from {s.p(d.onset - 1)}); {c.secondary_subject} is at "
                f"{s.s(d.mid)}. At this pace it crosses the limit within a few reports.",
                [self.f_p(d.mid), self.f_on(), self.f_p(d.onset - 1), self.f_s(d.mid)],
                "moderate and rising")
        over = 100 * (s.primary[d.final] - c.threshold) / c.threshold
        return Draft(
            "severity_assessment/final", T.SEVERITY_ASSESSMENT, d.final, prompt,
            f"High: {c.subject} is {s.p(d.final)}, {over:.0f}% above {c.threshold_text}, and "
            f"has been above it since {s.date(d.breach)}; {c.secondary_subject} is at "
            f"{s.s(d.final)} against {s.s(d.onset - 1)} before {c.onset_id}.",
            [self.f_p(d.final), self.f_s(d.final), self.f_s(d.onset - 1), self.f_on()],
            "high")

    def evidence(self, when: str) -> Draft:
        s, c, d = self.s, self.c, self.d
        prompt = (f"Is there enough evidence yet to say that {c.subject} is trending, and to "
                  "link it to a cause?")
        if when == "early":
            return Draft(
                "evidence_sufficiency/early", T.EVIDENCE_SUFFICIENCY, d.early, prompt,
                f"Not yet. Only {d.early - d.onset + 1} reports (from {s.date(d.onset)}) cover "
                f"the time since {c.onset_id}; {c.subject} of {s.p(d.onset - 1)} the day before "
                "it and "
                f"{s.p(d.early)} on {s.date(d.early)} are too few to tell a trend from noise.",
                [self.f_on(), self.f_p(d.onset - 1), self.f_p(d.early)],
                f"no: too few reports to say that {c.subject} is trending")
        return Draft(
            "evidence_sufficiency/mid", T.EVIDENCE_SUFFICIENCY, d.mid, prompt,
            f"Yes. {d.mid - d.onset + 1} consecutive reports since {c.onset_id} on "
            f"{s.date(d.onset)} show {c.subject} climbing from {s.p(d.onset - 1)} to "
            f"{s.p(d.mid)}, with "
            f"{c.secondary_subject} following ({s.s(d.onset - 1)} to {s.s(d.mid)}).",
            [self.f_on(), self.f_p(d.onset - 1), self.f_p(d.mid), self.f_s(d.mid)],
            f"yes: {c.subject} is trending up since {c.onset_id}")

    # -- plans --------------------------------------------------------------------------------
    def plan(self, name: str) -> list[Draft]:
        if name == "compact":
            return [self.longitudinal("early"), self.evidence("early"), self.null("mid"),
                    self.negative("herring"), self.counterfactual("herring"),
                    self.distractor("correction"), self.longitudinal("final"),
                    self.paraphrase("final"), self.temporal("breach/final"),
                    self.action("final"), self.severity("final")]
        return [
            self.longitudinal("early"), self.null("early"), self.evidence("early"),
            self.longitudinal("mid"), self.paraphrase("mid"), self.null("mid"),
            self.action("mid"), self.temporal("breach/mid"), self.distractor("spike"),
            self.severity("mid"), self.evidence("mid"),
            self.negative("herring"), self.temporal("onset"), self.counterfactual("herring"),
            self.distractor("correction"),
            self.longitudinal("final"), self.paraphrase("final"), self.null("final"),
            self.action("final"), self.negative("volume"), self.temporal("breach/final"),
            self.temporal("lag"), self.counterfactual("no_change"), self.distractor("stale"),
            self.severity("final"),
        ]


PLANS = ("standard", "compact")


def to_question(draft: Draft, scope_id: str, number: int, layout: Layout) -> QuestionJson:
    facts: list[str] = []
    refs: list[str] = []
    for fact, eps in draft.facts:
        if fact not in facts:
            facts.append(fact)
        refs.extend(e for e in eps if e not in refs)
    truth: GroundTruthJson = {"canonical_answer": draft.answer,
                              "required_evidence_refs": refs, "key_facts": facts}
    if draft.conclusion:
        truth["conclusion"] = draft.conclusion
    return {
        "question_id": f"{scope_id}_q{number:02d}_{draft.qtype.value}",
        "scope_id": scope_id,
        "checkpoint_after": layout.period_end[draft.day],
        "question_type": draft.qtype.value,
        "prompt": draft.prompt,
        "ground_truth": truth,
        "meta": {"plan": draft.key, "period": draft.day},
    }
