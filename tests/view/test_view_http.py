"""``lens view`` over plain HTTP (no browser): the real command in a subprocess on loopback,
every endpoint, filters and sorting, the refusal when conditions differ, a run in flight read
while it is written (torn last line included), and the viewer never writing into a run."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from urllib.parse import quote, urlencode

import anyio
import pytest

from lens.commands.cli import main
from lens.flow.pipeline import log_usage, usage_brief
from lens.runs.store import RunStore
from tests.report.runfactory import RunSpec, make_run
from tests.view.runs import DETAIL, HOSTILE, InFlight
from tests.view.server import get, lens_view, require_view_extra, wait_ready


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    require_view_extra()
    folder = tmp_path_factory.mktemp("runs")
    a = make_run(folder, RunSpec(name="alpha", adapters=("sqlite_fts", "null"),
                                 questions_per_scope=12, error_every=7, detail=DETAIL))
    b = make_run(folder, RunSpec(name="beta", adapters=("sqlite_fts",), questions_per_scope=12,
                                 detail=DETAIL,
                                 metrics=lambda ad, s, q, r: {"fact_recall": 0.5,
                                                              "composite": 0.5}))
    other = make_run(folder, RunSpec(name="gamma", seed=7, questions_per_scope=4))
    with lens_view(folder) as base:
        yield base, folder, a, b, other


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                      p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_run_list_and_headers(served) -> None:
    base, _, a, b, other = served
    status, headers, body = get(base + "/")
    assert status == 200
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    for run in (a, b, other):
        assert run.name in body
    status, _, data = get(base + "/api/runs")
    runs = {r["name"]: r for r in json.loads(data)["runs"]}
    assert runs[a.name]["status"] == "complete"
    assert runs[a.name]["done"] == "72"  # the factory announces no total (no run_started)
    assert runs[a.name]["headline"].startswith("composite: sqlite_fts 0.")
    assert "null 0." in runs[a.name]["headline"]
    assert "seed 7" in runs[other.name]["condition"]
    # no request leaves the machine: nothing on the page names another origin
    assert "http://" not in body and "https://" not in body
    for asset in ("/static/view.js", "/static/view.css"):
        status, headers, text = get(base + asset)
        assert status == 200 and len(text) > 500
    assert "innerHTML" not in get(base + "/static/view.js")[2]


def test_run_page_has_the_report_and_progress(served) -> None:
    base, _, a, _, _ = served
    body = wait_ready(f"{base}/runs/{a.name}")
    assert "id=\"summary-table\"" in body and "id=\"checklist\"" in body
    assert "svg" in body and "class=\"plot" in body
    assert "id='live'" in body
    prog = json.loads(get(f"{base}/api/runs/{a.name}/progress")[2])
    q = prog["questions"]
    assert (q["done"], q["answered"], q["errored"]) == (72, 62, 10)
    assert prog["agent_cost_usd"] == pytest.approx(62 * 0.0001)
    assert prog["display"]["live-outcomes"] == "62 · 0 · 10"


def _rows(body: str) -> list[str]:
    table = body.split("id=\"questions\"", 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr(?: class=\"[^\"]*\")?><td>(.*?)</tr>", table)


def test_questions_filter_and_sort(served) -> None:
    base, _, a, _, _ = served
    url = f"{base}/runs/{a.name}/questions"
    status, _, body = get(url)
    assert status == 200 and "72 of 72 questions match" in body
    assert len(_rows(body)) == 72
    body = get(url + "?status=error")[2]
    assert "10 of 72 questions match" in body
    assert all("error" in r for r in _rows(body))
    body = get(url + "?" + urlencode({"adapter": "null", "type": "temporal"}))[2]
    match = int(re.search(r"(\d+) of 72 questions match", body).group(1))
    assert 0 < match < 36
    body = get(url + "?q=q01_003")[2]
    assert "2 of 72 questions match" in body  # one per adapter
    body = get(url + "?checkpoint=10")[2]
    assert all(">10<" in r for r in _rows(body))
    body = get(url + "?" + urlencode({"sort": "fact_recall", "order": "desc",
                                      "metric": "fact_recall"}))[2]
    values = [float(v) for v in re.findall(r"<td>(\d\.\d{3})</td>", body)]
    assert values == sorted(values, reverse=True) and len(values) == 62
    assert _rows(body)[-1].count("unknown")  # errored questions (no value) sort last
    body = get(url + "?" + urlencode({"metric": "fact_recall", "min": "0.5"}))[2]
    assert all(float(v) >= 0.5 for v in re.findall(r"<td>(\d\.\d{3})</td>", body))
    status, _, body = get(url + "?page=0")
    assert status == 400 and "page" in _text(body)
    status, _, body = get(url + "?sort=nonsense")
    assert status == 400 and "neither a metric" in body


def test_question_drill_down(served) -> None:
    base, _, a, _, _ = served
    body = get(f"{base}/runs/{a.name}/questions?status=answered")[2]
    href = re.search(r'href="(/runs/[^"]+/question\?key=[^"]+)"', body).group(1)
    status, _, page = get(base + href.replace("&amp;", "&"))
    assert status == 200
    text = _text(page)
    assert "What changed in scope_" in text  # the prompt
    assert "p99 latency rose to 410ms" in text and "not stated" in text  # fact reasons
    assert "the judge preferred the answer that cites" in text  # judge verdict
    assert "memory_search" in text and "ep_scope_" in text  # tool call and returned refs
    assert "Transcript" in text
    status, _, _ = get(f"{base}/runs/{a.name}/question?key=nope")
    assert status == 404
    for bad in ("..", "%2e%2e%2fetc", ".hidden", "missing"):
        assert get(f"{base}/runs/{bad}")[0] == 404


def test_side_by_side_and_refusal(served) -> None:
    base, _, a, b, other = served
    # The same adapter in two runs is one arm unless both are named.
    table = wait_ready(f"{base}/compare?" + urlencode({"run": [a.name, b.name]}, doseq=True)
                       ).split("id='verdicts'")[0]
    assert "alpha-id:sqlite_fts" in table and "beta-id:sqlite_fts" not in table
    url = f"{base}/compare?" + urlencode(
        {"run": [a.name, b.name], "arms": "alpha-id:sqlite_fts,beta-id:sqlite_fts"}, doseq=True)
    body = wait_ready(url)
    assert "id='sbs'" in body
    assert "alpha-id:sqlite_fts" in body and "beta-id:sqlite_fts" in body
    assert "alpha-id:null" not in body.split("id='verdicts'")[0]
    assert "class='differs'" in body
    assert "Paired comparisons" in body  # lens compare's verdicts
    # Each verdict in words, with the rule and reason beside it in the same cell.
    verdicts = body.split("id='verdicts'", 1)[1]
    assert re.search(r"(better than|worse than|equivalent within the margin|a real difference "
                     r"smaller than the margin|undecided)</span> \([a-z ]+ rule\): [^<]+</td>",
                     verdicts), verdicts[:2000]
    diff_only = get(url + "&only=diff")[2].split("id='sbs'", 1)[1].split("</table>", 1)[0]
    assert diff_only.count("<tr class='differs'>") == len(re.findall(r"<tr[ >]", diff_only)) - 1
    assert diff_only.count("<tr class='differs'>") > 0
    side = re.search(r"href=\"(/compare/question\?[^\"]+)\"", body).group(1)
    status, _, page = get(base + side.replace("&amp;", "&"))
    assert status == 200 and "id='side'" in page
    assert "<h3>beta-id:sqlite_fts</h3>" in page and "alpha-id:null" not in page
    # A baseline against each other arm; a name that is no arm is a bad query.
    body = wait_ready(f"{base}/compare?" + urlencode(
        {"run": [a.name], "baseline": "null"}, doseq=True))
    assert "Compared: null (the baseline) against each other arm" in body
    status, _, body = get(f"{base}/compare?" + urlencode(
        {"run": [a.name, b.name], "arms": "sqlite_fts,nul"}, doseq=True))
    assert status == 400 and "query parameter arms &#x27;nul&#x27;: no such arm" in body
    # arms of one run
    assert "Paired comparisons" in wait_ready(f"{base}/compare?run={a.name}")
    status, _, body = get(f"{base}/compare?" + urlencode({"run": [a.name, other.name]},
                                                         doseq=True))
    assert status == 409
    assert "different conditions" in body and "seed" in body
    status, _, body = get(f"{base}/compare?run={other.name}")
    assert status == 409 and "only one arm" in body
    assert get(f"{base}/compare")[0] == 400


def test_run_in_flight_is_read_while_written(served) -> None:
    base, folder, *_ = served
    run = InFlight(folder, RunSpec(name="live", questions_per_scope=5, scopes=2))
    try:
        progress = f"{base}/api/runs/{quote(run.root.name)}/progress"
        assert json.loads(get(progress)[2])["questions"] == {
            "total": 10, "done": 0, "answered": 0, "empty": 0, "errored": 0, "already_done": 0}
        run.commit(3)
        data = json.loads(get(progress)[2])
        assert data["questions"]["done"] == 3 and data["units"]["started"] == 1
        assert data["status"] == "running"
        # a line still being written is left for later, and read once complete
        events = run.root / "events.jsonl"
        line = json.dumps({"seq": 99, "ts": "2026-01-01T00:00:00+00:00", "kind": "unit_error",
                           "key": "k", "error": "boom"}) + "\n"
        with open(events, "a") as fh:
            fh.write(line[:25])
        assert json.loads(get(progress)[2])["units"]["failed"] == 0
        with open(events, "a") as fh:
            fh.write(line[25:])
        assert json.loads(get(progress)[2])["units"]["failed"] == 1
        run.commit(7)
        before = _snapshot(run.root)
        for path in ("", "/questions", "/questions?status=error"):
            assert get(f"{base}/runs/{run.root.name}{path}")[0] == 200
        assert json.loads(get(progress)[2])["questions"]["done"] == 10
        assert _snapshot(run.root) == before  # the viewer never writes into a run
    finally:
        run.stop()


def test_hostile_labels_are_escaped(served) -> None:
    base, folder, *_ = served
    run = make_run(folder, RunSpec(name="hostile", adapters=(HOSTILE,), questions_per_scope=2,
                                   scopes=1, answer=lambda s, q: HOSTILE))
    listed = [r for r in json.loads(get(base + "/api/runs")[2])["runs"] if r["name"] == run.name]
    assert "␛" in listed[0]["headline"] and "\x1b" not in listed[0]["headline"]
    for url in ("/", f"/runs/{run.name}/questions"):
        body = get(base + url)[2]
        assert "<script>console" not in body and "<img src=x" not in body
        assert "&lt;script&gt;" in body and "\x1b" not in body and "␛" in body


def test_loopback_only_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    require_view_extra()
    assert main(["view", str(tmp_path), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "--host 0.0.0.0" in err and "loopback only" in err
    assert main(["view", str(tmp_path / "missing"), "--host", "192.168.1.2",
                 "--port", "99999"]) == 2
    err = capsys.readouterr().err
    assert "192.168.1.2" in err and "99999" in err and "no such folder" in err


def test_a_foreign_host_header_is_refused(served) -> None:
    import urllib.request

    base, *_ = served
    req = urllib.request.Request(base + "/api/runs", headers={"Host": "evil.example"})
    try:
        urllib.request.urlopen(req, timeout=30)
        status = 200
    except urllib.error.HTTPError as err:
        status = err.code
    assert status == 400


def test_usage_is_logged_while_a_run_is_in_flight(tmp_path: Path) -> None:
    """What the live panel's spend and rate-limit waits read: ``usage`` events."""

    class Runtime:
        """Stops the logger after its fourth look: the test counts looks, not seconds."""

        calls = 0
        scope: anyio.CancelScope

        def usage(self) -> dict:
            self.calls += 1
            if self.calls == 4:
                self.scope.cancel()
            cost = 0.5 if self.calls < 3 else 1.0
            return {"by_role": {"agent": {"calls": self.calls, "cost_usd": cost, "retries": 1,
                                          "errors": 0, "prompt_tokens": 9}},
                    "rate_limited": {"openai/https://u:secret@x/m": 2}}

    store = RunStore.create(tmp_path, "u", "u-id", {})

    async def go() -> None:
        runtime = Runtime()
        with anyio.CancelScope() as runtime.scope:
            await log_usage(store, runtime, every_s=0.001)  # type: ignore[arg-type]

    anyio.run(go)
    store.close()
    usage = [e for e in store.events() if e["kind"] == "usage"]
    assert len(usage) == 4  # one event per look: every look found the usage changed
    assert "prompt_tokens" not in usage[0]["by_role"]["agent"]
    assert "secret" not in json.dumps(usage)
    assert usage_brief({})["by_role"] == {}


@pytest.mark.slow
def test_a_real_run_in_flight(tmp_path: Path) -> None:
    """``lens run`` in one process, ``lens view`` in another: the progress moves while the run
    is running, the run's usage events reach the panel, and the run ends complete."""
    require_view_extra()
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    config = tmp_path / "slow.yaml"
    config.write_text(
        "name: slow\n"
        f"dataset:\n  path: {ROOT / 'datasets' / 'standard.json'}\n"
        "adapters:\n  - name: sqlite_fts\n"
        "agent:\n  model: scripted/policy\n  options: {delay_s: 0.12}\n"
        "concurrency:\n  units: 2\n  questions: 4\n"
        f"out_dir: {tmp_path / 'runs'}\n", encoding="utf-8")
    (tmp_path / "runs").mkdir()
    run = subprocess.Popen([sys.executable, "-m", "lens", "run", str(config), "--quiet"],
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    try:
        with lens_view(tmp_path / "runs") as base:
            seen: list[tuple[str, int]] = []
            usage = False
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                runs = json.loads(get(base + "/api/runs")[2])["runs"]
                if runs:
                    name = runs[0]["name"]
                    prog = json.loads(get(f"{base}/api/runs/{name}/progress")[2])
                    seen.append((prog["status"], prog["questions"]["done"]))
                    usage = usage or not prog["display"]["live-limits"].startswith("not")
                    if prog["status"] == "complete":
                        break
                # Read again as soon as the viewer has answered: the scripted model's delay
                # on every call sets a floor on the run's length that a fast machine does not
                # shorten, and a loaded machine slows the run and the reads alike, so the
                # reads see the run move wherever the suite runs.
                time.sleep(0.05)
            running = [done for status, done in seen if status == "running"]
            assert len(set(running)) >= 3, seen  # it moved while the run was running
            assert seen[-1] == ("complete", 150), seen[-3:]
            assert usage, "no usage event reached the live panel"
            assert "Pre-flight checklist" in wait_ready(f"{base}/runs/{name}")
    finally:
        run.wait(timeout=240)
    assert run.returncode == 0, run.stderr.read() if run.stderr else ""


def test_ctrl_c_stops_the_viewer_cleanly(tmp_path: Path) -> None:
    require_view_extra()
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT
    from tests.support.signals import as_from_a_terminal

    proc = subprocess.Popen(
        [sys.executable, "-m", "lens", "view", str(tmp_path), "--port", "0"], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        **as_from_a_terminal())
    assert proc.stdout is not None
    assert "lens view:" in proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped" in out and "resume" not in err
