"""The expected answer beside the given one: in records.jsonl, in report.html's per-question
drill-down and in the viewer's question and side-by-side pages, through a real ``lens run``;
and never in what the agent saw (its whole transcript lacks it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

from lens.commands.cli import main
from tests.view.server import get, lens_view, require_view_extra

MARKER = "ZQX-EXPECTED-7741"


def _dataset(path: Path) -> Path:
    episodes = [{"episode_id": f"s_e{i:02d}", "scope_id": "s",
                 "timestamp": f"2024-01-{i:02d}T09:00:00",
                 "text": f"Day {i}: the checkout service p99 latency was {100 + i} ms."}
                for i in range(1, 7)]
    questions = [{"question_id": f"q{i}", "scope_id": "s", "checkpoint_after": 6,
                  "question_type": "longitudinal",
                  "prompt": f"What was the checkout p99 latency on day {i}?",
                  "ground_truth": {"canonical_answer": f"{MARKER} {100 + i} ms",
                                   "required_evidence_refs": [f"s_e{i:02d}"],
                                   "key_facts": [f"{100 + i} ms"]}}
                 for i in (2, 5)]
    path.write_text(json.dumps({"dataset_id": "expected-tiny",
                                "scopes": [{"scope_id": "s", "episodes": episodes}],
                                "questions": questions}))
    return path


def test_expected_answer_is_shown_and_never_given_to_the_agent(tmp_path: Path) -> None:
    require_view_extra()
    cfg = tmp_path / "x.yaml"
    cfg.write_text(json.dumps({
        "name": "x", "dataset": {"path": str(_dataset(tmp_path / "d.json"))},
        "adapters": [{"name": "sqlite_fts"}, {"name": "null"}],
        "agent": {"model": "scripted/policy"}, "out_dir": str(tmp_path / "runs")}))
    assert main(["run", str(cfg), "--quiet"]) == 0
    run = next((tmp_path / "runs").iterdir())
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()
               if x.strip()]
    assert records and {r["expected_answer"] for r in records} == {f"{MARKER} 102 ms",
                                                                   f"{MARKER} 105 ms"}
    for r in records:
        assert r["answer"] is not None and MARKER not in r["answer"]
        assert r["transcript"] and MARKER not in json.dumps(r["transcript"])
        assert MARKER not in json.dumps(r["tool_calls"])
    html = (run / "report.html").read_text()
    assert html.count("<h4>Expected answer</h4>") == len(records)
    assert f"{MARKER} 105 ms" in html
    with lens_view(tmp_path / "runs") as base:
        status, _, page = get(f"{base}/runs/{run.name}/questions")
        assert status == 200
        link = re.search(r'href="(/runs/[^"]+/question\?[^"]+)"', page).group(1)
        status, _, page = get(base + link.replace("&amp;", "&"))
        assert status == 200 and "<h4>Expected answer</h4>" in page and MARKER in page
        side = "/compare/question?" + urlencode({"run": run.name, "scope": "s", "qid": "q2",
                                                 "repeat": 0})
        status, _, page = get(base + side)
        assert status == 200 and f"<pre id='expected'>{MARKER} 102 ms</pre>" in page
