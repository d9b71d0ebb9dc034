"""The LongMemEval protocol: one yes/no judge call per question with the prompt of its type.

Definitions (implemented here from LongMemEval's ``src/evaluation/evaluate_qa.py`` and
``print_qa_metrics.py``, Wu et al., 2025): the judge sees the question, the gold answer and the
response, and says whether the response contains the correct answer (equivalent answers and
answers with every intermediate step count; a subset of the required information does not).
Temporal-reasoning questions tolerate off-by-one errors in counts of days, weeks, months;
knowledge-update questions accept a response that mentions earlier information as long as the
updated answer is the one given; single-session-preference questions are graded against a rubric
(the response need not reflect every point, only recall and use the user's information
correctly). Abstention questions are those whose id contains ``_abs``: the judge says whether the
response identifies the question as unanswerable. The judge's reply is read as correct when it
contains "yes" (case-insensitive), as the script reads it; it is asked with temperature 0 and at
most 10 tokens. Results are reported per question type (abstention questions stay in their type),
as task-averaged accuracy (the mean of the six types), overall accuracy, and abstention accuracy.
The published numbers use gpt-4o-2024-08-06 as the judge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from lens.core.errors import UserError
from lens.data.dataset import Question
from lens.scoring.protocols.base import Protocol, ProtocolTask, mean

TYPES = ("single-session-user", "single-session-preference", "single-session-assistant",
         "multi-session", "temporal-reasoning", "knowledge-update")
METRIC = "longmemeval_accuracy"

_INTRO = ("I will give you a question, a correct answer, and a response from a model. Answer yes "
          "if the response contains the correct answer; otherwise answer no. If the response is "
          "equivalent to the correct answer, or contains all the intermediate steps to reach "
          "it, also answer yes. If the response contains only part of the information the "
          "answer requires, answer no.")
_ASK = ("\n\nQuestion: {question}\n\nCorrect Answer: {gold}\n\nModel Response: {answer}\n\n"
        "Is the model response correct? Answer yes or no only.")

PROMPTS: dict[str, str] = {
    "longmemeval-factual@1": _INTRO + _ASK,
    "longmemeval-temporal@1": _INTRO + (
        " Also, do not penalise off-by-one errors in a number of days: if the question asks "
        "for a number of days, weeks, months and so on, and the response is off by one (say "
        "19 days where the answer is 18), the response is still correct.") + _ASK,
    "longmemeval-update@1": _INTRO + (
        " If the response gives some earlier information together with an updated answer, it "
        "is correct as long as the updated answer is the required one.") + _ASK,
    "longmemeval-preference@1": (
        "I will give you a question, a rubric describing the desired personalised response, "
        "and a response from a model. Answer yes if the response satisfies the desired "
        "response; otherwise answer no. The response need not reflect every point of the "
        "rubric: it is correct as long as it recalls and uses the user's personal information "
        "correctly.\n\nQuestion: {question}\n\nRubric: {gold}\n\nModel Response: {answer}\n\n"
        "Is the model response correct? Answer yes or no only."),
    "longmemeval-abstention@1": (
        "I will give you an unanswerable question, an explanation, and a response from a "
        "model. Answer yes if the model correctly identifies the question as unanswerable. "
        "The model may say the information is incomplete, or that some other information is "
        "given but not the information asked for.\n\nQuestion: {question}\n\nExplanation: "
        "{gold}\n\nModel Response: {answer}\n\nDoes the model correctly identify the question "
        "as unanswerable? Answer yes or no only."),
}
_BY_TYPE = {"single-session-user": "longmemeval-factual@1",
            "single-session-assistant": "longmemeval-factual@1",
            "multi-session": "longmemeval-factual@1",
            "temporal-reasoning": "longmemeval-temporal@1",
            "knowledge-update": "longmemeval-update@1",
            "single-session-preference": "longmemeval-preference@1"}


def is_abstention(q: Question) -> bool:
    """LongMemEval marks unanswerable questions by ``_abs`` in their id."""
    return "_abs" in q.question_id or q.meta.get("abstention") is True


def prompt_id(q: Question) -> str:
    return "longmemeval-abstention@1" if is_abstention(q) else _BY_TYPE[_type(q)]


def _type(q: Question) -> str:
    return str(q.meta.get("question_type"))


class LongMemEvalProtocol(Protocol):
    name = "longmemeval"
    version = 1
    title = "LongMemEval"
    group_label = "question type"
    group_order = TYPES
    metrics = (METRIC,)
    published_judge = "openai/gpt-4o-2024-08-06"
    prompts = PROMPTS
    source = "LongMemEval's src/evaluation/evaluate_qa.py and print_qa_metrics.py"

    takes_prompt_file = True

    def read_prompt_file(self, path: Path, text: str) -> dict[str, str]:
        """The official ``src/evaluation/evaluate_qa.py`` (its ``get_anscheck_prompt``: one
        template per question type, one for abstention), or a mapping of prompt ids."""
        if path.suffix != ".py":
            return super().read_prompt_file(path, text)
        return official_prompts(path, text)

    def check(self, q: Question) -> str | None:
        if _type(q) not in _BY_TYPE:
            return (f"question {q.question_id} has no LongMemEval question type in "
                    f"meta.question_type (got {q.meta.get('question_type')!r}; import the data "
                    "with `lens datasets import --format longmemeval`)")
        return None

    def group(self, q: Question) -> str:
        return _type(q)

    def mechanical(self, q: Question, answer: str) -> dict[str, float | None]:
        # Not a score: it marks the questions abstention accuracy is computed over.
        return {"longmemeval_abstention": 1.0 if is_abstention(q) else 0.0}

    def tasks(self, q: Question, answer: str) -> dict[str, ProtocolTask]:
        pid = prompt_id(q)
        prompt = self.prompts[pid].format(question=q.prompt, gold=q.ground_truth.canonical_answer,
                                     answer=answer)
        return {METRIC: ProtocolTask(pid, prompt, max_tokens=10)}

    def parse(self, prompt_id: str, text: str) -> float | None:
        return 1.0 if "yes" in text.lower() else 0.0

    def overall(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                ) -> dict[str, float | None]:
        per_type = [mean([m.get(METRIC) for g, m in rows if g == t]) for t in TYPES]
        present = [v for v in per_type if v is not None]
        return {
            METRIC: mean([m.get(METRIC) for _, m in rows]),
            # The script averages all six types; with a type absent it is not defined.
            "longmemeval_task_averaged": (sum(present) / len(present)
                                          if len(present) == len(TYPES) else None),
            "longmemeval_abstention_accuracy": mean(
                [m.get(METRIC) for _, m in rows if m.get("longmemeval_abstention") == 1.0]),
        }


def official_prompts(path: Path, text: str) -> dict[str, str]:
    """The judge templates of LongMemEval's ``evaluate_qa.py``, read from its source (never
    run): each ``template = "..."`` of ``get_anscheck_prompt`` under the question types its
    branch tests, the branch outside ``not abstention`` as the abstention prompt. Its positional
    ``{}`` become lens's ``{question}``, ``{gold}``, ``{answer}`` (the order it formats them)."""
    where = f"scoring.judge_prompt_file: {path}"
    try:
        return _official_prompts(where, text)
    except (RecursionError, MemoryError):
        # CPython's parser and lens's walk of its tree recurse with the source's nesting.
        raise UserError(f"{where}: Python source nested too deeply to be LongMemEval's "
                        "src/evaluation/evaluate_qa.py") from None


def _official_prompts(where: str, text: str) -> dict[str, str]:
    fn = _anscheck_function(where, text)
    found: dict[str, str] = {}
    problems: list[str] = []
    for types, template in _branches(fn.body, abstention=False):
        pids = {"longmemeval-abstention@1"} if types is None else {
            _BY_TYPE[t] for t in types if t in _BY_TYPE}
        named = _named_template(template)
        if named is None:
            problems.append(f"the template for {sorted(pids)} does not take exactly three {{}}")
            continue
        found.update(dict.fromkeys(pids, named))
    missing = sorted(set(PROMPTS) - set(found))
    if missing:
        problems.append(f"no template found for {', '.join(missing)}")
    if problems:
        raise UserError(f"{where}: " + "; ".join(problems))
    return found


def _anscheck_function(where: str, text: str) -> ast.FunctionDef:
    """The script's ``get_anscheck_prompt``; refused when the text is no Python or lacks it."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise UserError(f"{where}: not Python source (line {exc.lineno}): give LongMemEval's "
                        "src/evaluation/evaluate_qa.py") from None
    fn = next((n for n in ast.walk(tree)
               if isinstance(n, ast.FunctionDef) and n.name == "get_anscheck_prompt"), None)
    if fn is None:
        raise UserError(f"{where}: no function get_anscheck_prompt; give LongMemEval's "
                        "src/evaluation/evaluate_qa.py")
    return fn


def _named_template(template: str) -> str | None:
    """A template of three ``{}`` with the question, gold and answer named in them; None for
    any other template."""
    parts = template.split("{}")
    if len(parts) != 4 or any("{" in p or "}" in p for p in parts):
        return None
    return parts[0] + "{question}" + parts[1] + "{gold}" + parts[2] + "{answer}" + parts[3]


def _template_text(node: ast.stmt) -> str | None:
    """The string of a ``template = "..."`` statement; None for any other statement."""
    if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "template" for t in node.targets) and \
            isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return node.value.value
    return None


def _branches(body: list[ast.stmt], abstention: bool
              ) -> Iterator[tuple[set[str] | None, str]]:
    """(question types or None for abstention, template) for each ``template = "..."``."""
    for node in body:
        template = _template_text(node)
        if template is not None:
            yield (None if abstention else set()), template
        elif isinstance(node, ast.If):
            yield from _if_branches(node, abstention)


def _if_branches(node: ast.If, abstention: bool) -> Iterator[tuple[set[str] | None, str]]:
    """The templates of an ``if``: ``if not abstention`` splits the abstention template from
    the others; any other test names the question types (its strings) of its body's
    templates."""
    test = node.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        # if not abstention: ... else: (the abstention template)
        yield from _branches(node.body, abstention=False)
        yield from _branches(node.orelse, abstention=True)
        return
    types = {c.value for c in ast.walk(test)
             if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    for t, template in _branches(node.body, abstention):
        yield (None if t is None else (t or types)), template
    yield from _branches(node.orelse, abstention)
