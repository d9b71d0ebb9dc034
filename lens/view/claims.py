"""Claims folders in the viewer: a folder ``lens claims check --out`` wrote (it holds
``claims.json`` and no ``manifest.json``) is listed beside the runs, and its page shows the one
table (published | reproduced | each lens scorer | leniency) with the hashes of its inputs and
the condition each figure was scored under, read from ``claims.json`` alone."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lens.claims.output import FORMAT
from lens.report.documents.document import e
from lens.view.files import Unreadable, inside, read_json
from lens.view.pages import link, shell, table

CLAIMS = "claims.json"


def claims_url(name: str) -> str:
    return "/claims/" + quote(name, safe="")


def claims_names(folder: Path) -> list[str]:
    """The claims folders directly under ``folder`` (a run directory is never one)."""
    try:
        found = [p.name for p in folder.iterdir() if not p.name.startswith(".")
                 and os.path.lexists(p / CLAIMS) and not os.path.lexists(p / "manifest.json")]
    except OSError:
        return []
    return sorted(found)


def read_claims_json(folder: Path, name: str) -> dict[str, Any]:
    """The folder's claims.json, read through the viewer's guards (inside the folder, regular,
    bounded, depth-limited); Unreadable when it is not a claims file lens wrote."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise Unreadable(f"{name!r} is not a claims folder of {folder}")
    root = folder / name
    if not root.resolve().is_relative_to(folder.resolve()):
        raise Unreadable(f"{name} is a link to a folder outside {folder}; the viewer reads only "
                         "the folders inside the folder it was given")
    data = read_json(inside(root, CLAIMS))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise Unreadable(f"{name}/{CLAIMS} is not a file lens claims wrote (format "
                         f"{FORMAT!r} expected)")
    return data


def _dicts(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _num(value: object, scale: float = 100.0) -> str:
    return f"{float(value) * scale:.1f}" if isinstance(value, int | float) else "unknown"


def interval(est: object) -> str:
    if not isinstance(est, dict) or not isinstance(est.get("mean"), int | float):
        return "unknown"
    text = _num(est["mean"])
    if isinstance(est.get("low"), int | float) and isinstance(est.get("high"), int | float):
        text += f" [{_num(est['low'])}, {_num(est['high'])}]"
    return text


def _pct(value: object) -> str:
    return f"{float(value):.2f}" if isinstance(value, int | float) else "-"


def _condition(cond: object) -> str:
    if not isinstance(cond, dict):
        return "-"
    return ", ".join(f"{k}={v}" for k, v in cond.items())


def summary(data: Mapping[str, Any]) -> dict[str, str]:
    """The folder's line on the index."""
    rep = data.get("reproduced") if isinstance(data.get("reproduced"), dict) else {}
    overall = rep.get("overall") if isinstance(rep, dict) else None
    pub = data.get("published") if isinstance(data.get("published"), dict) else None
    published = (pub or {}).get("figures") or {}
    inputs = ", ".join(f"{Path(str(i.get('path', ''))).name} (sha256 "
                       f"{str(i.get('sha256', ''))[:12]})" for i in _dicts(data.get("inputs")))
    return {"reader": str(data.get("reader")), "benchmark": str(data.get("benchmark")),
            "published": _pct(published.get("overall")) if isinstance(published, dict) else "-",
            "reproduced": _pct(overall.get("percent")) if isinstance(overall, dict) else "-",
            "scorers": str(len(_dicts(data.get("scorers")))), "inputs": inputs}


def claims_list(items: Sequence[tuple[str, dict[str, str]]], problems: Sequence[str]) -> str:
    """The index's claims section (empty when there is none and nothing went wrong)."""
    if not items and not problems:
        return ""
    rows = [[link(claims_url(name), name, **{"class": "claims"}), e(s["reader"]),
             e(s["benchmark"]), e(s["published"]), e(s["reproduced"]), e(s["scorers"]),
             f"<span class='meta'>{e(s['inputs'])}</span>"] for name, s in items]
    return ("<h2>Published claims checked</h2><p class='meta'>folders written by <code>lens "
            "claims check --out</code></p>"
            + "".join(f"<p class='warn'>{e(p)}</p>" for p in problems)
            + table(["claims", "reader", "benchmark", "published %", "reproduced %",
                     "lens scorers", "inputs"], rows, table_id="claims"))


def _leniency(data: Mapping[str, Any], scorer: str) -> str:
    for x in _dicts(data.get("leniency")):
        if x.get("scorer") == scorer:
            return interval(x.get("overall"))
    return "-"


def _reproduced_row(data: Mapping[str, Any], shown: str, dash: list[str]) -> list[str]:
    """The row of the publisher's own verdicts over all answers, with the arithmetic chosen."""
    rep = data.get("reproduced") if isinstance(data.get("reproduced"), dict) else {}
    overall = rep.get("overall") if isinstance(rep, dict) else {}
    overall = overall if isinstance(overall, dict) else {}
    arithmetic = rep.get("arithmetic") if isinstance(rep, dict) else None
    return ["reproduced (publisher's verdicts, all answers)", e(shown),
            e(str(overall.get("n", "-"))), "-", "-", "-", *dash,
            e("arithmetic " + _condition(arithmetic) + f" ({rep.get('chosen')})"
              if isinstance(rep, dict) else "-")]


def _scorer_row(data: Mapping[str, Any], sc: Mapping[str, Any],
                reruns: Sequence[Mapping[str, Any]]) -> list[str]:
    """A lens scorer's row: its figure, agreement with the publisher, leniency, its figure in
    each rerun and its condition."""
    agr = sc.get("agreement") if isinstance(sc.get("agreement"), dict) else None
    kappa = agr.get("kappa") if agr else None
    est = sc.get("estimate") if isinstance(sc.get("estimate"), dict) else {}
    values = sc.get("values") if isinstance(sc.get("values"), dict) else {}
    known = sum(v is not None for v in values.values()) if isinstance(values, dict) else 0
    return [e(str(sc.get("name"))), e(interval(est)), e(str(known)),
            "-" if not isinstance(kappa, int | float) else f"{kappa:.2f}",
            "-" if agr is None else e(str(len(_dicts(sc.get("disagreements"))))),
            e(_leniency(data, str(sc.get("name")))),
            *(e(_rerun_value(r, str(sc.get("name")))) for r in reruns),
            e(_condition(sc.get("condition")))]


def _input_items(data: Mapping[str, Any]) -> list[str]:
    """The inputs' hashes, the mapping's last."""
    inputs = [f"{e(i.get('path'))}: sha256 <code>{e(i.get('sha256'))}</code>, "
              f"{e(i.get('bytes'))} bytes" for i in _dicts(data.get("inputs"))]
    mapping = data.get("mapping")
    if isinstance(mapping, dict):
        inputs.append(f"mapping {e(mapping.get('path'))}: sha256 <code>"
                      f"{e(mapping.get('sha256'))}</code>")
    return inputs


def _notes_block(data: Mapping[str, Any]) -> list[str]:
    notes = data.get("notes")
    if not isinstance(notes, list) or not notes:
        return []
    return ["<h2>Notes</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>"]


def claims_page(name: str, data: Mapping[str, Any]) -> str:
    """The one table, then the inputs' hashes and each figure's condition."""
    s = summary(data)
    reruns = _dicts(data.get("reruns"))
    rerun_head = [f"rerun {r.get('name')}" for r in reruns]
    dash = ["-"] * len(reruns)
    rows: list[list[str]] = [
        ["published", e(s["published"]), "-", "-", "-", "-", *dash,
         e(_published_source(data))],
        _reproduced_row(data, s["reproduced"], dash),
        *(_scorer_row(data, sc, reruns) for sc in _dicts(data.get("scorers")))]
    body = [f"<h1>Reproducing a published claim: {e(name)}</h1>",
            f"<p class='meta'>reader {e(s['reader'])}, benchmark {e(s['benchmark'])}, "
            f"{e(data.get('items'))} answers, {e(data.get('judge_runs'))} judge run(s) stored; "
            f"lens {e(data.get('lens_version'))}</p>",
            "<p>Figures in percent with 95% intervals clustered by conversation. kappa: "
            "Cohen's kappa against the publisher's verdicts on the same answers. Leniency: the "
            "share of lens's wrong answers the scorer accepts.</p>",
            table(["figure", "value", "n", "kappa vs publisher", "disagreements", "leniency",
                   *rerun_head, "condition"], rows, table_id="claims-summary"),
            "<h2>Inputs</h2><ul>" + "".join(f"<li>{i}</li>" for i in _input_items(data))
            + "</ul>",
            *_rerun_blocks(reruns), *_notes_block(data),
            f"<p class='meta'>The full report: {e(name)}/report.html; every value per "
            "answer and every disagreement: claims.json.</p>"]
    return shell(f"claims {name}", "".join(body), [(claims_url(name), name)])


def _published_source(data: Mapping[str, Any]) -> str:
    pub = data.get("published")
    if not isinstance(pub, dict):
        return "no published figure given"
    return f"{pub.get('source')}, row {pub.get('row')}"


def _rerun_value(rerun: Mapping[str, Any], scorer: str) -> str:
    for sc in _dicts(rerun.get("scorers")):
        if sc.get("name") == scorer:
            values = sc.get("values")
            known = (sum(v is not None for v in values.values())
                     if isinstance(values, dict) else 0)
            return f"{interval(sc.get('estimate'))} (n={known})"
    return "-"


def _rerun_blocks(reruns: Sequence[Mapping[str, Any]]) -> list[str]:
    if not reruns:
        return []
    items = [f"rerun {e(r.get('name'))}: {e(r.get('path'))}, condition <code>"
             f"{e(r.get('condition_hash'))}</code>, adapter {e(r.get('adapter'))}; "
             f"{e(r.get('matched'))} of the publisher's questions matched, "
             f"{e(r.get('not_scored'))} of them not finished by the run, "
             f"{e(r.get('unmatched_publisher'))} unmatched, {e(r.get('unmatched_run'))} of the "
             "run's questions unmatched" for r in reruns]
    return ["<h2>Reruns</h2><ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"]
