"""Word-set files and their kinds: the TOML house format, grammar and templates, each kind of test
data, community text formats and content checks."""
