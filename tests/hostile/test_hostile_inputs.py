"""Every malformed config and dataset in the corpus gets one clear message naming the file and
the field, exit status 2, no traceback, and nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"

CONFIG_CASES: dict[str, str] = {
    "cfg_yaml_syntax.yaml": "YAML syntax error: line 2 column 9",
    "cfg_unknown_top.yaml": "field 'concurency': unknown field",
    "cfg_missing_agent.yaml": "field 'agent': required field is missing",
    "cfg_missing_dataset_file.yaml": "no_such.json: dataset file not found",
    "cfg_dataset_is_dir.yaml": "is a folder; give the path of a LENS JSON file",
    "cfg_repeats_zero.yaml": "field 'repeats': Input should be greater than or equal to 1",
    "cfg_repeats_string.yaml": "field 'repeats': Input should be a valid integer",
    "cfg_budget_negative.yaml": "field 'agent.budget.max_turns'",
    "cfg_budget_unknown.yaml": "field 'agent.budget.max_dollars': unknown field",
    "cfg_model_no_provider.yaml": "field 'agent.model': 'gpt-4o' must look like provider/model",
    "cfg_model_unknown_provider.yaml": "field 'agent.model': model 'skynet/v1': unknown provider",
    "cfg_unknown_adapter.yaml": "field 'adapters.0.name': unknown adapter 'mystery'",
    "cfg_adapter_bad_option.yaml": "field 'adapters.0.options.max_results'",
    "cfg_adapters_empty.yaml": "field 'adapters': List should have at least 1 item",
    "cfg_duplicate_labels.yaml": "two adapters are called 'sqlite_fts'",
    "cfg_not_mapping.yaml": "the config must be a YAML mapping",
    "cfg_unknown_scope.yaml": "field 'dataset.scopes': unknown scope(s) ['zzz']",
    "cfg_bad_dataset.yaml": "$.questions[0].ground_truth.required_evidence_refs[0]",
    "cfg_alias_bomb.yaml": "YAML aliases (*name) are not allowed",
    "cfg_temperature_high.yaml": "field 'agent.temperature'",
    "cfg_python_tag.yaml": "could not determine a constructor for the tag",
    "cfg_scripted_fixture_missing.yaml": "field 'agent.model': scripted/nothere.json: fixture",
    "cfg_latin1.yaml": "not UTF-8 text (byte 9); re-save it as UTF-8",
    # Checked at load, before any work: not after the run was paid for.
    "cfg_weights_typo.yaml": "field 'scoring.weights': unknown metric 'evidence_grounding_x'",
    "cfg_weights_negative.yaml": "field 'scoring.weights.fact_recall': weight must be a number",
    "cfg_repeats_huge.yaml": "field 'repeats': Input should be less than or equal to 100",
    "cfg_concurrency_huge.yaml": "field 'concurrency.units': Input should be less than or equal",
    "cfg_questions_huge.yaml": "field 'concurrency.questions': Input should be less than or",
    "cfg_adapter_path.yaml": "field 'adapters.0.name': must be a registered adapter name",
    "cfg_adapter_dot.yaml": "field 'adapters.0.name': must be a registered adapter name",
    "cfg_adapter_colon.yaml": "field 'adapters.0.name': must be a registered adapter name",
    "cfg_adapter_label_escape.yaml": "field 'adapters.0.label': must be 1 to 200 printable",
    "cfg_extra_body.yaml": "'options.extra_body' must be a mapping",
    "cfg_scopes_empty.yaml": "field 'dataset.scopes': List should have at least 1 item",
    "cfg_api_key_pasted.yaml": "field 'agent.api_key_env': must be the name of the environment",
    "cfg_api_key_bare.yaml": "field 'agent.api_key_env': must be the name of the environment",
    "cfg_yaml_deep.yaml": "YAML nested more than 64 levels deep",
    "cfg_big_int.yaml": "a value cannot be read: a number is too long to read",
}

DATASET_CASES: dict[str, str] = {
    "ds_dup_episode.json": "$.scopes[0].episodes[1].episode_id: duplicate episode_id 's_ep_1'",
    "ds_dup_question.json": "$.questions[1].question_id: duplicate question_id 'q1'",
    "ds_dup_scope.json": "$.scopes[1].scope_id: duplicate scope_id 's'",
    "ds_bad_timestamp.json": "$.scopes[0].episodes[2].timestamp: '31/02/2024' is not an ISO-8601",
    "ds_timestamp_number.json": "$.scopes[0].episodes[0].timestamp: must be an ISO-8601",
    "ds_ref_to_nothing.json": "required_evidence_refs[0]: 's_ep_99' is not an episode of scope",
    "ds_checkpoint_zero.json": "$.questions[0].checkpoint_after: 0 is outside 1..5",
    "ds_checkpoint_too_big.json": "$.questions[0].checkpoint_after: 6 is outside 1..5",
    "ds_checkpoint_string.json": "$.questions[0].checkpoint_after: Input should be a valid int",
    "ds_unknown_type.json": "$.questions[0].question_type: Input should be 'longitudinal'",
    "ds_unknown_field.json": "$.scopes[0].episodes[0].sentiment: unknown field",
    "ds_missing_prompt.json": "$.questions[0].prompt: required field is missing",
    "ds_episode_wrong_scope.json": "episodes[3].scope_id: episode says scope 't'",
    "ds_question_unknown_scope.json": "$.questions[0].scope_id: no scope 'nowhere'",
    "ds_scopes_not_list.json": "$.scopes: Input should be a valid list",
    "ds_text_wrong_type.json": "$.scopes[0].episodes[0].text: Input should be a valid string",
    "ds_empty_scope.json": "$.scopes[0].episodes: a scope needs at least one episode",
    "ds_key_facts_not_list.json": "$.questions[0].ground_truth.key_facts: Input should be a valid",
    "ds_top_level_list.json": "$: the top level must be a JSON object",
    "ds_truncated.json": "invalid JSON at line 1 column 200",
    "ds_utf16.json": "not UTF-8 text (byte 0)",
    "ds_empty.json": "invalid JSON at line 1 column 1",
    "ds_deep.json": "JSON nested too deeply",
    "ds_big_int.json": "invalid JSON: a number is too long to read (over 4,300 digits)",
    "ds_nan.json": "invalid JSON: NaN is not a number JSON allows",
    "ds_infinity.json": "invalid JSON: -Infinity is not a number JSON allows",
    "ds_dup_key.json": "invalid JSON: duplicate key 'prompt' in one object",
    "ds_future_evidence.json": "required_evidence_refs[0]: 's_ep_5' is episode 5 of the stream, "
                               "after the question's checkpoint (3)",
    "ds_chunk_shaped_id.json": "$.scopes[0].episodes[0].episode_id: episode ids may not contain",
    "ds_no_questions.json": "$.questions: a dataset needs at least one question",
    "ds_no_scopes.json": "$.scopes: a dataset needs at least one scope",
    "ds_blank_prompt.json": "$.questions[0].prompt: the prompt is blank",
    "ds_slash_id.json": "$.questions[0].question_id: ids may not contain '/'",
    "ds_control_id.json": "$.questions[0].question_id: ids may not contain '\\x1b'",
    "ds_answer_too_long.json": "canonical_answer: String should have at most 20000 characters",
    "ds_dataset_id_too_long.json": "$.dataset_id: String should have at most 200 characters",
    "ds_too_many_facts.json": "key_facts: List should have at most 200 items",
}


def lens(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lens", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    work = tmp_path / "corpus"
    shutil.copytree(CORPUS, work)
    return work


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_corpus_is_large_enough() -> None:
    assert len(CONFIG_CASES) + len(DATASET_CASES) >= 30
    on_disk = {p.name for p in CORPUS.iterdir()} - {"good.json"}
    assert on_disk == set(CONFIG_CASES) | set(DATASET_CASES)


@pytest.mark.parametrize("name", sorted(CONFIG_CASES))
def test_bad_config(corpus: Path, name: str) -> None:
    before = snapshot(corpus)
    res = lens("run", name, "--out", "runs", cwd=corpus)
    assert res.returncode == 2, res.stdout + res.stderr
    assert CONFIG_CASES[name] in res.stderr
    assert name in res.stderr or ".json" in res.stderr  # names the file at fault
    assert "Traceback" not in res.stderr
    assert res.stderr.count("lens: error:") == 1
    assert snapshot(corpus) == before  # nothing written, no run directory
    assert "pwned" not in res.stdout


@pytest.mark.parametrize("name", sorted(DATASET_CASES))
def test_bad_dataset(corpus: Path, name: str) -> None:
    res = lens("datasets", "validate", name, cwd=corpus)
    assert res.returncode == 2
    assert f"{name}: " in res.stdout and DATASET_CASES[name] in res.stdout
    cfg = corpus / "uses_bad.yaml"
    cfg.write_text(f"dataset: {{path: {name}}}\nadapters: [{{name: sqlite_fts}}]\n"
                   "agent: {model: scripted/policy}\n", encoding="utf-8")
    before = snapshot(corpus)
    res = lens("run", "uses_bad.yaml", "--out", "runs", cwd=corpus)
    assert res.returncode == 2
    assert name in res.stderr and DATASET_CASES[name] in res.stderr
    assert "Traceback" not in res.stderr
    assert snapshot(corpus) == before


def test_huge_fields_are_refused(tmp_path: Path) -> None:
    data = json.loads((CORPUS / "good.json").read_text())
    data["scopes"][0]["episodes"][0]["text"] = "A" * 2_000_001
    data["questions"][0]["prompt"] = "Q" * 20_001
    data["questions"][0]["question_id"] = "x" * 201
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = lens("datasets", "validate", str(path), cwd=tmp_path)
    assert res.returncode == 2
    assert "$.scopes[0].episodes[0].text: String should have at most 2000000 characters" \
        in res.stdout
    assert "$.questions[0].prompt: String should have at most 20000 characters" in res.stdout
    assert "$.questions[0].question_id: String should have at most 200" in res.stdout
    assert "AAAAAAAAAA" not in res.stdout  # the payload is not echoed back


def test_huge_config_file_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "big.yaml"
    cfg.write_text("name: x\n" + "# filler\n" * 200_000, encoding="utf-8")
    res = lens("run", str(cfg), cwd=tmp_path)
    assert res.returncode == 2 and "too large for a config file" in res.stderr
