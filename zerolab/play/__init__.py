"""Play: agents (checkpoints, engines, lc0 networks) and the arena that plays them against each other."""
