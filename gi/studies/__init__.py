"""Studies of a finished run (layer 8): validate, minimise, ablate, evaluate again (`FinishedRun`),
run many arms and seeds, apply a front member's patch."""
