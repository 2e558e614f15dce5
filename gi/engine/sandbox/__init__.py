"""The sandbox: a workspace per variant and a command runner with limits and isolation
(gi/engine/sandbox/runner.py says what it guarantees)."""
