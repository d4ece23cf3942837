"""BBQ answered in text: prompt variants and reading rules (`prompts`), reading a reply
(`extraction`, `mbbq_reading`), the scores (`scores`), the peers' conventions (`conventions`) and
the result built from answers read off a model (`answers`, `answering`)."""
