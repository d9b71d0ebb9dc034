"""The words the fact matcher reads: function words, stems, denials and directions.

Kept apart from the matching logic so that the vocabulary can be read (and argued with) in one
place. Everything here works on lower-case text.
"""

from __future__ import annotations

import functools
import re
import unicodedata

STOPWORDS = frozenset("""
a an and are as at be been being but by can could did do does done for from had has have how
i if in into is it its itself may might more most much of on onto or our over per so some such
than that the their them then there these they this those through to too up upon us was we
were what when where which while who whom why will with within would yet you your also all any
each other only very just about across after against along among around before behind below
beneath beyond during until via whether both either own same s t
stay stays stayed staying remain remains remained remaining hold holds held holding keep keeps
kept keeping go goes went gone going get gets got getting become becomes became continue
continues continued continuing still now since ever really essentially roughly about nearly
almost approximately around sat sit sits sitting was
""".split()) - {"up", "below"}

# Cues that deny what their clause says. "n't" endings are caught separately.
NEGATION_WORDS = frozenset(
    "not no never none neither nor cannot nothing nobody nowhere hardly unrelated unlikely "
    "excluded".split()
)
NEGATION_PHRASES = ("no longer", "ruled out", "rule out", "ruling out", "rules out",
                    "red herring", "coincidence", "coincidental", "rather than", "instead of",
                    "as opposed to", "stopped", "ceased", "not responsible")
# Cues that deny a whole statement: "It is not true that <fact>".
SENTENTIAL_NEGATION = re.compile(
    r"\b(?:it\s+is|it's|that\s+is|that's|this\s+is)\s+(?:not\s+true|untrue|false|incorrect|wrong)"
    r"|\bnot\s+the\s+case\b|\bfalse\s+that\b|\buntrue\s+that\b|\bno\s+evidence\s+that\b"
)
# Doubt and condition, which govern the rest of their sentence: "it would be wrong to say",
# "I doubt that", "only if", "if … were", "suppose". "No doubt" and "without doubt" assert.
SENTENCE_DOUBT = re.compile(
    r"\b(?:wrong|mistaken|incorrect|misleading|false)\s+to\s+(?:say|claim|conclude|think|state)"
    r"|(?<!\bno\s)(?<!\bwithout\s)(?<!\bbeyond\s)\bdoubt(?:s|ed|ful)?\b|\bquestionable\b"
    r"|\bhypothetical(?:ly)?\b|\bonly\s+if\b|\bif\b[^.;:]*\b(?:were|had\s+been|would)\b"
    r"|\bunless\b|\bsuppos(?:e|ing)\b|\bimagine\b"
)

# Direction of change. Each word maps to one token, so "rose", "climbing" and "elevated" all
# meet "increasing", and "decreasing" never does. A "spike" is no direction: it is the
# one-off that a sustained rise is told apart from.
UP, DOWN, FLAT, NORMAL = "⟨up⟩", "⟨down⟩", "⟨flat⟩", "⟨normal⟩"
_DIRECTIONS: list[tuple[str, re.Pattern[str]]] = [
    (UP, re.compile(
        r"^(?:increas\w*|ris(?:e|es|ing|en)|rose|grow\w*|grew|climb\w*|escalat\w*|elevat\w*"
        r"|high(?:er|est)?|rais(?:e|ed|es|ing)|up|upwards?|jump\w*|surg\w*|soar\w*"
        r"|doubl\w*|tripl\w*|wors\w*|degrad\w*|deteriorat\w*|exceed\w*|above|creep\w*|crept"
        r"|balloon\w*)$")),
    (DOWN, re.compile(
        r"^(?:decreas\w*|declin\w*|drop\w*|fall\w*|fell|lower\w*|low|down|downwards?|shrink\w*"
        r"|shrank|shrunk|reduc\w*|eas(?:e|ed|es|ing)|dip|dips|dipped|dipping|slump\w*|plung\w*"
        r"|below)$")),
    (FLAT, re.compile(
        r"^(?:flat|stable|stabili[sz]\w*|steady|unchanged|constant|level|levell?ed"
        r"|levell?ing|plateau\w*|stagnat\w*)$")),
    (NORMAL, re.compile(r"^(?:normal|normali[sz]\w*|recover\w*|resolv\w*|improv\w*)$")),
]
DIRECTIONS = frozenset(d for d, _ in _DIRECTIONS)
# Phrases whose words alone would not tell the direction (or the denial: "has not stopped
# rising" is still rising, "there is no doubt that" asserts).
_PHRASES = [(re.compile(r"\b(?:not|never|n't)\s+(?:\w+\s+)?(?:stopped|ceased)\b"), " kept "),
            (re.compile(r"\b(?:took|take|takes|taken|taking)\s+off\b"), " soared "),
            (re.compile(r"\b(?:no|without|beyond)\s+(?:a\s+)?doubt\b"), " certainly "),
            (re.compile(r"\bwent\s+up\b|\bgone\s+up\b|\bgoing\s+up\b"), " rose "),
            (re.compile(r"\bwent\s+down\b|\bgone\s+down\b|\bgoing\s+down\b"), " fell ")]

# A few paraphrases of words that LENS-style findings use, each mapped to one stem.
_SYNONYMS = {
    **dict.fromkeys("cause causes caused causing culprit culprits driver drivers drove "
                    "trigger triggers triggered responsible blame blamed blaming".split(), "caus"),
    **dict.fromkeys("explain explains explained explaining explanation explanations".split(),
                    "explain"),
    **dict.fromkeys("error errors mistake mistakes erroneous".split(), "error"),
    **dict.fromkeys("figure figures number numbers value values reading readings".split(),
                    "figur"),
}

# What the stemmer cannot be traced back from by a word's first letters: a synonym's stem (any
# of several words), and the words normalise writes in place of a phrase.
_SYNONYM_HEADS = frozenset(v[:4] for v in _SYNONYMS.values())
_REWRITTEN = " ".join(repl.strip() for _, repl in _PHRASES)


def may_hold_stem(word_stem: str, folded: str) -> bool:
    """Whether text whose :func:`fold` is ``folded`` could hold a word with this stem, or one
    sharing its first four letters (the matcher's inflection rule): a necessary condition
    read from characters, without tokenising. :func:`stem` only strips endings, so a stem's
    first four letters are written in its word, except for a direction's or synonym's stem
    (any of several words) and a short "-ies"/"-ied" word, whose "i" the stem writes as "y"."""
    head = word_stem[:4]
    if word_stem in DIRECTIONS or head in _SYNONYM_HEADS or head in _REWRITTEN:
        return True
    return head in folded or (head.endswith("y") and head[:-1] + "i" in folded)


_SUFFIXES = ("ically", "ations", "ation", "ities", "ingly", "ments", "ment", "ness", "ings",
             "ing", "edly", "ions", "ion", "ives", "ive", "ers", "er", "ed", "es", "ly", "al",
             "s", "e")
TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SUPERSCRIPTS = str.maketrans({"⁰": "^0", "¹": "^1", "²": "^2", "³": "^3", "⁴": "^4",
                               "⁵": "^5", "⁶": "^6", "⁷": "^7", "⁸": "^8", "⁹": "^9"})


def fold(text: str) -> str:
    """Lower-case and Unicode-fold, keeping every character's meaning ("10⁹" -> "10^9")."""
    t = unicodedata.normalize("NFKC", text.translate(_SUPERSCRIPTS)).lower()
    return t.replace("\u2019", "'").replace("\u2018", "'")


def normalise(text: str) -> str:
    """Fold, drop possessives and turn joining punctuation into spaces."""
    t = fold(text)
    t = re.sub(r"(?<=[a-z0-9])'s\b|(?<=s)'(?=\s|$)", "", t)
    for pattern, repl in _PHRASES:
        t = pattern.sub(repl, t)
    # Hyphens, slashes and underscores join words ("geo-lookup", "read/write"): split them.
    return re.sub(r"(?<=[a-z0-9])[-_/](?=[a-z0-9])", " ", t)


def direction(word: str) -> str | None:
    for token, pattern in _DIRECTIONS:
        if pattern.match(word):
            return token
    return None


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A deliberately crude suffix stripper: enough to meet inflected forms of one word.
    Direction words become their direction token, a few paraphrases one shared stem."""
    d = direction(word)
    if d:
        return d
    if word in _SYNONYMS:
        return _SYNONYMS[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    return _strip_suffixes(word)


def _strip_suffixes(word: str) -> str:
    """``word`` without up to two of its suffixes (at least three letters left), and without a
    doubled final consonant the suffix left behind."""
    w = word
    for _ in range(2):
        for suffix in _SUFFIXES:
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                break
        else:
            break
    # "stopped" -> "stopp" -> "stop"
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


def content_stems(normalised: str) -> list[str]:
    """The content words of already normalised text as stems, in order."""
    out: list[str] = []
    for tok in TOKEN.findall(normalised):
        if tok in STOPWORDS or tok in NEGATION_WORDS or tok.endswith("n't"):
            continue
        if any(c.isdigit() for c in tok) or len(tok) < 2:
            continue  # figures, and initials such as the "F." of "F. Rossi"
        out.append(stem(tok))
    return out


def has_negation(text: str) -> bool:
    """Whether ``text`` (folded) denies something."""
    t = normalise(text)
    if any(p in t for p in NEGATION_PHRASES):
        return True
    return any(tok in NEGATION_WORDS or tok.endswith("n't") for tok in TOKEN.findall(t))

# Kinds a short gold may name in general ("an instrument") and the cases of each that state
# it ("the violin"): a case of the kind is a right answer to a question whose gold names only
# the kind. Plurals are read by lens.scoring.text.narrower.
KINDS: dict[str, frozenset[str]] = {
    "instrument": frozenset(
        "violin viola cello fiddle guitar ukulele piano keyboard drums drum flute clarinet "
        "saxophone sax trumpet trombone harp banjo mandolin harmonica accordion oboe tuba "
        "xylophone synthesizer organ bagpipes bass".split()),
    "pet": frozenset([
        *"dog puppy pup cat kitten turtle tortoise hamster rabbit bunny parrot budgie goldfish "
         "ferret snake lizard gecko".split(), "guinea pig"]),
    "sport": frozenset(
        "soccer football basketball tennis baseball volleyball hockey golf rugby cricket "
        "badminton swimming cycling skiing snowboarding surfing boxing wrestling".split()),
    "language": frozenset(
        "spanish french german italian portuguese japanese chinese mandarin korean arabic "
        "russian hindi dutch greek latin".split()),
}
KIND_NAMES = {"instrument": "instrument", "instruments": "instrument", "pet": "pet",
              "pets": "pet", "sport": "sport", "sports": "sport", "language": "language",
              "languages": "language"}
