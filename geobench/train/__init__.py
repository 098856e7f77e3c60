"""Training: the engine that runs a cell's arms in lockstep, its batch loader, named random
streams and the experiment-tracker fan-out."""
