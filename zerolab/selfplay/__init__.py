"""Self-play: the jitted scan that plays games on device with a move rule and hooks."""
