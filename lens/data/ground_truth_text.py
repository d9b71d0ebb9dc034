"""How the text of a ground truth is read: a conclusion's verdict and claim, a key fact's subject
and value. Shared by the generator's checks and the scorer, so both read a ground truth alike
(docs/datasets.md describes both forms)."""

from __future__ import annotations

import re

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

