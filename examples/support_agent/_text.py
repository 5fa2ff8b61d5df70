"""Text helpers shared by the retriever and the offline model: tokens, sentences, token estimates."""

from __future__ import annotations

import math
import re

__all__ = ["STOPWORDS", "estimate_tokens", "normalize_token", "split_sentences", "tokenize"]

STOPWORDS = frozenset(
    """a an the and or but if of to in on at for from by with about as is are was were be been being
    do does did doing have has had i me my we our you your it its this that these those there here
    can could would should will shall may might must what which who whom when where why how
    not no so than too very just please hi hello thanks thank also get got any some all into up out
    am im i'm ive i've id i'd dont don't""".split()
)

# Words a customer uses for what the policies call by another name; both sides are mapped the same way.
_SYNONYMS = {
    "money": "refund",
    "reimburse": "refund",
    "reimbursement": "refund",
    "broken": "damage",
    "broke": "damage",
    "cracked": "damage",
    "smashed": "damage",
    "defective": "damage",
    "faulty": "damage",
    "login": "sign",
    "log": "sign",
    "signin": "sign",
    "abroad": "international",
    "overseas": "international",
    "canada": "international",
    "mexico": "international",
    "uk": "international",
    "germany": "international",
    "france": "international",
    "australia": "international",
    "japan": "international",
    "country": "international",
    "countries": "international",
    "delivery": "ship",
    "deliver": "ship",
    "delivered": "ship",
    "arrive": "ship",
    "package": "parcel",
    "parcel": "parcel",
    "card": "pay",
    "paypal": "paypal",
    "visa": "visa",
    "close": "delete",
    "remove": "delete",
    "erase": "delete",
    "guarantee": "warranty",
    "repair": "warranty",
    "lawyer": "legal",
    "attorney": "legal",
    "sue": "legal",
    "court": "legal",
    "escalate": "escalat",
    "escalated": "escalat",
    "escalation": "escalat",
    "human": "escalat",
    "manager": "escalat",
    "supervisor": "escalat",
}

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$'\"(])")


def normalize_token(token: str) -> str:
    """Map one lower-case word to its index form: synonyms first, then a light suffix stemmer."""
    token = _SYNONYMS.get(token, token)
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if len(token) > len(suffix) + 2 and token.endswith(suffix):
            stem = token[: -len(suffix)]
            if suffix == "ies":
                stem += "y"
            elif len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                stem = stem[:-1]
            elif len(stem) > 4 and stem.endswith("ll"):
                stem = stem[:-1]
            token = stem
            break
    if token.endswith("e") and len(token) > 4:
        token = token[:-1]
    return _SYNONYMS.get(token, token)


def tokenize(text: str) -> list[str]:
    """Split text into normalized content tokens (stop words dropped), in order."""
    out: list[str] = []
    for raw in _TOKEN.findall(text.lower()):
        if raw in STOPWORDS:
            continue
        out.append(normalize_token(raw))
    return out


def split_sentences(text: str) -> list[str]:
    """Split a paragraph into sentences (on ., ! or ? followed by a capital, digit or $)."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def estimate_tokens(text: str) -> int:
    """Estimate a model's token count for ``text`` (about four characters a token, at least 1)."""
    return max(1, math.ceil(len(text) / 4))
