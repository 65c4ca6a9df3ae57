"""Search-contempt: MCTS whose opponent nodes freeze their visit distribution after N_scl visits."""
