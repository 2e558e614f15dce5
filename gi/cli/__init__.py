"""The `gi` command (floor 9): one module per command family; `gi.cli.main` parses and dispatches."""
