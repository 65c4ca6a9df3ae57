"""Search-contempt rules on real searches: freezing, sampling, the snapshot, the summary, and bit-identity with the
standard search when nothing can freeze.  One compiled search per kind serves every N_scl (it is traced)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from contempt_search.rules import contempt_rules, validate_sc_limit
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables
from zerolab.search.config import SearchConfig
from zerolab.search.mcts import run_search, search_policy
from zerolab.search.tree import RecurrentOutput, Tree
from tests.fast_compile import fast_jit

SIMULATIONS = 128


@pytest.fixture(scope="module")
def gardner():
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    keys = jax.random.split(jax.random.key(5), 3)
    states = jax.jit(jax.vmap(game.init))(keys)
    rng = np.random.default_rng(0)
    step = jax.jit(jax.vmap(game.step))
    for _ in range(4):  # a few random plies, so the three roots differ
        legal = np.asarray(states.legal_action_mask)
        states = step(states, jnp.asarray([rng.choice(np.flatnonzero(row)) for row in legal], jnp.int32))
    return game, network, variables, states


def node_depths(parents: np.ndarray) -> np.ndarray:
    """[N] plies from the root of each node of one tree, from its parents (a child's index is above its parent's)."""
    depths = np.zeros(len(parents), np.int64)
    for index in range(1, len(parents)):
        depths[index] = depths[parents[index]] + 1 if parents[index] >= 0 else 0
    return depths


def search_config(kind):
    # No root noise: the kinds' own randomness is enough, and it keeps both arms comparable.
    return SearchConfig(kind=kind, num_simulations=SIMULATIONS, max_num_considered_actions=8, dirichlet_fraction=0.0)


@pytest.fixture(scope="module", params=["gumbel", "muzero"])
def searches(request, gardner):
    """{N_scl: output with tree} for one kind, N_scl in 1, 2, 4 and ≥ simulations, plus the plain search."""
    game, network, variables, states = gardner
    config = search_config(request.param)

    @jax.jit
    def contempt(key, sc_limit):
        rules = contempt_rules(config, sc_limit, max_sc_limit=SIMULATIONS)
        return run_search(config, game, network, variables, key, states, rules=rules, keep_tree=True)

    plain = jax.jit(lambda key: run_search(config, game, network, variables, key, states))(jax.random.key(3))
    outputs = {limit: jax.device_get(contempt(jax.random.key(3), limit)) for limit in (1, 2, 4, SIMULATIONS)}
    return request.param, config, jax.device_get(plain), outputs


def opponent_nodes(tree, batch):
    depths = node_depths(np.asarray(tree.parents[batch]))
    exists = np.asarray(tree.parents[batch]) != Tree.NO_PARENT
    return np.flatnonzero(exists & (depths % 2 == 1))


def test_no_freezing_gives_the_standard_search_bit_for_bit(searches):
    _, _, plain, outputs = searches
    unfrozen = outputs[SIMULATIONS]
    np.testing.assert_array_equal(unfrozen.action, plain.action)
    np.testing.assert_array_equal(unfrozen.visit_counts, plain.visit_counts)
    np.testing.assert_array_equal(unfrozen.policy_target, plain.policy_target)
    np.testing.assert_array_equal(unfrozen.summary["sampled_visit_fraction"], 0.0)


CHESS_ACTIONS = 4672  # pgx's 8×8 chess action count (make_game("chess").num_actions)


def chess_sized_recurrent_fn(params, key, action, state):
    """A deterministic game with 8×8 chess's action space: each state (a uint32 hash) has about 30 legal moves,
    random priors and a random value; the next state hashes the state and the action.  The rules see only the tree,
    so this exercises them at chess's width without compiling pgx's chess step (which costs more than the searches
    themselves; Gardner's real positions are searched above)."""
    del params, key
    following = state * jnp.uint32(CHESS_ACTIONS + 1) + action.astype(jnp.uint32) + jnp.uint32(1)
    logits, value = chess_sized_evaluation(following)
    output = RecurrentOutput(reward=jnp.zeros(state.shape), discount=-jnp.ones(state.shape), prior_logits=logits,
                             value=value, legal_action_mask=logits > -1e8)
    return output, following


def chess_sized_evaluation(state):
    """([B, 4672] prior logits with illegal moves at -1e9, [B] values in [-1, 1]) of hashed states."""

    def one(hashed):
        keys = jax.random.split(jax.random.fold_in(jax.random.key(11), hashed), 3)
        legal = jax.random.bernoulli(keys[0], 30 / CHESS_ACTIONS, (CHESS_ACTIONS,))
        logits = jnp.where(legal, jax.random.normal(keys[1], (CHESS_ACTIONS,)), -1e9)
        return logits, jax.random.uniform(keys[2], (), minval=-1.0, maxval=1.0)

    return jax.vmap(one)(state)


@pytest.mark.parametrize("kind", ["gumbel", "muzero"])
def test_no_freezing_gives_mctx_search_at_chess_width(kind):
    """The same identity over 8×8 chess's 4672 actions, with N_scl = the simulations, against mctx's own dense search
    (its own simulation loop), the contempt search on a tree of 96 slots a node (the Gumbel policy target to 1e-6:
    the sums over slots and over actions add in another order)."""
    config = SearchConfig(kind=kind, num_simulations=32, max_num_considered_actions=4, dirichlet_fraction=0.0)
    roots = jnp.arange(1, 4, dtype=jnp.uint32)
    logits, value = chess_sized_evaluation(roots)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=roots)
    legal = logits > -1e8

    # two different programs: the integers compared exactly, the floats within 1e-5 (values in [-1, 1] summed over at
    # most 33 visits in another order differ by at most about 33 × 2⁻²⁴ ≈ 2e-6; at XLA's optimisation level 0, the
    # suite's, they were seen to differ by a few ulps)
    plain = jax.device_get(fast_jit(lambda key: search_policy(config, {}, key, root, chess_sized_recurrent_fn,
                                                                 legal, mctx_loop=True))(jax.random.key(4)))

    @fast_jit
    def contempt(key, sc_limit):
        rules = contempt_rules(config, sc_limit, max_sc_limit=32)
        output = search_policy(config, {}, key, root, chess_sized_recurrent_fn, legal, rules=rules, num_slots=96)
        return output, rules.summary_fn(output.search_tree)

    unfrozen, summary = jax.device_get(contempt(jax.random.key(4), 32))
    np.testing.assert_array_equal(unfrozen.action, plain.action)
    np.testing.assert_array_equal(unfrozen.visit_counts, plain.visit_counts)
    np.testing.assert_allclose(unfrozen.action_weights, plain.action_weights, rtol=0, atol=1e-6)
    for name in ("node_visits", "parents", "action_from_parent"):
        np.testing.assert_array_equal(getattr(unfrozen.search_tree, name), getattr(plain.search_tree, name),
                                      err_msg=name)
    np.testing.assert_allclose(unfrozen.search_tree.node_values, plain.search_tree.node_values, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(summary["sampled_visit_fraction"], 0.0)
    # The trees are deep enough for N_scl to matter: at N_scl 1 the same program samples and the trees change.
    frozen, summary = jax.device_get(contempt(jax.random.key(4), 1))
    assert (summary["sampled_visit_fraction"] > 0).any()
    assert not np.array_equal(frozen.search_tree.node_visits, plain.search_tree.node_visits)


@pytest.mark.parametrize("sc_limit", [1, 2, 4])
def test_opponent_nodes_never_leave_their_frozen_children(searches, sc_limit):
    _, _, _, outputs = searches
    tree = outputs[sc_limit].tree
    frozen_nodes = 0
    for batch in range(tree.parents.shape[0]):
        for node in opponent_nodes(tree, batch):
            visits = np.asarray(tree.children_visits[batch, node])
            assert np.count_nonzero(visits) <= sc_limit
            recorded = np.asarray(tree.extra_data.node_state.first_slots[batch, node])
            if visits.sum() >= sc_limit:  # frozen: every later visit went to a child of the snapshot
                frozen_nodes += 1
                snapshot = np.bincount(recorded[:sc_limit], minlength=visits.shape[0])
                assert snapshot.sum() == sc_limit
                assert (visits[snapshot == 0] == 0).all()
    assert frozen_nodes > 0
    assert (outputs[sc_limit].summary["sampled_visit_fraction"] > 0).all()


def test_the_snapshot_records_the_first_visits_of_every_node(searches):
    """While C(s) ≤ M the recorded slots are exactly the node's visits; past M they are its first M.  The kept
    C(s) and depths equal those of the tree."""
    _, _, _, outputs = searches
    tree = outputs[SIMULATIONS].tree
    for limit in (1, 4, SIMULATIONS):
        state, limited = outputs[limit].tree.extra_data.node_state, outputs[limit].tree
        np.testing.assert_array_equal(state.child_visits, np.asarray(limited.children_visits).sum(-1))
        for batch in range(limited.parents.shape[0]):
            exists = np.asarray(limited.parents[batch]) != Tree.NO_PARENT
            np.testing.assert_array_equal(state.depth[batch][exists],
                                          node_depths(np.asarray(limited.parents[batch]))[exists])
    for batch in range(tree.parents.shape[0]):
        for node in np.flatnonzero(np.asarray(tree.parents[batch]) != Tree.NO_PARENT)[:40]:
            visits = np.asarray(tree.children_visits[batch, node])
            recorded = np.asarray(tree.extra_data.node_state.first_slots[batch, node])
            taken = recorded[recorded >= 0]
            assert len(taken) == visits.sum()
            np.testing.assert_array_equal(np.bincount(taken, minlength=visits.shape[0]), visits)


def test_frozen_nodes_sample_the_snapshot_and_others_select_as_standard(searches):
    kind, config, _, outputs = searches
    sc_limit = 2
    tree = jax.tree.map(lambda x: x[0], outputs[sc_limit].tree)
    rules = contempt_rules(config, sc_limit)
    from zerolab.search.config import selection_functions

    _, standard = selection_functions(config)
    keys = jax.random.split(jax.random.key(9), 20_000)
    select = jax.jit(jax.vmap(rules.interior_action_selection_fn, in_axes=(0, None, None, None)))
    select_standard = jax.jit(jax.vmap(standard, in_axes=(0, None, None, None)))
    depths = node_depths(np.asarray(tree.parents))
    counts = np.asarray(tree.children_visits).sum(-1)
    frozen = [n for n in range(len(depths)) if depths[n] % 2 == 1 and counts[n] >= sc_limit and tree.parents[n] >= 0]
    assert frozen, "no frozen opponent node in the tree"
    node = frozen[0]
    drawn = np.asarray(select(keys, tree, node, float(depths[node])))
    snapshot = np.bincount(np.asarray(tree.extra_data.node_state.first_slots[node, :sc_limit]), minlength=tree.num_slots)
    frequencies = np.bincount(drawn, minlength=tree.num_slots) / len(drawn)
    assert np.abs(frequencies - snapshot / sc_limit).max() < 0.015
    assert (frequencies[snapshot == 0] == 0).all()
    # The same node at an even depth does not freeze; and an unfrozen opponent node is the standard rule's choice.
    np.testing.assert_array_equal(select(keys[:64], tree, node, 2.0), select_standard(keys[:64], tree, node, 2.0))
    young = [n for n in range(len(depths)) if depths[n] % 2 == 1 and 0 < counts[n] < sc_limit and tree.parents[n] >= 0]
    for node in young[:3]:
        np.testing.assert_array_equal(select(keys[:64], tree, node, float(depths[node])),
                                      select_standard(keys[:64], tree, node, float(depths[node])))


@pytest.mark.parametrize("bad", [0, -1, 2.5, "x", True])
def test_sc_limit_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="sc_limit must be an integer from 1 to 1000000000"):
        validate_sc_limit(bad)
    with pytest.raises(ValueError, match="sc_limit"):
        contempt_rules(SearchConfig(), bad)


@pytest.mark.parametrize("sc_limit", [1, 2, 4])
def test_the_sampled_visit_fraction_is_the_share_of_opponent_visits_past_the_limit(searches, sc_limit):
    """Σ max(C − N_scl, 0) / Σ C over the opponent (odd-depth) nodes of each search, recomputed from the tree."""
    _, _, _, outputs = searches
    tree = outputs[sc_limit].tree
    for batch in range(tree.parents.shape[0]):
        nodes = opponent_nodes(tree, batch)
        counts = np.asarray(tree.children_visits[batch]).sum(-1)[nodes]
        expected = np.maximum(counts - sc_limit, 0).sum() / max(counts.sum(), 1)
        np.testing.assert_allclose(outputs[sc_limit].summary["sampled_visit_fraction"][batch], expected, rtol=1e-6)
