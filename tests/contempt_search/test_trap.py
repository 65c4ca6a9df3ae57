"""The point of search-contempt, on a synthetic trap: a move that looks good to the network and whose only refutation
has a low prior.  The standard search finds the refutation and avoids the trap; with a small N_scl the opponent's
node freezes on its first, high-prior replies, the refutation is never searched, and the player walks into the trap
(the paper's mechanism for playing odds positions: the modelled opponent does not find the best reply)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from contempt_search.rules import contempt_rules
from zerolab.search.config import SearchConfig
from zerolab.search.mcts import search_policy
from zerolab.search.tree import RecurrentOutput, Tree

SAFE, TRAP = 0, 1
REFUTATION = 0  # the opponent's reply to TRAP that wins
# A tabular game.  States: 0 the root (the player to move); 1 after SAFE (the opponent to move, even); 2 after TRAP
# (the opponent to move; the network thinks the opponent is losing); 3 after the refutation (the player to move,
# lost) and 6 its opponent-to-move twin; 4 after any other reply (the player to move, ahead) and 5 its twin.  Values
# are from the mover's view, so the twins alternate consistently with mctx's discount of −1.
NEXT_STATE = jnp.array([[1, 2, 2], [1, 1, 1], [3, 4, 4], [6, 6, 6], [5, 5, 5], [4, 4, 4], [3, 3, 3]], jnp.int32)
VALUE = jnp.array([0.0, 0.0, -0.5, -1.0, 0.6, -0.6, 1.0])
REFUTATION_PRIOR = 0.1
PRIORS = jnp.array([[0.5, 0.5, 0.0], [1 / 3] * 3,
                    [REFUTATION_PRIOR, (1 - REFUTATION_PRIOR) / 2, (1 - REFUTATION_PRIOR) / 2]] + [[1 / 3] * 3] * 4)
LANES, SIMULATIONS = 4, 96


def recurrent_fn(params, key, action, state):
    del params, key
    following = NEXT_STATE[state, action]
    output = RecurrentOutput(reward=jnp.zeros(state.shape), discount=-jnp.ones(state.shape),
                             prior_logits=jnp.log(PRIORS[following] + 1e-12), value=VALUE[following],
                             legal_action_mask=jnp.ones(state.shape + (3,), bool))
    return output, following


@functools.cache
def compiled_search(kind: str):
    """One compiled search per kind, N_scl traced: N_scl ≥ the simulations is the standard search bit for bit
    (test_rules.py), so the same program serves both arms."""
    config = SearchConfig(kind=kind, num_simulations=SIMULATIONS, max_num_considered_actions=2,
                          dirichlet_fraction=0.0, gumbel_scale=0.0)
    roots = jnp.zeros(LANES, jnp.int32)
    root = mctx.RootFnOutput(prior_logits=jnp.log(PRIORS[roots] + 1e-12), value=VALUE[roots], embedding=roots)
    legal = jnp.ones((LANES, 3), bool).at[:, 2].set(False)

    @jax.jit
    def run(key, sc_limit):
        rules = contempt_rules(config, sc_limit, max_sc_limit=SIMULATIONS)
        output = search_policy(config, {}, key, root, recurrent_fn, legal, rules=rules)
        tree = output.search_tree  # three actions: the dense layout, where a slot is its action
        # the move each kind plays (run_search's rule): Gumbel's own choice, PUCT's most visited
        chosen = output.action if kind == "gumbel" else jnp.argmax(output.visit_counts, axis=-1)
        trap_node = tree.children_index[:, Tree.ROOT_INDEX, TRAP]
        refutation_visits = tree.children_visits[jnp.arange(LANES), trap_node, REFUTATION]
        root_qvalues = jax.vmap(Tree.qvalues)(tree, jnp.zeros(LANES, jnp.int32))
        return chosen, root_qvalues, refutation_visits

    return run


def search(kind: str, sc_limit: int):
    """(chosen actions, root Q of each action, the visits of the refutation below TRAP) over LANES searches."""
    return jax.device_get(compiled_search(kind)(jax.random.key(0), sc_limit))


@pytest.mark.parametrize("kind", ["muzero", "gumbel"])
def test_the_standard_search_refutes_the_trap_and_contempt_walks_into_it(kind):
    chosen, qvalues, refutation_visits = search(kind, SIMULATIONS)  # nothing can freeze: the standard search
    assert (chosen == SAFE).all()
    assert (qvalues[:, TRAP] < 0).all() and (refutation_visits > 0).all()  # the refutation was found
    for sc_limit in (1, 2):
        chosen, qvalues, refutation_visits = search(kind, sc_limit)
        assert (chosen == TRAP).all(), sc_limit
        # the frozen opponent node never entered the refutation, so the trap looks as good as the other replies
        assert (refutation_visits == 0).all(), sc_limit
        assert (qvalues[:, TRAP] > VALUE[4] - 0.01).all(), sc_limit
