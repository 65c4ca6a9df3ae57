"""The search tree over legal moves (zerolab.search.tree) against mctx's dense search, on positions of each game.

With K = A slots a node (the dense layout) or K = the game's most legal actions, the compact search chooses mctx's
actions with mctx's visit counts (integers: equal); its float results (root values, node values, policy targets)
differ at most by the order of float additions, over K rather than A slots and as XLA orders them in each program,
so they are compared within :data:`FLOAT_TOLERANCE`.  Rules (search-contempt) give the same search at any K.

The searches compile at the suite's fast settings (tests/fast_compile.py): at optimisation level 0 the two programs'
root values were seen to differ by 1e-9 (a few ulps), which the tolerance covers.
"""

from __future__ import annotations

import chess as python_chess
import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from contempt_search.rules import contempt_rules
from tests.fast_compile import fast_jit
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables
from zerolab.search import mcts as search_lib
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.search.selection import has_unslotted_actions, qtransform_completed_by_mix_value, slot_uniform
from zerolab.search.slots import EMPTY_SLOT, slot_actions
from zerolab.search.tree import RecurrentOutput, Tree

#: The most legal moves of a legal 8×8 chess position (218), from the position that has them.
MOST_MOVES_FEN = "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1"


#: A node's value is a mean over at most 33 visits: float32 sums of its terms taken in another order differ by at most
#: about 33 × 2⁻²⁴ ≈ 2e-6 of the largest term, so floats are compared to 1e-5 of their array's largest magnitude (the
#: tiny untrained networks' values are about 1e-3: an absolute bound would let a wrong backup through).
FLOAT_TOLERANCE = 1e-5

#: Positions a batch in every test of this file: one batch size, so each game's compiled step serves them all.
POSITIONS = 4


def played_positions(game, plies: int, seed: int):
    """:data:`POSITIONS` positions after ``plies`` random legal plies each (a finished game stays as it is)."""
    states = game.batched_init(jax.random.split(jax.random.key(seed), POSITIONS))
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        legal = np.asarray(states.legal_action_mask)
        states = game.batched_step(states, jnp.asarray([rng.choice(np.flatnonzero(row)) for row in legal], jnp.int32))
    return states


def game_and_network(name: str):
    """``(game, network, variables)``: the game ``name`` and the tiny network every search of this file uses."""
    game = make_game(name)
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=4, num_blocks=1)
    return game, network, init_variables(network, game, jax.random.key(0))


@pytest.fixture(scope="module")
def gardner():
    return game_and_network("gardner_chess")


@pytest.fixture(scope="module")
def position_sets(gardner):
    """``name -> (game, network, variables, held-out positions)``, each built once: a fresh seed per game, plies from
    the opening (2 positions) to the middle game (2)."""
    sets = {}

    def position_set(name):
        if name not in sets:
            game, network, variables = gardner if name == "gardner_chess" else game_and_network(name)
            half = POSITIONS // 2
            states = jax.tree.map(lambda opening, middle: jnp.concatenate([opening[:half], middle[half:]]),
                                  played_positions(game, 3, seed=11), played_positions(game, 14, seed=12))
            sets[name] = game, network, variables, states
        return sets[name]

    return position_set


# PUCT on Gardner chess (where the K = A layout is compared too), Gumbel on 8×8 chess (K = 218 of A = 4,672) and on
# 7×7 Go (K = A): each kind with fewer slots than actions and with as many; the kinds' rules do not depend on the game.
@pytest.mark.parametrize("game_name, kind", [("gardner_chess", "muzero"), ("chess", "gumbel"), ("go", "gumbel")])
def test_the_compact_search_is_mctx_search(position_sets, game_name, kind):
    game, network, variables, states = position_sets(game_name)
    config = SearchConfig(kind=kind, num_simulations=16, max_num_considered_actions=8)

    dense_layout = game.name == "gardner_chess"  # K = A too, once (7×7 Go's K is A already)

    @fast_jit  # floats compared within FLOAT_TOLERANCE
    def searches(key):
        run = lambda **options: search_lib.run_search(config, game, network, variables, key, states, **options)  # noqa: E731
        return run(mctx_loop=True), run(), run(num_slots=game.num_actions) if dense_layout else None

    dense, compact, full = jax.device_get(searches(jax.random.key(4)))
    # The policy target (a visit distribution, or Gumbel's softmax normalised by a float32 sum over A = 1225 actions
    # or K slots) only within 1e-6: with XLA_FLAGS=--xla_cpu_max_isa=AVX 12 of its 4900 entries were seen to differ
    # by up to 6e-8 (a few ulps) even at K = A.
    others = {"K = A": full, "K = most legal": compact} if dense_layout else {"K = most legal": compact}
    for label, other in others.items():
        assert_same_search(dense, other, label)
        np.testing.assert_allclose(dense.policy_target, other.policy_target, rtol=0, atol=1e-6, err_msg=label)
    assert game.max_legal_actions < game.num_actions or game.name == "go"


def assert_close(expected, actual, label: str):
    """``actual`` within :data:`FLOAT_TOLERANCE` of ``expected``'s largest magnitude."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=FLOAT_TOLERANCE * np.abs(expected).max(), err_msg=label)


def assert_same_search(dense, compact, label: str, float_names=("root_value",)):
    """``compact`` chose ``dense``'s actions with its visit counts (equal) and its ``float_names`` are within
    :data:`FLOAT_TOLERANCE` (:func:`assert_close`)."""
    for name in ("action", "visit_counts"):
        np.testing.assert_array_equal(getattr(dense, name), getattr(compact, name), err_msg=f"{label}: {name}")
    for name in float_names:
        assert_close(getattr(dense, name), getattr(compact, name), f"{label}: {name}")


def one_node_trees(num_actions, legal, visits, values, logits, raw_value):
    """``(mctx's dense tree, the compact tree)`` of one node (node value 0.5, four visits) whose ``legal`` actions
    have ``visits``, ``values`` and prior ``logits``, and whose raw value is ``raw_value``."""
    dense = mctx.Tree(
        node_visits=jnp.array([4]), raw_values=jnp.array([raw_value]), node_values=jnp.array([0.5]),
        parents=jnp.array([-1]), action_from_parent=jnp.array([-1]),
        children_index=jnp.full((1, num_actions), -1).at[0, legal].set(0),
        children_prior_logits=jnp.full((1, num_actions), jnp.finfo(jnp.float32).min).at[0, legal].set(logits),
        children_visits=jnp.zeros((1, num_actions), jnp.int32).at[0, legal].set(visits),
        children_rewards=jnp.zeros((1, num_actions)), children_discounts=jnp.full((1, num_actions), -1.0),
        children_values=jnp.zeros((1, num_actions)).at[0, legal].set(values),
        embeddings=jnp.zeros(1), root_invalid_actions=jnp.ones(num_actions).at[legal].set(0), extra_data=None)
    slots = len(legal)
    compact = Tree(
        node_visits=dense.node_visits, raw_values=dense.raw_values, node_values=dense.node_values,
        parents=dense.parents, action_from_parent=dense.action_from_parent, slot_from_parent=dense.parents,
        children_actions=legal[None], children_index=jnp.zeros((1, slots), jnp.int32),
        children_prior_logits=logits[None], children_visits=visits[None], children_rewards=jnp.zeros((1, slots)),
        children_discounts=jnp.full((1, slots), -1.0), children_values=values[None], embeddings=jnp.zeros(1),
        num_actions=num_actions)
    return dense, compact


def test_completed_q_of_a_node_with_every_legal_move_visited_spans_what_mctx_gives_illegal_actions():
    """A node with legal actions 1 and 3 of A = 5, both visited, and a raw value above both Q values: mctx rescales
    the completed Q values over its illegal actions too, which take the mixed value; the slots hold only the legal
    actions, so the slot rule must bring that value into the range itself."""
    legal, visits = jnp.array([1, 3]), jnp.array([2, 1])
    dense, compact = one_node_trees(5, legal, visits, jnp.array([-0.2, -0.4]), jnp.array([0.3, -0.5]), 0.9)
    expected = mctx.qtransform_completed_by_mix_value(dense, 0)[legal]
    np.testing.assert_allclose(qtransform_completed_by_mix_value(compact, 0), expected, rtol=1e-6)
    # the mixed value (above both Q values), not the best Q, is the top of the range: the best scales below 1
    assert float(expected.max()) < (50 + int(visits.max())) * 0.1 - 0.1


def test_completed_q_of_a_node_with_every_action_legal_and_visited_leaves_the_mixed_value_out():
    """The other side of the rule above: where every action of the space is in a slot (all 3 legal, K = A) and
    visited, mctx's node has no illegal action, so the mixed value (about 0.38 from the raw value 0.9, above every Q:
    0.2, 0.25, 0.3) is not in the range, and the best Q scales to exactly the top, ``(50 + max visits) · 0.1``."""
    legal, visits = jnp.array([0, 1, 2]), jnp.array([2, 1, 1])
    dense, compact = one_node_trees(3, legal, visits, jnp.array([-0.2, -0.25, -0.3]), jnp.array([0.3, -0.5, 0.1]), 0.9)
    expected = mctx.qtransform_completed_by_mix_value(dense, 0)
    np.testing.assert_allclose(qtransform_completed_by_mix_value(compact, 0), expected, rtol=1e-6)
    assert not has_unslotted_actions(compact, 0)
    np.testing.assert_allclose(float(expected.max()), (50 + 2) * 0.1, rtol=1e-6)


TOY_ACTIONS, TOY_SLOTS = 12, 8


def toy_legal_actions(state: jax.Array) -> jax.Array:
    """[B, 12] the toy game's legal actions of states [B]: 8 of the 12."""
    return (state[:, None] + jnp.arange(TOY_ACTIONS)) % 3 != 0


def toy_recurrent_fn(params, key, action, state):
    """A toy game without pgx (the state is an integer; every action leads to another): priors, values and legal
    moves of each state are fixed functions of it, so mctx's dense search and the compact one can meet at K = 8."""
    del params, key
    state = (state * 7 + action + 1) % 1009
    legal = toy_legal_actions(state)
    logits = search_lib.masked_logits(jnp.sin(0.37 * state[:, None] + 1.3 * jnp.arange(TOY_ACTIONS)), legal)
    output = RecurrentOutput(reward=jnp.zeros(state.shape), discount=jnp.full(state.shape, -1.0), prior_logits=logits,
                             value=0.9 * jnp.cos(0.11 * state), legal_action_mask=legal)
    return output, state


@pytest.mark.parametrize("kind", ["gumbel", "muzero"])
def test_the_policy_gives_mctx_root_priors_and_a_retired_rules_name_is_the_standard_search(kind):
    """On the toy game: the compact policy's root prior logits are mctx's (Dirichlet noise included;
    illegal actions at the dtype's minimum, as the docstrings promise and SAI's agents read them).  The config names
    the standard rules by their retired name (``project_loop_rules``, which run configs recorded): it reads as the
    standard search, which mctx's own loop also runs."""
    config = SearchConfig(kind=kind, num_simulations=6, max_num_considered_actions=4,
                          rules="zerolab.search.mcts:project_loop_rules")
    assert (config.rules, config.make_rules()) == ("", None)
    state = jnp.array([3, 10, 500], jnp.int32)
    legal = toy_legal_actions(state)
    root = mctx.RootFnOutput(prior_logits=jnp.cos(0.5 * state[:, None] + jnp.arange(TOY_ACTIONS)),
                             value=jnp.array([0.1, -0.3, 0.5]), embedding=state)

    @fast_jit  # floats compared within FLOAT_TOLERANCE
    def policies(key):
        run = lambda **options: search_lib.search_policy(config, None, key, root, toy_recurrent_fn, legal, **options)  # noqa: E731
        return run(mctx_loop=True), run(num_slots=TOY_SLOTS)

    dense, compact = jax.device_get(policies(jax.random.key(6)))
    legal_logits = lambda output: np.where(legal, output.root_prior_logits, 0.0)  # noqa: E731
    assert_close(legal_logits(dense), legal_logits(compact), "root prior logits")
    assert_same_search(dense, compact, "policy", float_names=())
    np.testing.assert_allclose(dense.action_weights, compact.action_weights, rtol=0, atol=1e-6)
    assert (compact.root_prior_logits[~np.asarray(legal)] == np.finfo(np.float32).min).all()
    assert compact.visit_counts.dtype == np.float32 and compact.visit_counts.sum() == 3 * 6


def test_a_depth_limit_expands_leaves_again_as_mctx_does(gardner):
    game, network, variables = gardner
    states = played_positions(game, 2, seed=21)
    config = SearchConfig(kind="muzero", num_simulations=20, max_depth=3)

    @fast_jit  # floats compared within FLOAT_TOLERANCE
    def searches(key):
        run = lambda **options: search_lib.run_search(config, game, network, variables, key, states,  # noqa: E731
                                                      keep_tree=True, **options)
        return run(mctx_loop=True), run()

    dense, compact = jax.device_get(searches(jax.random.key(2)))
    assert_same_search(dense, compact, "depth 3", float_names=("policy_target", "root_value"))
    for name in ("node_visits", "parents", "action_from_parent"):
        np.testing.assert_array_equal(getattr(dense.tree, name), getattr(compact.tree, name), err_msg=name)
    for name in ("node_values", "raw_values"):
        assert_close(getattr(dense.tree, name), getattr(compact.tree, name), name)
    tree = compact.tree
    assert (tree.node_visits > tree.children_visits.sum(-1) + 1).any()  # some leaf was evaluated again
    depths = np.zeros(tree.parents.shape, int)
    for node in range(1, tree.parents.shape[1]):
        parent = tree.parents[:, node]
        depths[:, node] = np.where(parent >= 0, depths[np.arange(len(parent)), np.maximum(parent, 0)] + 1, 0)
    assert depths.max() <= 3


def test_a_small_tree_fills_every_slot_with_the_first_legal_actions(gardner):
    """K = 4 on Gardner, where nodes have more legal moves: every node's slots hold its first K legal actions in order
    (all A at a finished game, as pgx marks them), each expanded slot leads to a node reached by its action, and the
    policy lies on the root's slots.  The last position is White's move in ``k4/5/1Q3/5/K4``: its first four legal
    moves (Ka2, Kb1, Kb2 stalemate Black; Qb1 does not) fill the root's slots, so the tree holds finished games, whose
    value and discount must each be 0 (either alone would keep the parent's Q: each is checked on its own)."""
    game, network, variables = gardner
    stalemates = game.from_fen("k4/5/1Q3/5/K4 w - - 0 1")
    states = jax.tree.map(lambda played, position: played.at[POSITIONS - 1].set(position),
                          played_positions(game, 4, seed=31), stalemates)
    slots = 4
    for kind in ("gumbel", "muzero"):
        config = SearchConfig(kind=kind, num_simulations=24, max_num_considered_actions=4)
        # at XLA's faster settings (tests/fast_compile.py): the checks are on the tree's structure, not compared to
        # another program
        output = jax.device_get(fast_jit(lambda key: search_lib.run_search(
            config, game, network, variables, key, states, keep_tree=True, num_slots=slots))(jax.random.key(1)))
        tree = output.tree
        assert tree.children_actions.shape[-1] == slots
        embeddings = jax.tree.map(np.asarray, game.unpack_state(tree.embeddings))
        # the tree keeps no legal masks (Game.pack_state): a node's are pgx's step of its parent by its action
        parents, actions = np.maximum(tree.parents, 0), np.maximum(tree.action_from_parent, 0)
        parent_states = jax.tree.map(lambda leaf: leaf[np.arange(len(parents))[:, None], parents].reshape(
            (-1,) + leaf.shape[2:]), game.unpack_state(tree.embeddings))
        legal_masks = np.array(game.batched_step(parent_states, jnp.asarray(actions.reshape(-1))).legal_action_mask)
        legal_masks = legal_masks.reshape(parents.shape + (-1,))
        legal_masks[:, 0] = np.asarray(states.legal_action_mask)
        finished_children = 0
        for batch in range(tree.node_visits.shape[0]):
            for node in np.flatnonzero(tree.node_visits[batch] > 0):
                legal = np.flatnonzero(legal_masks[batch, node])
                expected = np.full(slots, EMPTY_SLOT)
                expected[:min(slots, len(legal))] = legal[:slots]
                np.testing.assert_array_equal(tree.children_actions[batch, node], expected)
                visited = tree.children_index[batch, node] >= 0
                np.testing.assert_array_equal(visited, tree.children_visits[batch, node] > 0)
                for slot in np.flatnonzero(visited):
                    child = tree.children_index[batch, node, slot]
                    assert tree.parents[batch, child] == node and tree.slot_from_parent[batch, child] == slot
                    assert tree.action_from_parent[batch, child] == tree.children_actions[batch, node, slot]
                    if embeddings.terminated[batch, child]:
                        finished_children += 1
                        assert tree.raw_values[batch, child] == 0, "a finished game's value is 0"
                        assert tree.children_discounts[batch, node, slot] == 0, "no value flows past a finished game"
                    else:
                        assert tree.children_discounts[batch, node, slot] == -1, "the next node is the opponent's"
                if node and not embeddings.terminated[batch, node]:  # no depth limit: a visit is its children's + 1
                    assert tree.node_visits[batch, node] == tree.children_visits[batch, node].sum() + 1
        assert finished_children >= 3, (kind, finished_children)  # the stalemates at least
        root_actions = tree.children_actions[:, 0]
        for batch in range(len(root_actions)):
            off_slots = np.setdiff1d(np.arange(game.num_actions), root_actions[batch])
            assert output.policy_target[batch, off_slots].max() == 0 and output.visit_counts[batch, off_slots].max() == 0
            assert output.action[batch] in root_actions[batch]
        np.testing.assert_allclose(output.policy_target.sum(-1), 1.0, rtol=1e-5)


def test_contempt_rules_give_the_same_search_at_any_number_of_slots(gardner):
    game, network, variables = gardner
    states = played_positions(game, 5, seed=41)
    for kind in ("gumbel", "muzero"):
        config = SearchConfig(kind=kind, num_simulations=32, max_num_considered_actions=8,
                                         dirichlet_fraction=0.0)
        rules = contempt_rules(config, 2)

        @fast_jit  # floats compared within FLOAT_TOLERANCE
        def searches(key):
            run = lambda slots: search_lib.run_search(config, game, network, variables, key, states, rules=rules,  # noqa: E731
                                                      num_slots=slots)
            return run(None), run(game.num_actions)

        compact, dense = jax.device_get(searches(jax.random.key(5)))
        assert_same_search(dense, compact, kind)
        np.testing.assert_array_equal(dense.summary["sampled_visit_fraction"], compact.summary["sampled_visit_fraction"])
        assert compact.summary["sampled_visit_fraction"].max() > 0  # nodes froze: the rule was exercised


@pytest.mark.parametrize("name", ["chess", "gardner_chess", "go"])
def test_a_packed_state_steps_as_the_state(name):
    game = make_game(name)
    states = played_positions(game, 6, seed=51)
    packed = game.pack_state(states)
    leaves = lambda tree: sum(leaf.nbytes for leaf in jax.tree.leaves(tree))  # noqa: E731
    assert leaves(packed) < leaves(states) / (5 if name == "chess" else 1)
    rng = np.random.default_rng(0)
    actions = jnp.asarray([rng.choice(np.flatnonzero(row)) for row in np.asarray(states.legal_action_mask)], jnp.int32)
    expected, stepped = game.batched_step(states, actions), game.batched_step(game.unpack_state(packed), actions)
    for (path, want), got in zip(jax.tree_util.tree_flatten_with_path(expected)[0], jax.tree.leaves(stepped)):
        np.testing.assert_array_equal(want, got, err_msg=jax.tree_util.keystr(path))


def test_most_legal_actions_bound_the_games_positions():
    chess = make_game("chess")  # python-chess counts the 218; pgx 2.6 generates 200 of them (no move is extra)
    assert python_chess.Board(MOST_MOVES_FEN).legal_moves.count() == chess.max_legal_actions == 218
    assert int(chess.from_fen(MOST_MOVES_FEN).legal_action_mask.sum()) <= chess.max_legal_actions
    gardner = make_game("gardner_chess")  # 128 is a bound from the pieces' reach (ChessGame.max_legal_actions)
    seen = [played_positions(gardner, 12, seed=61 + batch) for batch in range(64 // POSITIONS)]  # 64 positions
    counts = np.concatenate([np.asarray(states.legal_action_mask.sum(-1))[~np.asarray(states.terminated)]
                             for states in seen])
    assert 0 < counts.max() <= gardner.max_legal_actions == 128
    go = make_game("go")
    assert go.max_legal_actions == go.num_actions  # an empty board's points and the pass: the dense layout


def test_slot_actions_and_the_slots_noise():
    mask = jnp.zeros((2, 10), bool).at[0, jnp.array([1, 4, 7])].set(True).at[1].set(True)
    np.testing.assert_array_equal(slot_actions(mask, 4), [[1, 4, 7, -1], [0, 1, 2, 3]])
    np.testing.assert_array_equal(slot_actions(mask, 10)[0], [-1, 1, -1, -1, 4, -1, -1, 7, -1, -1])
    actions = jnp.asarray([4671, 0, 17, 2048, 218, 3], jnp.int32)
    for key in (jax.random.key(3), jax.random.PRNGKey(3), jax.random.split(jax.random.key(9))[1]):
        dense = jax.random.uniform(key, (4672,))
        np.testing.assert_array_equal(jax.jit(slot_uniform, static_argnums=2)(key, actions, 4672), dense[actions])


def test_mctx_loop_refuses_rules_that_replace_the_simulations(gardner):
    config = SearchConfig(kind="muzero", num_simulations=4)
    game, network, _ = gardner
    states = game.batched_init(jax.random.split(jax.random.key(1), POSITIONS))
    replaced_backup = SearchRules(backup_fn=lambda tree, leaf_index: tree)
    with pytest.raises(ValueError, match="mctx_loop=True"):
        jax.eval_shape(lambda: search_lib.run_search(config, game, network, {}, jax.random.key(0), states,
                                                     rules=replaced_backup, mctx_loop=True))
