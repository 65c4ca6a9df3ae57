"""Shared fixtures of the SAI tests: one 7×7 game, one tiny SAI network and its compiled searches."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_collections
import pytest

from zerolab.api import GoGame, SearchConfig, init_variables
from sai_go.network import make_sai_network
from sai_go.search import sai_search


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def random_games(game: GoGame, key: jax.Array, batch: int, pass_logit: float = -2.0):
    """[batch] games played by uniformly random legal moves (passes down-weighted by ``pass_logit``) until pgx
    ends them, and every position on the way ``[plies + 1, batch]``."""
    keys = jax.random.split(key, batch + 1)
    states = jax.vmap(game.init)(keys[:batch])

    def ply(states, ply_key):
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf).at[:, game.pass_action].add(pass_logit)
        stepped = jax.vmap(game.step)(states, jax.random.categorical(ply_key, logits))
        states = jax.tree.map(lambda new, old: jnp.where(
            states.terminated.reshape((-1,) + (1,) * (new.ndim - 1)), old, new), stepped, states)
        return states, states

    final, path = jax.lax.scan(ply, states, jax.random.split(keys[-1], game.max_game_plies))
    return final, path


@pytest.fixture(scope="session")
def go_game() -> GoGame:
    return GoGame(size=7, komi=9.5)


@pytest.fixture(scope="session")
def tiny_network(go_game):
    network = make_sai_network(ml_collections.ConfigDict({"channels": 8, "num_blocks": 1}), go_game)
    variables = init_variables(network, go_game, jax.random.key(0))
    # A random network whose α and β heads are not flat: perturb the last layers so positions differ.
    params = jax.tree.map(lambda x: x, variables["params"])
    for head, scale in (("alpha_head", 3.0), ("beta_head", 1.0)):
        dense = params[head]["Dense_1"]
        keys = jax.random.split(jax.random.key(len(head)), 2)
        params[head]["Dense_1"] = {"kernel": scale * jax.random.normal(keys[0], dense["kernel"].shape),
                                   "bias": dense["bias"]}
    return network, {**variables, "params": params}


PUCT = SearchConfig(kind="muzero", num_simulations=24, dirichlet_alpha=0.03 * 361 / 49)


@pytest.fixture(scope="session")
def compiled_sai_search(go_game, tiny_network):
    """``search(variables, key, states, komi, lam=..., rules=..., mctx_loop=...)`` for the tiny net, jitted once per
    rules and loop (λ is traced)."""
    network, _ = tiny_network

    @functools.partial(jax.jit, static_argnames=("rules", "config", "mctx_loop"))
    def search(variables, key, states, komi, lam=0.0, rules=None, config=PUCT, mctx_loop=False):
        return sai_search(config, go_game, network, variables, key, states, komi, lam, rules=rules, keep_tree=True,
                          mctx_loop=mctx_loop)

    return search
