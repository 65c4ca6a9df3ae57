"""Evaluation: Elo ratings, rating a run's checkpoints, plots."""
