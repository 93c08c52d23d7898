"""Rule-based query denoisers: the CLQ sweep's "denoise" rewriter and notebook 03's mitigation.

Dallaire compares retrieval stacks with and without query rewriting/denoising (section 4.1,
"End-to-end retrieval ... with/without query rewriting"; section 4.4.1: conversational noise,
greetings, fillers and social padding, carries no task semantics but moves the query vector;
section 6: "make rewrite/denoise the default and enforce Unicode hygiene"). This is the cheap
end of that comparison, next to the LLM rewriter (:class:`ragnb.rewrite.LLMRewriter`): no model,
microseconds per query.

:func:`denoise_query` has two rule sets (``rules``):

* ``"normalise"`` (the "denoise" value of the CLQ sweep's rewriting axis, applied to every
  query): Unicode NFKC normalisation, lower-casing, removal of emoji and symbols, removal of
  greetings followed by punctuation ("Hi!", "Hello,") and of stop-phrases (politeness, "quick
  question", "can you tell me", "thanks in advance"...) wherever they stand, punctuation to
  spaces (keeping the hyphens, apostrophes, dots and commas inside words and numbers:
  "e-mail", "l'eau", "3.5", "1,000"), removal of filler words ("um", "basically",
  "please"...), and white space collapsed. A rewrite that would leave nothing returns the
  normalised, lower-cased query instead.
* ``"trim"`` (the conversational-noise study of notebook 03,
  :func:`ragnb.studies.diagnostics.denoise`): emoji removed, then regular expressions that describe
  the *kind* of phrase strip the lead-in (greetings, filler lead-ins, apologies, first-person
  asides ending in an ellipsis) from the start and the closing ("Thanks!") from the end,
  keeping the question's case and punctuation.

References
----------
Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv:2511.09545, sections 4.1, 4.4.1 and 6.
"""

from __future__ import annotations

import re
import unicodedata

from ragnb.errors import InputError

__all__ = ["FILLER_WORDS", "GREETINGS", "RULES", "STOP_PHRASES", "denoise_query"]

#: Phrases that carry no information need, by language (matched on whole words, lower case).
STOP_PHRASES: dict[str, tuple[str, ...]] = {
    "en": (
        "sorry to bother you",
        "sorry for the trouble",
        "quick question",
        "one question",
        "just curious",
        "i was wondering",
        "i am wondering",
        "i'm wondering",
        "i would like to know",
        "i'd like to know",
        "i want to know",
        "can you tell me",
        "could you tell me",
        "can you please tell me",
        "could you please tell me",
        "please tell me",
        "do you know",
        "thanks in advance",
        "thank you in advance",
        "many thanks",
        "thank you",
        "thanks",
        "cheers",
        "any help is appreciated",
        "any help appreciated",
    ),
    "fr": (
        "désolé de vous déranger",
        "désolée de vous déranger",
        "petite question",
        "une question",
        "je me demandais",
        "je voudrais savoir",
        "j'aimerais savoir",
        "pouvez-vous me dire",
        "pourriez-vous me dire",
        "peux-tu me dire",
        "merci d'avance",
        "merci beaucoup",
        "merci",
        "bonne journée",
        "toute aide est la bienvenue",
    ),
}

#: Greetings, dropped only when punctuation or the end of the query follows them ("Hi!",
#: "Hello,"), so that "hello world program" keeps its words.
GREETINGS: dict[str, tuple[str, ...]] = {
    "en": (
        "hi there",
        "hello there",
        "hey there",
        "hi",
        "hello",
        "hey",
        "good morning",
        "good afternoon",
        "good evening",
    ),
    "fr": ("bonjour à tous", "bonjour", "bonsoir", "salut", "coucou"),
}

#: Filler words dropped wherever they stand as whole words.
FILLER_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        {"um", "umm", "uh", "uhh", "uhm", "erm", "er", "hmm", "basically", "please", "kindly"}
    ),
    "fr": frozenset({"euh", "heu", "bah", "ben", "stp", "svp"}),
}

# emoji, pictographs, dingbats, arrows, variation selectors and joiners, skin tones
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u2190-\u21ff\ufe0f\u200d\U0001f3fb-\U0001f3ff]"
)
# punctuation outside words and numbers: any character that is not a letter, digit, space or
# one of - ' . , between two word characters
_PUNCT = re.compile(r"(?:(?<!\w)[-'.,]|[-'.,](?!\w)|[^\w\s\-'.,])+", re.UNICODE)


def _alternation(phrases: tuple[str, ...]) -> str:
    """Whole-word alternation of ``phrases``, longest first."""
    body = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    return r"(?<![\w'-])(?:" + body + r")(?![\w'-])"


_PHRASE_RE = {
    lang: re.compile(
        _alternation(GREETINGS[lang]) + r"(?=\s*(?:[!,.:;]|$))|" + _alternation(phrases),
        re.UNICODE,
    )
    for lang, phrases in STOP_PHRASES.items()
}

# ----------------------------------------------------------------------------- "trim" rules

_TRIM_FLAGS = re.IGNORECASE | re.UNICODE
# lead-ins, matched repeatedly from the start of the query
_LEAD = {
    "en": [
        # greetings: "Hi!", "Hello,", "Hey there!", "Good morning!"
        r"(?:hi|hello|hey|good\s+(?:morning|afternoon|evening))"
        r"(?:\s+(?:there|everyone|all|folks))?\s*[!,.]+",
        # filler words closed by a comma or colon: "So, um,", "Okay so, basically,"
        r"(?:(?:okay|ok|so|um+|uh+|well|basically|anyway)\b[\s,]*?)+[,:]",
        # filler phrases: "Quick question:", "I was wondering:", "Just curious:"
        r"(?:quick\s+question|one\s+question|i\s+was\s+wondering|just\s+curious)\s*[:,]",
        # apologies up to the end of their sentence
        r"(?:sorry|apologies)\b[^.!?]*[.!?]+",
        # first-person asides that trail off: "I'm on the train right now..."
        r"(?:i'm|i\s+am|i've|i\s+have|my|it's|it\s+has)\b[^.!?…]*(?:\.\.\.|…)",
    ],
    "fr": [
        r"(?:bonjour|bonsoir|salut|coucou|hello)(?:\s+(?:à\s+tous|tout\s+le\s+monde))?\s*[!,.]+",
        r"(?:(?:alors|euh+|bon|bref|du\s+coup|en\s+fait)\b[\s,]*?)+[,:]",
        r"(?:petite\s+question|une\s+question|je\s+me\s+demandais|juste\s+par\s+curiosité)\s*[:,]",
        r"(?:désolée?|pardon|excusez-moi|excuse-moi)\b[^.!?]*[.!?]+",
        r"(?:je|j'|mon|ma|mes)\b[^.!?…]*(?:\.\.\.|…)",
    ],
}
# closings, matched repeatedly from the end of the query
_TAIL = {
    "en": r"(?:thanks|thank\s+you|many\s+thanks|cheers|any\s+help\s+(?:is\s+)?appreciated)"
    r"\b[^.!?]*[.!?]*",
    "fr": r"(?:merci|bonne\s+journée|bonne\s+soirée|toute\s+aide\s+est\s+la\s+bienvenue)"
    r"\b[^.!?]*[.!?]*",
}
_LEAD_RE = {
    lang: re.compile(r"^\s*(?:" + "|".join(f"(?:{p})" for p in pats) + r")\s*", _TRIM_FLAGS)
    for lang, pats in _LEAD.items()
}
_TAIL_RE = {lang: re.compile(r"\s+(?:" + p + r")\s*$", _TRIM_FLAGS) for lang, p in _TAIL.items()}

#: The rule sets of :func:`denoise_query`.
RULES = ("normalise", "trim")


def _trim(query: str, language: str) -> str:
    """The ``"trim"`` rules: emoji out, lead-ins off the start, closings off the end, a removal
    that would leave nothing not made, white space collapsed."""
    text = " ".join(_EMOJI.sub(" ", query).split())
    lead, tail = _LEAD_RE[language], _TAIL_RE[language]
    while True:
        m = lead.match(text)
        if not m or m.end() == 0 or not text[m.end() :].strip():
            break
        text = text[m.end() :]
    while True:
        m = tail.search(text)
        if not m or not text[: m.start()].strip():
            break
        text = text[: m.start()]
    return text.strip()


def denoise_query(query: str, language: str = "en", *, rules: str = "normalise") -> str:
    """Rule-based query denoising: normalise, lower-case, drop stop-phrases, punctuation and
    fillers (``rules="normalise"``), or trim a noisy query's lead-in and closing
    (``rules="trim"``).

    Parameters
    ----------
    query : str
        One query text.
    language : {"en", "fr"}, default "en"
        Which stop-phrases, filler words, lead-ins and closings to drop.
    rules : {"normalise", "trim"}, default "normalise"
        ``"normalise"``: the CLQ sweep's rewriter (see the module docstring). ``"trim"``:
        notebook 03's denoiser (:func:`ragnb.studies.diagnostics.denoise`): removes emoji anywhere;
        then, repeatedly from the start, greetings, filler lead-ins closed by a comma or colon,
        apologies (to the end of their sentence) and first-person asides that end in an
        ellipsis; then, repeatedly from the end, closings ("Thanks!", "Merci d'avance !"),
        case-insensitively; keeps the rest's case and punctuation.

    Returns
    -------
    str
        With ``"normalise"``, the denoised query: lower case, single spaces, no leading or
        trailing space; when every word would be dropped, the NFKC-normalised, lower-cased,
        white-space-collapsed query (never an empty string for a non-empty query). With
        ``"trim"``, the query without its lead-in and closing, runs of white space as one
        space; a removal that would leave nothing is not made.

    Raises
    ------
    InputError
        On ``rules`` other than :data:`RULES`, a language other than ``"en"`` and ``"fr"``, or
        a query that is not a string.

    References
    ----------
    Dallaire, arXiv:2511.09545, sections 4.1 (with/without rewriting), 4.4.1 (conversational
    noise) and 6 (rewrite/denoise by default, Unicode hygiene).

    Examples
    --------
    >>> denoise_query("Hi! Quick question: um, what is the GIL in CPython 3.12?? Thanks 🙏")
    'what is the gil in cpython 3.12'
    >>> denoise_query("Bonjour, petite question : c'est quoi l'eau lourde ? Merci !", "fr")
    "c'est quoi l'eau lourde"
    >>> denoise_query("Thanks!")
    'thanks!'
    >>> denoise_query("Hi! Quick question: Can forests regulate the climate? Thanks!", rules="trim")
    'Can forests regulate the climate?'
    """
    if rules not in RULES:
        raise InputError(
            f"denoise rules must be one of {list(RULES)}, got {rules!r}", column="rules"
        )
    if language not in STOP_PHRASES:
        raise InputError(
            f"denoise language must be one of {sorted(STOP_PHRASES)}, got {language!r}",
            column="language",
        )
    if not isinstance(query, str):
        raise InputError(f"a query must be a string, got {type(query).__name__}", column="text")
    if rules == "trim":
        return _trim(query, language)
    base = " ".join(unicodedata.normalize("NFKC", query).lower().split())
    text = _EMOJI.sub(" ", base)
    text = _PHRASE_RE[language].sub(" ", text)
    text = _PUNCT.sub(" ", text)
    fillers = FILLER_WORDS[language]
    words = [w for w in text.split() if w not in fillers]
    return " ".join(words) if words else base
