"""Runs and their results: the results file, the run folder's lock and manifest, resampling budgets,
the same model named twice."""
