"""A rule-based query denoiser: the "denoise" value of the CLQ sweep's rewriting axis.

Dallaire compares retrieval stacks with and without query rewriting/denoising (section 4.1,
"End-to-end retrieval ... with/without query rewriting"; section 4.4.1: conversational noise,
greetings, fillers and social padding, carries no task semantics but moves the query vector;
section 6: "make rewrite/denoise the default and enforce Unicode hygiene"). This is the cheap
end of that comparison, next to the LLM rewriter (:class:`ragnb.judge.LLMRewriter`): no model,
microseconds per query.

:func:`denoise_query` applies, in order: Unicode NFKC normalisation, lower-casing, removal of
emoji and symbols, removal of greetings followed by punctuation ("Hi!", "Hello,") and of
stop-phrases (politeness, "quick question", "can you
tell me", "thanks in advance"...), punctuation to spaces (keeping the hyphens, apostrophes,
dots and commas inside words and numbers: "e-mail", "l'eau", "3.5", "1,000"), removal of filler
words ("um", "basically", "please"...), and white space collapsed. A rewrite that would leave
nothing returns the normalised, lower-cased query instead.

The conversational-noise study of notebook 03 has its own denoiser
(:func:`ragnb.diagnostics.denoise`, regular expressions for the lead-in and the closing of a
noisy query, keeping the question's case and punctuation); this one is the retrieval-side
normaliser the sweep applies to every query.

References
----------
Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv:2511.09545, sections 4.1, 4.4.1 and 6.
"""

from __future__ import annotations

import re
import unicodedata

from ragnb.errors import InputError

__all__ = ["FILLER_WORDS", "GREETINGS", "STOP_PHRASES", "denoise_query"]

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


def denoise_query(query: str, language: str = "en") -> str:
    """Rule-based query denoising: normalise, lower-case, drop stop-phrases, punctuation and
    fillers.

    Parameters
    ----------
    query : str
        One query text.
    language : {"en", "fr"}, default "en"
        Which stop-phrases and filler words to drop.

    Returns
    -------
    str
        The denoised query: lower case, single spaces, no leading or trailing space. When
        every word would be dropped, the NFKC-normalised, lower-cased, white-space-collapsed
        query (never an empty string for a non-empty query).

    Raises
    ------
    InputError
        On a language other than ``"en"`` and ``"fr"``, or a query that is not a string.

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
    """
    if language not in STOP_PHRASES:
        raise InputError(
            f"denoise language must be one of {sorted(STOP_PHRASES)}, got {language!r}",
            column="language",
        )
    if not isinstance(query, str):
        raise InputError(f"a query must be a string, got {type(query).__name__}", column="text")
    base = " ".join(unicodedata.normalize("NFKC", query).lower().split())
    text = _EMOJI.sub(" ", base)
    text = _PHRASE_RE[language].sub(" ", text)
    text = _PUNCT.sub(" ", text)
    fillers = FILLER_WORDS[language]
    words = [w for w in text.split() if w not in fillers]
    return " ".join(words) if words else base
