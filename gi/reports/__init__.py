"""Reports (layer 6): what a run folder or an experiment folder shows: the terminal's tables,
report.html and report.md with their plots, and the statistics between arms (`gi compare`)."""
