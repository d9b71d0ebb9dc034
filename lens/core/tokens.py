"""The rough token count lens uses where no tokenizer is at hand: about four characters a token.

Scripted backends report it as usage, rate limiters reserve it before a call, and offline
policies bill with it; one definition keeps their numbers comparable."""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Tokens in ``text``: at least one for any non-empty text, zero for none."""
    return max(1, len(text) // CHARS_PER_TOKEN) if text else 0


def estimate_chars_tokens(chars: int) -> int:
    """Tokens in ``chars`` characters of text spread over several pieces."""
    return chars // CHARS_PER_TOKEN
