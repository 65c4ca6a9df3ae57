"""The project's simulation loop with the standard rules (``search.rules=zerolab.search:project_loop_rules``) is
mctx's search bit for bit: the backup that writes the tree once per simulation changes no number."""

import jax
import jax.numpy as jnp
import numpy as np

from zerolab import search as search_lib
from zerolab.games import make_game
from zerolab.networks import AlphaZeroResNet, init_variables


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
    looped = search_lib.SearchConfig(kind=kind, num_simulations=20, max_num_considered_actions=8, max_depth=max_depth,
                                     rules="zerolab.search:project_loop_rules")
    assert looped.make_rules().changes_simulations and not search_lib.STANDARD_RULES.changes_simulations

    @jax.jit
    def both(key):
        return [search_lib.run_search(config, game, network, variables, key, states, keep_tree=True)
                for config in (plain, looped)]

    mctx_output, loop_output = both(jax.random.key(2))
    for name in ("action", "visit_counts", "policy_target", "root_value"):
        np.testing.assert_array_equal(getattr(mctx_output, name), getattr(loop_output, name), err_msg=name)
    for name in ("node_visits", "node_values", "children_visits", "children_values", "parents"):
        np.testing.assert_array_equal(getattr(mctx_output.tree, name), getattr(loop_output.tree, name), err_msg=name)
    # depth-limited leaves were expanded again: their visits exceed their children's
    assert (np.asarray(mctx_output.tree.node_visits) > np.asarray(mctx_output.tree.children_visits).sum(-1) + 1).any()
