"""The core of the bias framework: interfaces, data model, statistics, shared libraries,
results and reports.

Nothing in here imports a plugin module by name; plugins are found through `bias.registry`.
"""
