"""The library of metrics that score minimal sentence pairs with a language model (CrowS-Pairs, SSS,
AUL)."""
