"""Milliseconds a simulation of the growing tree (``zerolab.search.grow_tree``) costs at several tree sizes.

Usage: ``python scripts/growing_tree_speed.py RUN`` (a chess or Gardner run; its network plays 8×8 chess from the
start position, 8 simulations a chunk, three timed chunks after one that compiles).
"""

import sys
import time

import jax
import jax.numpy as jnp

from zerolab import checkpoint_search
from zerolab.search import grow_tree, start_tree

CHUNK = 8
CHUNKS = 3


def main(run: str) -> None:
    loaded = checkpoint_search(run)
    game = loaded.game
    states = jax.tree.map(lambda leaf: leaf[None], game.from_fen(game.start_fen))  # a batch of one
    for nodes in (64, 1024, 8192):
        start = jax.jit(lambda variables, states, nodes=nodes: start_tree(loaded.search, game, loaded.network,
                                                                          variables, states, nodes))
        grow = jax.jit(lambda variables, key, tree, first: grow_tree(loaded.search, game, loaded.network, variables,
                                                                     key, tree, first, CHUNK),
                       donate_argnums=2)  # as the UCI engine grows it: in place
        tree = jax.block_until_ready(grow(loaded.variables, jax.random.key(0), start(loaded.variables, states),
                                          jnp.ones(1, jnp.int32)))
        started = time.perf_counter()
        for chunk in range(1, CHUNKS + 1):
            tree = grow(loaded.variables, jax.random.key(chunk), tree, jnp.full(1, 1 + CHUNK * chunk, jnp.int32))
        jax.block_until_ready(tree)
        print(f"{nodes} nodes: {(time.perf_counter() - started) / (CHUNK * CHUNKS) * 1000:.2f} ms a simulation",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
