"""Hugging Face models as the framework uses them: loading a checkpoint, the character-span
arithmetic that finds a word's tokens, batched forward passes and LM scoring, and the fingerprint of
the files.

The `hf` embedder is a thin facade over these modules; a third-party embedder of another
transformers-based model can build on them too. torch and transformers are imported inside functions
only, so importing any module here stays cheap.
"""
