"""What an answer claims: quotes of the records set aside, figures counted and checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens.data.dataset_load import load_dataset
from lens.scoring.text.claims import (
    MIN_ALLOWANCE,
    Atoms,
    ScopeText,
    allowance,
    split_claims,
    stuffing_factor,
    supported_share,
)

RECORD = ("## checkout platform: daily operations report, 2024-03-08\n"
          "Prepared by J. Martinez at 07:18.\n"
          "- auth: p99 211 ms | p50 73 ms | errors 0.22% | success 99.82%\n"
          "- geo-lookup: p99 279 ms | p50 99 ms | errors 0.17% | success 99.81%\n"
          "### Callers\n- order-router retries: 46 per hour\n")
SCOPE = ScopeText({"e001": RECORD})
STANDARD = Path(__file__).resolve().parents[2] / "datasets" / "standard.json"


def test_pasted_record_is_all_quote_even_with_citations_between() -> None:
    claims = split_claims(f"[e001] {RECORD}", SCOPE)
    assert claims.own == 0
    assert "211" not in claims.text and "46" not in claims.text
    # Fragments after a quote go with it ("### Callers" is two words).
    assert any("Callers" in q for q in claims.quoted)


def test_own_sentences_stay_and_keep_their_distance() -> None:
    answer = ("Auth p99 was 211 ms on 2024-03-08 [e001].\n"
              "- geo-lookup: p99 279 ms | p50 99 ms | errors 0.17% | success 99.81%\n"
              "That is well under the SLO.")
    claims = split_claims(answer, SCOPE)
    assert claims.own == 2 and len(claims.quoted) == 1
    lines = claims.text.split("\n")
    # The quote leaves a wordless line: the two own sentences are not neighbours.
    assert len(lines) == 3 and not any(c.isalnum() for c in lines[1])


def test_a_sentence_sharing_one_copied_run_is_still_a_claim() -> None:
    # Eight words copied from the record, within a longer sentence of the answer's own.
    answer = ("Latency of the auth service rose to p99 211 ms p50 73 ms errors 0.22% on the "
              "eighth, which the team flagged as worth watching over the following week.")
    assert split_claims(answer, SCOPE).own == 1


def test_no_canonical_answer_of_the_standard_dataset_reads_as_a_quote() -> None:
    ds = load_dataset(STANDARD)
    scopes = {s.scope_id: ScopeText({e.episode_id: e.text for e in s.episodes})
              for s in ds.scopes}
    quoted = [q.question_id for q in ds.questions
              if split_claims(q.ground_truth.canonical_answer, scopes[q.scope_id]).quoted]
    assert quoted == []


def test_without_records_nothing_is_a_quote() -> None:
    assert split_claims(RECORD, None).text == RECORD


def test_figures_count_dates_once() -> None:
    atoms = Atoms.of("Auth p99 was 211 ms on 2024-03-08 and 252 ms on 2024-03-19 [ep_2024_1].")
    assert atoms.count == 4
    assert atoms.dates == {"2024-03-08", "2024-03-19"}


def test_stuffing_factor_allows_a_generous_answer_and_dilutes_a_list() -> None:
    allowed = allowance(["211 ms and 252 ms on 2024-03-19"])
    assert allowed == MIN_ALLOWANCE
    few = Atoms.of("It went from 211 ms to 252 ms, then 260 ms and 271 ms.")
    assert stuffing_factor(few, allowed) == 1.0
    many = Atoms.of(", ".join(f"{i} ms" for i in range(100, 160)))
    assert stuffing_factor(many, allowed) == pytest.approx(MIN_ALLOWANCE / 60)


def test_supported_share() -> None:
    record = SCOPE.atoms_of("e001")
    assert supported_share(Atoms.of("211 ms on 2024-03-08"), [record]) == 1.0
    assert supported_share(Atoms.of("211 ms and 999 ms"), [record]) == 0.5
    assert supported_share(Atoms.of("no figures"), [record]) is None
