"""Training: methods, the replay window and its checkpoints, runs, the training loop, metrics, plans."""
