"""Disorder attributes of ShARe/CLEF 2014 Task 2 (negation, uncertainty, subject, conditional, generic, course,
severity, DocTime), filled by ConText rules (:mod:`share_ner.attributes.context`) that are data
(:mod:`share_ner.attributes.rules`, ``share_ner/data/context_rules.tsv``), and body location, from an anatomy
lexicon (:mod:`share_ner.attributes.anatomy`, ``share_ner/data/anatomy.tsv`` by default)."""

from share_ner.attributes.anatomy import AnatomyMatcher
from share_ner.attributes.context import ContextMatcher, sentence_starts
from share_ner.attributes.rules import Rule, load_rules, packaged_rules, parse_rules

__all__ = ["AnatomyMatcher", "ContextMatcher", "Rule", "load_rules", "packaged_rules", "parse_rules", "sentence_starts"]
