"""The core of the bias framework: interfaces, data model, statistics, runner and results.

Nothing in here imports a plugin module by name; plugins are found through `bias.registry`.
"""
