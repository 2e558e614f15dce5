"""The engine (layer 5): the services a run is made of: evaluation (cache, measures, sandbox,
warm workers, backends), timing, the run store and recorded measurements, the run folder and
its summary, held-out tests per generation, operator accounting."""
