"""Search-contempt: MCTS whose opponent nodes freeze their visit distribution after N_scl visits."""

#: The experiments' temperature schedules over full moves, ``(start, delay, decay, end, cutoff)`` as
#: :class:`zerolab.selfplay.types.SelfPlayConfig`'s ``moves`` schedule reads them: ``tau1`` decays from 0.7 to 0.1 over the
#: first 5 moves, ``tau2`` keeps 0.9 for 20 moves, then decays to 0.6 over 60 and holds it from move 40.  One place,
#: read by the contempt-selfplay, contempt-match and contempt-train configs (no imports: configs load fast).
TEMPERATURE_SCHEDULES = {"tau1": (0.7, 0, 5, 0.1, 0), "tau2": (0.9, 20, 60, 0.6, 40)}
