"""The `gi` command (layer 9): one module per command family; `gi.cli.main` parses and dispatches."""
