"""The model (layer 1): programs, sites and locations, edits, patches and variants, results,
errors, the named registries and the tamper guard. It imports nothing from the layers above."""
