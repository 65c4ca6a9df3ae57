"""The project's simulation loop with the standard rules — what ``run_search`` runs by default, and what
``search.rules=zerolab.search:project_loop_rules`` names — is mctx's own search bit for bit: the backup that writes
the tree once per simulation changes no number."""

import jax
import jax.numpy as jnp
import mctx
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

    recurrent_fn = search_lib.make_recurrent_fn(game, network)

    @jax.jit
    def searches(key):
        logits, value = search_lib.evaluate(network, variables, states)
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)
        mctx_own = search_lib.policy(plain, variables, key, root, recurrent_fn, ~states.legal_action_mask, rules=None)
        return mctx_own, [search_lib.run_search(config, game, network, variables, key, states, keep_tree=True)
                          for config in (plain, looped)]

    mctx_output, loop_outputs = searches(jax.random.key(2))
    for loop_output in loop_outputs:  # run_search's default and the rules that name the project loop
        np.testing.assert_array_equal(mctx_output.action_weights, loop_output.policy_target)
        np.testing.assert_array_equal(mctx_output.search_tree.summary().visit_counts, loop_output.visit_counts)
        for name in ("node_visits", "node_values", "children_visits", "children_values", "parents"):
            np.testing.assert_array_equal(getattr(mctx_output.search_tree, name), getattr(loop_output.tree, name),
                                          err_msg=name)
    # depth-limited leaves were expanded again: their visits exceed their children's
    tree = mctx_output.search_tree
    assert (np.asarray(tree.node_visits) > np.asarray(tree.children_visits).sum(-1) + 1).any()
