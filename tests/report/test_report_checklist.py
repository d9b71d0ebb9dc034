"""Every pre-flight checklist item passes, warns and fails on runs built to do so."""

from __future__ import annotations

import pytest

from lens.report.checks.checklist import compare_checklist, run_checklist
from lens.report.foundations.data import RunData
from tests.report.runfactory import RunSpec, memory_run


def checks(run: RunData) -> dict[str, str]:
    return {c.id: c.status for c in run_checklist(run)}


@pytest.mark.parametrize(("per_scope", "single", "compare"), [
    (25, "pass", "warn"),   # 150 questions (ICC 0 here, so n_eff = n)
    (10, "warn", "fail"),   # 60
    (3, "fail", "fail"),    # 18
    (35, "pass", "pass"),   # 210
])
def test_sample_size_items(per_scope: int, single: str, compare: str) -> None:
    got = checks(memory_run(RunSpec(scopes=6, questions_per_scope=per_scope)))
    assert got["sample_size"] == single
    assert got["compare_size"] == compare


def test_few_scopes_warn_whatever_the_n() -> None:
    c = {c.id: c for c in run_checklist(memory_run(RunSpec(scopes=3, questions_per_scope=100)))}
    assert c["sample_size"].status == "warn" and c["compare_size"].status == "warn"
    assert "3 scopes" in c["sample_size"].value


def test_correlated_scopes_judge_the_effective_n() -> None:
    # Adversary: 300 questions whose value is set by their scope (ICC near 1) look like a big
    # sample; they are worth about one question per scope, and the checklist says so.
    def by_scope(adapter: str, scope: str, qid: str, rep: int) -> dict[str, float | None]:
        return {"fact_recall": 0.1 * int(scope[-1]) + 0.001 * int(qid[-1])}

    run = memory_run(RunSpec(scopes=6, questions_per_scope=50, metrics=by_scope))
    c = {c.id: c for c in run_checklist(run)}
    assert c["sample_size"].status == "fail" and c["compare_size"].status == "fail"
    assert "n=300" in c["sample_size"].value and "n_eff=6," in c["sample_size"].value


def test_sample_size_counts_scored_questions_only() -> None:
    # 110 records of which every 10th errored (metrics unknown): 99 scored -> warn.
    run = memory_run(RunSpec(scopes=2, questions_per_scope=55, error_every=10))
    c = {c.id: c for c in run_checklist(run)}
    assert c["sample_size"].status == "warn"
    assert "n=99" in c["sample_size"].value


def test_seed_item() -> None:
    a = memory_run(RunSpec(name="a", seed=1))
    b = memory_run(RunSpec(name="b", seed=1))
    c = memory_run(RunSpec(name="c", seed=2))
    assert checks(a)["seed"] == "pass"
    assert {x.id: x.status for x in compare_checklist([a, b], {})}["seed"] == "pass"
    diff = {x.id: x for x in compare_checklist([a, c], {})}["seed"]
    assert diff.status == "fail" and "a-id: 1" in diff.value and "c-id: 2" in diff.value
    no_seed = memory_run(RunSpec(name="d"))
    del no_seed.manifest["condition"]["seed"]
    assert checks(no_seed)["seed"] == "warn"


def test_retrieval_items_fail_when_the_memory_is_never_used() -> None:
    ok = checks(memory_run(RunSpec()))
    assert ok["search_results"] == "pass" and ok["tool_calls"] == "pass"
    empty_search = checks(memory_run(RunSpec(search_results=0)))
    assert empty_search["search_results"] == "fail" and empty_search["tool_calls"] == "pass"
    no_tools = checks(memory_run(RunSpec(tool_calls=False)))
    assert no_tools["search_results"] == "fail" and no_tools["tool_calls"] == "fail"


def test_retrieval_fails_for_the_one_adapter_that_never_searches() -> None:
    run = memory_run(RunSpec(adapters=("good", "bad")))
    for row in run.rows_for("bad"):
        row.record.tool_calls.clear()
    c = {c.id: c for c in run_checklist(run)}
    assert c["tool_calls"].status == "fail"
    assert "good: 1.00" in c["tool_calls"].value and "bad: 0.00" in c["tool_calls"].value


@pytest.mark.parametrize(("rate", "status"), [
    (0.02, "pass"), (0.10, "pass"), (0.15, "warn"), (0.40, "fail"), (None, "warn"),
])
def test_judge_item(rate: float | None, status: str) -> None:
    assert checks(memory_run(RunSpec(disagreement_rate=rate)))["judge"] == status


@pytest.mark.parametrize(("error_every", "status"), [(0, "pass"), (40, "warn"), (5, "fail")])
def test_failures_item(error_every: int, status: str) -> None:
    run = memory_run(RunSpec(scopes=4, questions_per_scope=30, error_every=error_every))
    assert checks(run)["failures"] == status


def test_failures_item_counts_unit_failures() -> None:
    run = memory_run(RunSpec())
    run.events.append({"kind": "unit_error", "key": "u", "error": "boom"})
    c = {c.id: c for c in run_checklist(run)}
    assert "1 unit failure(s)" in c["failures"].value


def test_scored_item() -> None:
    assert checks(memory_run(RunSpec()))["scored"] == "pass"
    unscored = checks(memory_run(RunSpec(scored=False)))
    assert unscored["scored"] == "fail"
    # Without scores the sample size falls back to the records, and judge is unknown.
    assert unscored["judge"] == "warn"


def test_failures_are_judged_per_arm_not_pooled() -> None:
    # 12% errors in one arm and none in the other: pooled that is 6% (a warn); per arm it fails.
    run = memory_run(RunSpec(adapters=("good", "flaky"), scopes=5, questions_per_scope=20))
    flaky = run.rows_for("flaky")
    for row in flaky[:12]:
        row.record.status = "error"
    c = {c.id: c for c in run_checklist(run)}
    assert c["failures"].status == "fail"
    assert "flaky: 12 of 100 (12.0%)" in c["failures"].value
    assert "good: 0 of 100 (0.0%)" in c["failures"].value


def test_memory_model_cut_item() -> None:
    run = memory_run(RunSpec(adapters=("graphs", "notes")))
    a, b = run.adapters
    # No arm reports model calls of its own: the row is absent.
    assert "memory_model_cut" not in {c.id for c in run_checklist(run)}
    run.events.append({"kind": "adapter_usage", "key": f"{a}|s0|r0", "calls": 5,
                       "prompt_tokens": 50, "completion_tokens": 10, "cost_usd": 0.0})
    c = {c.id: c for c in run_checklist(run)}["memory_model_cut"]
    assert (c.status, c.value) == ("pass", "none")
    # Usage is cumulative per unit: the last event of a unit counts, units add up.
    run.events += [
        {"kind": "adapter_usage", "key": f"{a}|s0|r0", "calls": 7, "truncated": 2},
        {"kind": "adapter_usage", "key": f"{a}|s1|r0", "calls": 3, "truncated": 1},
        {"kind": "adapter_usage", "key": f"{b}|s0|r0", "calls": 4, "truncated": 0},
    ]
    c = {c.id: c for c in run_checklist(run)}["memory_model_cut"]
    assert c.status == "warn" and c.failing == [a]
    assert c.value == f"{a}: 3 of 10 calls"


def test_unknown_usage_item() -> None:
    run = memory_run(RunSpec())
    # Every reply's usage was read (or the manifest has no usage): the row is absent.
    assert "unknown_usage" not in checks(run)
    run.manifest["usage"] = {"by_role": {"agent": {"calls": 9, "unknown_usage_calls": 0}},
                             "by_model": {"openai/m": {"calls": 9, "unknown_usage_calls": 0}}}
    assert "unknown_usage" not in checks(run)
    run.manifest["usage"] = {
        "by_role": {"agent": {"unknown_usage_calls": 2}, "judge": {"unknown_usage_calls": 1}},
        "by_model": {"openai/a": {"unknown_usage_calls": 2},
                     "openai/j": {"unknown_usage_calls": 1}}}
    c = {c.id: c for c in run_checklist(run)}["unknown_usage"]
    # A warning, never a failure: the run is complete, its token and cost figures upper bounds.
    assert c.status == "warn" and c.failing == []
    assert c.value.startswith("3 model calls with an unreadable usage block (model openai/a: 2, "
                              "openai/j: 1; role agent: 2, judge: 1)")
    assert "upper bounds" in c.value
    other = memory_run(RunSpec(name="other"))
    row = {c.id: c for c in compare_checklist([run, other], {"sqlite_fts": 30})}["unknown_usage"]
    assert row.status == "warn" and row.failing == [run.run_id]
    assert row.value.startswith(f"{run.run_id}: 3 model calls")


@pytest.mark.parametrize("spec", [RunSpec(scopes=2, questions_per_scope=5),
                                  RunSpec(scopes=2, questions_per_scope=10, error_every=2)])
def test_run_failure_rows_are_the_checklists_own(spec: RunSpec) -> None:
    from lens.report.checks.checklist import run_failure_checks
    from lens.report.checks.gate import RUN_FAILURE_CHECKS

    # The exit status under --fail-on never computes only these rows: they must be the
    # checklist's rows of RUN_FAILURE_CHECKS, value for value and in its order.
    run = memory_run(spec)
    rows = run_failure_checks(run)
    assert rows == [c for c in run_checklist(run) if c.id in RUN_FAILURE_CHECKS]
    assert {c.id for c in rows} == RUN_FAILURE_CHECKS - {"memory_state"}  # no arm lists
    if spec.error_every:
        assert next(c for c in rows if c.id == "failures").status == "fail"
