"""share-ner: disorder mention recognition and normalization for clinical notes.

The ShARe/CLEF eHealth 2013 Task 1 setting: find disorder mentions (Task 1a),
including discontiguous ones, and map each to a UMLS CUI from SNOMED CT or
mark it ``CUI-less`` (Task 1b).
"""

from share_ner.document import CUI_LESS, DISORDER, Document, Mention, Sentence, Token

__version__ = "0.1.0"

__all__ = ["CUI_LESS", "DISORDER", "Document", "Mention", "Sentence", "Token", "__version__"]
