"""Shared fixtures of the SAI tests: one 7×7 game, one tiny SAI network and its compiled searches.

**Compile time.**  These tests are dominated by XLA compiling a few large programs (searches, self-play scans, the
training step) for tiny inputs.  The whole test session compiles at XLA's faster CPU settings (tests/fast_compile.py:
optimisation level 0 and the older code generator; SAI's self-play scan 8.0 s of CPU → 2.5 s), and the functions
these tests compile themselves go through :func:`tests.fast_compile.fast_jit`; the λ = 0 search and mctx's, compared
bit for bit, are both compiled with the default generator (:data:`BIT_EXACT_COMPILE`).  ``test_default_xla.py`` runs
two of these tests again (the λ backup and the whole λ search) at XLA's default settings, so a result that held only
under the faster ones would be seen.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_collections
import pytest

from zerolab import GoGame, NetworkInputs, SearchConfig
from sai_go.network import make_sai_network
from sai_go.search import sai_search
from tests.fast_compile import FAST_COMPILE, default_jit, fast_jit

#: :data:`tests.fast_compile.FAST_COMPILE` at XLA's default code generator, for comparing two different programs bit
#: for bit: with the older generator the λ = 0 search and mctx's own differ in the last bit of some node values (XLA
#: fuses the two programs' arithmetic differently); with the default one they are identical, at optimisation level 0
#: as at the default 2.  (The default generator is named: the session's XLA_FLAGS ask for the older one.)
BIT_EXACT_COMPILE = {**FAST_COMPILE, "xla_cpu_use_fusion_emitters": True}


@functools.partial(fast_jit, static_argnums=(0, 2, 3))
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


@functools.lru_cache(maxsize=4)
def played_random_games(komi: float, seed: int, batch: int = 128):
    """:func:`random_games` of a 7×7 game at ``komi`` from ``jax.random.key(seed)``, played once per session (the
    scoring, endgame and search tests share them)."""
    return random_games(GoGame(size=7, komi=komi), jax.random.key(seed), batch)


@pytest.fixture(scope="session")
def go_game() -> GoGame:
    return GoGame(size=7, komi=9.5)


@pytest.fixture(scope="session")
def tiny_network(go_game):
    return make_tiny_network(go_game)


def make_tiny_network(go_game: GoGame):
    """A tiny SAI network (8 channels, 1 block) and its variables from key 0, with perturbed α and β heads."""
    network = make_sai_network(ml_collections.ConfigDict({"channels": 8, "num_blocks": 1}), go_game)
    # zerolab's init_variables, compiled with the tests' options
    variables = fast_jit(lambda key: network.init(key, NetworkInputs.from_states(jax.vmap(go_game.init)(key[None])),
                                                  train=False))(jax.random.key(0))
    # A random network whose α and β heads are not flat: perturb the last layers so positions differ.
    params = jax.tree.map(lambda x: x, variables["params"])
    for head, scale in (("alpha_head", 3.0), ("beta_head", 1.0)):
        dense = params[head]["Dense_1"]
        keys = jax.random.split(jax.random.key(len(head)), 2)
        # at XLA's default settings, as when the pinned references were written (the session compiles faster ones)
        normal = default_jit(jax.random.normal, static_argnums=1)(keys[0], dense["kernel"].shape)
        params[head]["Dense_1"] = {"kernel": scale * normal, "bias": dense["bias"]}
    return network, {**variables, "params": params}


PUCT = SearchConfig(kind="muzero", num_simulations=24, dirichlet_alpha=0.03 * 361 / 49)


@pytest.fixture(scope="session")
def compiled_sai_search(go_game, tiny_network):
    """``search(variables, key, states, komi, lam=..., rules=..., mctx_loop=...)`` for the tiny net, jitted once per
    rules and loop (λ is traced), with :data:`BIT_EXACT_COMPILE`."""
    network, _ = tiny_network

    @functools.partial(fast_jit, compiler_options=BIT_EXACT_COMPILE, static_argnames=("rules", "config", "mctx_loop"))
    def search(variables, key, states, komi, lam=0.0, rules=None, config=PUCT, mctx_loop=False):
        return sai_search(config, go_game, network, variables, key, states, komi, lam, rules=rules, keep_tree=True,
                          mctx_loop=mctx_loop)

    return search
