"""The embedded default model: synthetic training notes from HPO names, trained once into the cache."""
