"""zerolab: a JAX stack for game-playing research, in layers — games, networks, search, selfplay, training,
engines, play, evaluation, frontends (each imports only those before it; see zerolab/README.md).  Method packages use
the public surface :mod:`zerolab.api`."""
