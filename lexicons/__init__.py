"""Lexicon readers, builders and their data (installed as ``share_ner.lexicons``).

* :func:`load_lexicon` reads the one lexicon TSV format (see :mod:`.lexicon`);
* :func:`default_lexicon` is the embedded HPO lexicon (see :mod:`.hpo`);
* :func:`build_umls_lexicon` streams a UMLS META directory (see :mod:`.umls`);
* :func:`gazetteer_lexicon` counts mention strings of annotated notes (see :mod:`.gazetteer`);
* :func:`compile_index` gives the cached search index of a lexicon (see :mod:`.index`).
"""

from share_ner.lexicons.gazetteer import build_gazetteer_lexicon, gazetteer_lexicon
from share_ner.lexicons.hpo import default_lexicon, hpo_lexicon
from share_ner.lexicons.index import LexiconIndex, compile_index
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry, cache_dir, write_lexicon
from share_ner.lexicons.loader import load_lexicon
from share_ner.lexicons.umls import DISORDER_TUIS, UmlsFilter, build_umls_lexicon

__all__ = [
    "DISORDER_TUIS",
    "Lexicon",
    "LexiconEntry",
    "LexiconIndex",
    "UmlsFilter",
    "build_gazetteer_lexicon",
    "build_umls_lexicon",
    "cache_dir",
    "compile_index",
    "default_lexicon",
    "gazetteer_lexicon",
    "hpo_lexicon",
    "load_lexicon",
    "write_lexicon",
]
