"""Studies of a finished run (floor 8): validate, minimise, ablate, evaluate again (`FinishedRun`),
run many arms and seeds, apply a front member's patch."""
