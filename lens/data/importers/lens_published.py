"""Import a dataset file of the published LENS benchmark, adding what lens reads beyond it.

LENS files are already in lens's format (``lens run`` reads them as they are). Importing one
adds each question's conclusion where the source states one: a yes/no question whose canonical
answer opens with its verdict ("No. DNS metrics are stable throughout. ...") concludes that
verdict. Everything else is kept as published.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from lens.data.importers.common import Locator, conclusion_of, read_source
from lens.data.importers.records import DatasetJson


def import_lens(path: Path) -> DatasetJson:
    data = read_source(path)
    loc = Locator(path)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise loc.error((), "expected a LENS dataset: an object with 'scopes' and 'questions'")
    questions = []
    for qi, q in enumerate(data["questions"]):
        if not isinstance(q, dict) or not isinstance(q.get("ground_truth"), dict):
            raise loc.error(("questions", qi), "expected a question with a ground_truth object")
        truth = dict(q["ground_truth"])
        answer, prompt = truth.get("canonical_answer"), q.get("prompt")
        if "conclusion" not in truth and isinstance(answer, str) and isinstance(prompt, str):
            verdict = conclusion_of(answer, prompt)
            if verdict is not None:
                truth["conclusion"] = verdict
        questions.append({**q, "ground_truth": truth})
    # The published file, only its questions replaced (a LENS dataset, checked when written).
    data["questions"] = questions
    return cast(DatasetJson, data)
