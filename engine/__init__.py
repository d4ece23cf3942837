"""The layer above the data model and the registry: planning a run, running it (in process or on
Ray), its manifest, and the validation of language packages.

It sits above `bias.registry` because it turns names into plugins; `bias.core` never imports it.
"""
