"""Greedy decoding with a grammar, checked lazily, on a llama-cpp-python model.

llama-cpp-python applies a grammar to the whole vocabulary (about 150k tokens for Qwen) before
every sampled token, which more than halves generation speed on a small CPU. Like llama.cpp's own
sampler, this loop first takes the most likely token and asks the grammar about that one token;
only when the grammar rejects it is the grammar applied to the full vocabulary. At temperature 0
the result is the same token the full check would pick: the best token the grammar allows.

It keeps llama-cpp-python's prompt-prefix reuse: tokens already evaluated in the context (the
shared start of the conversation) are not evaluated again.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Decoded:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    reused_prefix: int


def eval_prompt(llm: Any, prompt_tokens: list[int]) -> int:
    """Evaluate ``prompt_tokens``, reusing the prefix already in the context; return its length.

    At least the last prompt token is evaluated again so that its logits are fresh.
    """
    cached = llm.input_ids[: llm.n_tokens].tolist()
    prefix = 0
    for a, b in zip(cached, prompt_tokens, strict=False):
        if a != b:
            break
        prefix += 1
    prefix = max(0, min(prefix, len(prompt_tokens) - 1))
    llm.n_tokens = prefix
    llm.eval(prompt_tokens[prefix:])
    return prefix


def last_logits(llm: Any) -> Any:
    """The logits after the last evaluated token (a numpy view, valid until the next eval)."""
    import llama_cpp as L

    return np.ctypeslib.as_array(L.llama_get_logits_ith(llm._ctx.ctx, -1),
                                 shape=(llm.n_vocab(),))


def greedy_constrained(
    llm: Any,
    prompt_tokens: list[int],
    gbnf: str | None,
    max_tokens: int,
    cancelled: threading.Event,
    stop: list[str] | None = None,
) -> Decoded:
    import llama_cpp as L

    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    prefix = eval_prompt(llm, prompt_tokens)

    grammar = None
    if gbnf is not None:
        grammar = L.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not grammar:
            raise ValueError("llama.cpp rejected the grammar")
    one = (L.llama_token_data * 1)()
    one_arr = L.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
    full = None
    full_np: Any = None
    out: list[int] = []
    finish = "length"
    try:
        for _ in range(max_tokens):
            if cancelled.is_set():
                finish = "cancelled"
                break
            logits = np.ctypeslib.as_array(L.llama_get_logits_ith(llm._ctx.ctx, -1),
                                           shape=(n_vocab,))
            token = int(np.argmax(logits))
            if grammar is not None:
                one[0].id = token  # type: ignore[assignment]  # ctypes converts an int field
                one[0].logit = float(logits[token])
                one[0].p = 0.0
                one_arr.size = 1
                one_arr.selected = -1
                L.llama_sampler_apply(grammar, ctypes.byref(one_arr))
                if not np.isfinite(one[0].logit):
                    if full is None:
                        full = (L.llama_token_data * n_vocab)()
                        full_np = np.ctypeslib.as_array(full)
                    full_np["id"] = np.arange(n_vocab, dtype=np.int32)
                    full_np["logit"] = logits
                    full_np["p"] = 0.0
                    arr = L.llama_token_data_array(data=full, size=n_vocab, selected=-1,
                                                   sorted=False)
                    L.llama_sampler_apply(grammar, ctypes.byref(arr))
                    best = int(np.argmax(full_np["logit"]))
                    if not np.isfinite(full_np["logit"][best]):
                        finish = "stop"  # nothing is allowed: the grammar is complete
                        break
                    token = int(full_np["id"][best])
            if L.llama_vocab_is_eog(vocab, token):
                finish = "stop"
                break
            if grammar is not None:
                L.llama_sampler_accept(grammar, token)
            out.append(token)
            llm.eval([token])
            if stop:
                text = llm.detokenize(out).decode("utf-8", errors="ignore")
                if any(s in text for s in stop):
                    finish = "stop"
                    break
    finally:
        if grammar is not None:
            L.llama_sampler_free(grammar)
    text = llm.detokenize(out).decode("utf-8", errors="replace")
    if stop:
        cut = min((text.index(s) for s in stop if s in text), default=None)
        if cut is not None:
            text = text[:cut]
    return Decoded(text=text, prompt_tokens=len(prompt_tokens), completion_tokens=len(out),
                   finish_reason=finish, reused_prefix=prefix)
