"""One run (layer 7): the experiment wiring that puts the engine's services, the search and the
reports together (`run_experiment`)."""
