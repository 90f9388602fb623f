"""The embedded default model: packaged, trained on synthetic notes and distant-labelled MTSamples notes."""
