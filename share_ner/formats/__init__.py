"""Annotation file formats: one module per format."""
