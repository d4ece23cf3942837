"""Statistics: association effect sizes and permutation tests, bootstrap intervals, multiple
testing, McNemar."""

# The families of tests corrected together for multiple testing: all tests of a run, or each model's
# or each metric's separately. Here, without numpy, so that the command line and the experiment file
# check a family without loading the statistics.
FAMILIES = ("run", "model", "metric")
