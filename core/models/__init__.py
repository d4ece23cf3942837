"""Model internals shared by embedders and debiasers: Hugging Face, static vectors, debiasing
blocks, the encoding cache."""
