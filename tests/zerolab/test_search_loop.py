"""The project's simulation loop with the standard rules — what ``run_search`` runs by default, and what
``search.rules=zerolab.search.mcts:project_loop_rules`` names — is mctx's own search bit for bit: the backup that writes
the tree once per simulation changes no number."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.search import mcts as search_lib
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables


def test_the_project_loop_gives_mctx_search_bit_for_bit():
    """PUCT with a depth limit, so that leaves are expanded again (test_search.py compares the loop with mctx for
    both kinds without one)."""
    kind, max_depth = "muzero", 3
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=4, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(1), 4))
    states = jax.vmap(game.step)(states, jnp.argmax(states.legal_action_mask, axis=-1))
    plain = search_lib.SearchConfig(kind=kind, num_simulations=20, max_num_considered_actions=8, max_depth=max_depth)
    # the rules that name the project loop run the same program as run_search's default (nothing else to compare)
    looped = dataclasses.replace(plain, rules="zerolab.search.mcts:project_loop_rules")
    assert looped.make_rules().changes_simulations and not search_lib.STANDARD_RULES.changes_simulations

    @jax.jit
    def searches(key):  # mctx's own simulation loop (mctx.muzero_policy's fori_loop), then the project's
        mctx_own = search_lib.run_search(plain, game, network, variables, key, states, keep_tree=True, mctx_loop=True)
        return mctx_own, search_lib.run_search(plain, game, network, variables, key, states, keep_tree=True)

    mctx_output, loop_output = searches(jax.random.key(2))
    for name in ("action", "visit_counts", "policy_target", "root_value"):
        np.testing.assert_array_equal(getattr(mctx_output, name), getattr(loop_output, name), err_msg=name)
    for name in ("node_visits", "node_values", "children_visits", "children_values", "parents"):
        np.testing.assert_array_equal(getattr(mctx_output.tree, name), getattr(loop_output.tree, name),
                                      err_msg=name)
    # depth-limited leaves were expanded again: their visits exceed their children's
    tree = mctx_output.tree
    assert (np.asarray(tree.node_visits) > np.asarray(tree.children_visits).sum(-1) + 1).any()


def test_mctx_loop_refuses_rules_that_replace_the_simulations():
    config = search_lib.SearchConfig(kind="muzero", num_simulations=4)
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=4, num_blocks=1)
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(1), 2))
    replaced_backup = search_lib.SearchRules(backup_fn=lambda tree, leaf_index: tree)
    with pytest.raises(ValueError, match="mctx_loop=True"):
        jax.eval_shape(lambda: search_lib.run_search(config, game, network, {}, jax.random.key(0), states,
                                                     rules=replaced_backup, mctx_loop=True))
