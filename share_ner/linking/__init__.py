"""Linking mentions to concepts: the normalizer that assigns each mention a CUI (or CUI-less), its candidate scoring,
its fitting on training notes and its files on disk."""
