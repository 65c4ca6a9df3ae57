"""Attuned training through the core's jitted self-play: the STT rule plays the same games as the host (the core's
arena) in a deterministic setup (the senior's search stood in for by its network's argmax, argmax junior, tiny lc0
networks), the host's slow-path frames equal the scan's, the HB rule plays the named type, one attuned step lowers the loss on
a fixed batch, and bad options are refused."""

from __future__ import annotations

import types

import chess
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from skill_compat import attuned, frameworks
from skill_compat.players import NetworkPlayer
from skill_compat.teams import SttTeam, play_framework_games
from zerolab import (
    NetworkInputs,
    NetworkOutput,
    PolicyAgent,
    SearchConfig,
    SelfPlayConfig,
    init_variables,
    make_game,
    make_play_fn,
)
from zerolab.networks.lc0.network import make_lc0
from zerolab.search.mcts import SearchOutput
from zerolab.selfplay import PlayVariables

PLIES = 12


@pytest.fixture(scope="module")
def setup():
    game = make_game("chess", observation="lc0")
    model = ml_collections.ConfigDict({"channels": 8, "num_blocks": 1, "se_channels": 2, "value_channels": 4,
                                       "value_hidden": 8, "weights": ""})
    network = make_lc0(model, game)
    learner = init_variables(network, game, jax.random.key(1))
    junior = init_variables(network, game, jax.random.key(2))
    search = SearchConfig(kind="gumbel", num_simulations=2, max_num_considered_actions=4, gumbel_scale=0.0)
    return types.SimpleNamespace(game=game, network=network, learner=learner, junior=junior, search=search)


def policy_argmax_search(network):
    """A deterministic stand-in for the senior's search: the network's most probable legal move.  (A real 8×8 search
    inside the scan costs minutes of compilation on a CPU; the rule's default search is ``run_search`` itself, run
    by the attuned experiment.)"""

    def search(variables, key, states):
        del key
        output = network.apply(variables, NetworkInputs.from_states(states), train=False)
        logits = jnp.where(states.legal_action_mask, output.policy_logits, -jnp.inf)
        action = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        target = jax.nn.softmax(logits, axis=-1)
        return SearchOutput(action=action, policy_target=target, visit_counts=target, root_value=output.value)

    return search


@pytest.fixture(scope="module")
def stt_selfplay(setup):
    rule = attuned.stt_move_rule(setup.game, setup.network, setup.search, setup.junior, PLIES, "played",
                                 search_fn=policy_argmax_search(setup.network))
    config = SelfPlayConfig(num_games=2, plies_per_iteration=PLIES, max_game_plies=PLIES)
    play = jax.jit(make_play_fn(setup.game, rule, config, attuned.stt_lane_rule(setup.game, PLIES)), static_argnums=2)
    packed, records = play(setup.learner, jax.random.key(3), 2, setup.junior)
    return jax.device_get(packed).to_frames(), jax.device_get(records)


@pytest.mark.slow  # 40 s of CPU with a cold compilation cache, its fixtures included
def test_jitted_stt_selfplay_and_the_host_arena_play_the_same_game(setup, stt_selfplay):
    frames, records = stt_selfplay
    bits = np.asarray(frames.extras["senior"])[:, 0].astype(np.uint8)  # lane 0's game: PLIES plies, capped
    assert 0 < bits.sum() < PLIES  # both roles play
    senior = NetworkPlayer(PolicyAgent(setup.network, setup.learner, setup.game, mode="argmax", name="senior"))
    junior = NetworkPlayer(PolicyAgent(setup.network, setup.junior, setup.game, mode="argmax", name="junior"))
    team = SttTeam("team", senior, junior)
    games = play_framework_games(setup.game, team, team, frameworks.game_pairing(2), jax.random.key(9), PLIES,
                                 bitstrings=bits[None])
    host_moves = games[0].moves
    step = setup.game.batched_step
    states = setup.game.batched_init(jax.random.key(0)[None])
    jitted_moves = []
    for action in np.asarray(records.action)[:, 0]:
        jitted_moves.append(setup.game.action_to_uci(int(action), jax.tree.map(lambda leaf: leaf[0], states)))
        states = step(states, jnp.array([action], jnp.int32))
    assert host_moves == jitted_moves
    assert [r["role"] for r in games[0].records] == ["senior" if b else "junior" for b in bits]
    # the host's slow-path frames equal the scan's (observations, legal moves, targets, roles; capped: a draw)
    host = attuned.host_frames(setup.game, games[:1])
    np.testing.assert_array_equal(np.asarray(host.observation), np.asarray(frames.observation)[:, 0])
    np.testing.assert_array_equal(np.asarray(host.legal_action_mask), np.asarray(frames.legal_action_mask)[:, 0])
    np.testing.assert_array_equal(np.asarray(host.policy_target), np.asarray(frames.policy_target)[:, 0])
    np.testing.assert_array_equal(np.asarray(host.extras["senior"]), bits.astype(bool))
    np.testing.assert_array_equal(np.asarray(host.value_target), np.asarray(frames.value_target)[:, 0])
    # the played-move target is the one-hot of the action
    np.testing.assert_array_equal(np.argmax(frames.policy_target[:, 0], -1), np.asarray(records.action)[:, 0])
    board = chess.Board()
    for move in host_moves:
        board.push_uci(move)  # legal in python-chess too


def highest_action_brain(variables, key, states):
    """A stand-in for the brain's search (the search is compiled and checked in the STT test): the highest legal
    action id, whose piece type varies over positions."""
    del variables, key
    mask = states.legal_action_mask
    action = (mask.shape[-1] - 1 - jnp.argmax(mask[:, ::-1], axis=-1)).astype(jnp.int32)
    target = jax.nn.one_hot(action, mask.shape[-1])
    return SearchOutput(action=action, policy_target=target, visit_counts=target, root_value=jnp.zeros(len(action)))


def test_hb_rule_plays_the_brains_piece_type(setup):
    rule = attuned.hb_move_rule(setup.game, setup.network, setup.search, setup.junior, search_fn=highest_action_brain)
    states = setup.game.batched_init(jax.random.split(jax.random.key(0), 4))
    decision = jax.jit(rule.act)(PlayVariables(setup.learner, setup.junior), jax.random.key(4), states,
                                 jnp.zeros(4, jnp.int32), None)
    piece_types = np.asarray(frameworks.action_piece_types(setup.game, states))
    lanes = np.arange(4)
    brain_move, h0 = (np.asarray(decision.frame_extras[name]) for name in ("brain_move", "h0"))
    played = np.asarray(decision.action)
    named = np.asarray(decision.frame_extras["named_type"])
    assert (piece_types[lanes, played] == named).all() and (piece_types[lanes, brain_move] == named).all()
    assert np.asarray(states.legal_action_mask)[lanes, played].all() and np.asarray(states.legal_action_mask)[lanes, h0].all()
    # h0 is played whenever it has the named type
    kept = piece_types[lanes, h0] == named
    np.testing.assert_array_equal(played[kept], h0[kept])


def test_one_attuned_step_lowers_the_loss(setup, stt_selfplay):
    frames, _ = stt_selfplay
    batch = frames.flatten()
    loss_fn = attuned.attuned_loss("senior")

    def loss(params):
        output = setup.network.apply({"params": params, "batch_stats": setup.learner["batch_stats"]},
                                     NetworkInputs(batch.observation, batch.legal_action_mask), train=False)
        return loss_fn(output, batch)[0]

    params = setup.learner["params"]
    value_and_grad = jax.jit(jax.value_and_grad(loss))
    before, gradient = value_and_grad(params)
    optimizer = optax.sgd(0.05)
    updates, _ = optimizer.update(gradient, optimizer.init(params), params)
    after, _ = value_and_grad(optax.apply_updates(params, updates))
    assert float(after) < float(before)
    # train_on=senior averages the policy loss over the senior plies only: with uniform logits each frame's
    # cross-entropy is log(legal moves)
    senior = np.asarray(batch.extras["senior"], bool)
    assert 0 < senior.sum() < len(senior)
    uniform = NetworkOutput(jnp.zeros(batch.legal_action_mask.shape), jnp.zeros(len(senior)))
    legal = np.asarray(batch.legal_action_mask).sum(-1)
    for train_on, frames_used in (("senior", senior), ("all", np.ones_like(senior))):
        _, metrics = attuned.attuned_loss(train_on)(uniform, batch)
        assert float(metrics["policy_loss"]) == pytest.approx(np.log(legal[frames_used]).mean(), rel=1e-5)


def test_bad_options_are_refused(setup):
    with pytest.raises(ValueError, match="policy_target"):
        attuned.stt_move_rule(setup.game, setup.network, setup.search, setup.junior, PLIES, "visits")
    with pytest.raises(ValueError, match="train_on"):
        attuned.attuned_loss("juniors")
    with pytest.raises(ValueError, match="chess:lc0"):
        attuned.make_method(None, make_game("gardner_chess"))
    with pytest.raises(ValueError, match="framework"):
        attuned.make_method(None, setup.game, framework="blitz")


def test_the_stt_lane_rules_bits_are_carried_with_their_game_from_call_to_call():
    """The STT lane rule draws a game's bits (``[B, max_game_plies]``) when the game starts; carried lanes keep them:
    with calls of 3 plies and 8-ply games (Gardner chess, a move rule that plays the first legal move and records
    the bit it reads, as STT's does), every ply of each lane's first game — played over three calls — reads the
    bits drawn at its start, and the second game reads fresh ones."""
    from zerolab import MoveRule, PlyDecision, SelfPlayConfig, make_game, make_play_fn
    from tests.fast_compile import fast_jit

    game = make_game("gardner_chess")
    config = SelfPlayConfig(num_games=2, plies_per_iteration=3, max_game_plies=8)

    def act(variables, key, states, ply, bits):
        first_legal = jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)
        senior = bits[jnp.arange(bits.shape[0]), jnp.minimum(ply, bits.shape[1] - 1)]
        return PlyDecision(action=first_legal, policy_target=jax.nn.one_hot(first_legal, game.num_actions),
                           carry=bits, frame_extras={"senior": senior})

    core = make_play_fn(game, MoveRule(act=act), config, attuned.stt_lane_rule(game, config.max_game_plies))
    init, play = fast_jit(core.init_lanes, static_argnums=2), fast_jit(core.play_lanes, static_argnums=2)
    lanes = init(None, jax.random.key(0), 2)
    first_bits = np.asarray(lanes.rule_carry)
    read, over = [], []
    for call in range(4):
        frames, records, lanes = jax.device_get(play(None, jax.random.key(10 + call), 2, None, None, lanes))
        read.append(np.asarray(frames.extras["senior"]))
        over.append(np.asarray(records.game_over))
    read, over = np.concatenate(read), np.concatenate(over)  # [12, 2]: the lanes' plies over the four calls
    for lane in range(2):
        end = int(np.flatnonzero(over[:, lane])[0])
        assert end == 7  # the first legal move never mates in 8 plies: the cap ends the game, in call 3
        np.testing.assert_array_equal(read[:end + 1, lane], first_bits[lane, :end + 1])
    np.testing.assert_array_equal(np.asarray(lanes.rule_carry)[:, :4], read[8:12].T)  # the second game's own bits
    assert not np.array_equal(np.asarray(lanes.rule_carry), first_bits)
