"""The behaviour oracle: whether a front member does what the original does on inputs the tests
never try.

`record` notes the calls the original's training tests make; `changes` says which functions a
patch changes; `inputs` makes Hypothesis strategies of calls like the recorded ones; `search`
draws calls, has them made on both programs (each in a sandboxed process of its own, by the
engine: gi.engine.oracle) and shrinks the first difference; `values` compares what the calls
did and writes a difference as a pytest test.
"""

from gi.fitness.oracle.search import CHANGED, NOT_CHECKED, SAME, Behaviour

__all__ = ["CHANGED", "NOT_CHECKED", "SAME", "Behaviour"]
