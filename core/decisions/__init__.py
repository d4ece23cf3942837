"""Decisions about people read from a model: log-probabilities or written replies, and the paired
tests over name-swapped prompts."""
