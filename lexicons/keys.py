"""The string keys a lexicon is indexed and searched by; three views of a string:

* :func:`exact_key` — case-folded, whitespace collapsed (the gazetteer match);
* :func:`soft_normalize` — also accents stripped, British spellings folded
  (haem→hem, oedema→edema, tumour→tumor) and punctuation turned into spaces
  (the text the character 3-gram tf-idf sees);
* :func:`normalized_key` — also stop words dropped, plurals and inflections
  stripped and the words sorted (word order does not matter).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from share_ner.features.matcher import fold_plural
from share_ner.features.stopwords import NAME_JOINERS

_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_POSSESSIVE = re.compile(r"(?<=[a-z])['\u2019]s\b")  # Alzheimer's disease = Alzheimer disease
_SPELLING = (
    (re.compile(r"ae(?=[a-z])"), "e"),  # haemorrhage, anaemia
    (re.compile(r"(?<=[a-z])oe(?=[a-z])|\boe(?=[a-z])"), "e"),  # oedema, diarrhoea, oesophagus
    (re.compile(r"(?<=[a-z]{2})our\b"), "or"),  # tumour, tumours is handled after plural stripping
    (re.compile(r"(?<=[a-z]{2})ours\b"), "ors"),
)


def exact_key(text: str) -> str:
    """Case-folded text with whitespace collapsed."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=200_000)
def soft_normalize(text: str) -> str:
    """Lower case, no accents, folded British spellings, punctuation as spaces."""
    if not text.isascii():  # (ASCII text has no accents to strip: NFKD leaves it as it is)
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    text = text.lower()
    text = _NON_ALNUM.sub(" ", _POSSESSIVE.sub("", text))
    for pattern, repl in _SPELLING:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A light suffix stripper for plurals (the term matcher's :func:`~share_ner.features.matcher.fold_plural`:
    tumors→tumor, metastases and metastasis→metastas) and inflections (infected→infect)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    word = fold_plural(word)
    if word.endswith("ical") and len(word) > 6:  # neurological → neurologic
        return word[:-2]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    elif word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


# Words that name the same thing in disorder names (after stemming); folded in normalized keys only.
WORD_SYNONYMS = {
    # neoplasms (MeSH files breast cancer/carcinoma/tumour under one heading)
    "carcinoma": "neoplasm", "cancer": "neoplasm", "malignancy": "neoplasm", "tumor": "neoplasm",
    "neoplasia": "neoplasm",
    # organ adjectives → organ nouns
    "prostatic": "prostate", "pancreatic": "pancrea", "renal": "kidney", "nephric": "kidney", "hepatic": "liver",
    "cardiac": "heart", "pulmonary": "lung", "gastric": "stomach", "cerebral": "brain", "ocular": "eye",
    "colonic": "colon", "mammary": "breast", "ovarian": "ovary", "uterin": "uterus", "cutaneou": "skin",
    "dermatological": "skin", "dermal": "skin", "vascular": "vessel", "osseou": "bone", "muscular": "muscle",
    # generic disorder heads ("Abnormality of the skin", "skin disease", "sleep disturbance")
    "disorder": "disease", "diseas": "disease", "abnormality": "disease", "anomaly": "disease",
    "disturbance": "disease", "disturbanc": "disease", "syndrom": "syndrome",
    "deficient": "deficiency", "infectious": "infection", "bleed": "hemorrhag",
}


@lru_cache(maxsize=200_000)
def normalized_key(text: str) -> str:
    """Stop words dropped, words stemmed and sorted: 'Cancers of the breast' → 'breast cancer'."""
    words = soft_normalize(text).split()
    kept = [w for w in words if w not in NAME_JOINERS] or words
    stems = (stem(w) for w in kept)
    return " ".join(sorted(WORD_SYNONYMS.get(w, w) for w in stems))
