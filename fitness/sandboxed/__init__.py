"""Scripts that run inside the sandbox, beside the variant: the pytest plugin that reports
outcomes over a signed channel, its per-test limits and its checks (canaries, the audit of
returned values), the warm worker and its imports, the workload's timer, and the behaviour
oracle's worker and recorder. They import nothing of gi: they are copied into a
workspace's tools/ and run there by the sandbox's Python.
"""

from pathlib import Path

#: The folder holding the scripts, which the engine copies into each workspace.
FOLDER = Path(__file__).parent
