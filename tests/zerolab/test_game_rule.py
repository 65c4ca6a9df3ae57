"""The self-play scan's lane and game rules: a method's lane rule (init, step), reward and summary hooks, with games
that start with plies behind them, a per-device shared state and per-ply statistics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from zerolab import (
    MoveRule,
    PlyDecision,
    SelfPlayConfig,
    make_game,
    make_play_fn,
    standard_lane_rule,
)
from zerolab.selfplay import (
    GameRule,
    LaneRule,
    Lanes,
    PlayedPly,
    advance_lanes,
    restart_games,
)

PLIES_BEHIND = 3  # every game starts as if 3 plies had been played before its first position


def lowest_point_rule() -> MoveRule:
    """Plays the lowest legal action (never a pass on an open board); frames carry the ply the rule saw."""

    def act(variables, key, states, ply, carry):
        del variables, key
        action = jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)
        return PlyDecision(action=action, policy_target=jax.nn.one_hot(action, states.legal_action_mask.shape[-1]),
                           carry=carry, frame_extras={"ply": ply})

    return MoveRule(act=act)


def counting_rules(game) -> tuple[LaneRule, GameRule]:
    """Games start with ``PLIES_BEHIND`` plies behind them; the mover of a game's last move gets +1; the shared state
    counts the games started from the call's ``settings`` (a count to start from) on; the summary reports it, the
    restarts counted by the lane rule's statistics and the settings the step saw."""

    def fresh(key, num_games):
        return jax.vmap(game.init)(jax.random.split(key, num_games)), jnp.full(num_games, PLIES_BEHIND, jnp.int32)

    def init(variables, keys, num_games, settings):
        states, first_ply = fresh(keys[0], num_games)
        return Lanes(states=states, ply=first_ply, first_ply=first_ply, shared=settings + num_games)

    def reward(lanes, next_states, game_over):
        return game_over.astype(jnp.float32)

    def step(keys, lanes, played, settings):
        states, first_ply = fresh(keys[0], played.game_over.shape[0])
        restarted = restart_games(advance_lanes(lanes, played), played.game_over, states, first_ply)
        statistics = {"restarts": played.game_over.sum(), "settings": settings}
        return restarted.replace(shared=lanes.shared + played.game_over.sum()), statistics

    def summarize(records, statistics, lanes):
        shape = records.game_over.shape
        return {"games_started": jnp.broadcast_to(lanes.shared, shape).astype(jnp.float32),
                "restarts": jnp.broadcast_to(statistics["restarts"].sum(), shape).astype(jnp.float32),
                "settings_in_step": jnp.broadcast_to(statistics["settings"][0], shape).astype(jnp.float32)}

    return LaneRule(init=init, step=step), GameRule(reward=reward, summarize=summarize)


def test_lane_and_game_rules_start_score_and_restart_games_with_plies_behind_them():
    game = make_game("go", go_size=7)
    config = SelfPlayConfig(num_games=2, plies_per_iteration=8, max_game_plies=6)
    lane_rule, game_rule = counting_rules(game)
    play = make_play_fn(game, lowest_point_rule(), config, lane_rule=lane_rule, game_rule=game_rule)
    settings = jnp.int32(1000)  # the call's settings: the count of games started begins at 1000
    frames, records = jax.device_get(jax.jit(play, static_argnums=2)(None, jax.random.key(0), 2, None, settings))

    # The ply cap counts the plies behind a game: each game plays 6 - 3 = 3 plies of its own.
    np.testing.assert_array_equal(frames.extras["ply"][:, 0], [3, 4, 5, 3, 4, 5, 3, 4])
    np.testing.assert_array_equal(records.game_over[:, 0], [0, 0, 1, 0, 0, 1, 0, 0])
    # The records count a game's own plies.
    np.testing.assert_array_equal(records.game_length[:, 0], [1, 2, 3, 1, 2, 3, 1, 2])
    np.testing.assert_array_equal(records.first_player_moved[:, 0], [1, 0, 1, 1, 0, 1, 1, 0])
    # The rule's rewards make the value targets; the last, unfinished game is masked.
    np.testing.assert_array_equal(records.reward[:, 1], [0, 0, 1, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(frames.value_target[:6, 1], [1, -1, 1, 1, -1, 1])
    np.testing.assert_array_equal(frames.value_mask[:, 1], [1, 1, 1, 1, 1, 1, 0, 0])
    # Restarted lanes begin again from the empty board.
    observation = frames.to_frames().observation  # Go's planes are declared binary: stored as bits
    np.testing.assert_array_equal(observation[3], observation[0])
    # The shared state and the statistics reach the summary: 2 first games + 2 restarts in each of 2 lanes, counted
    # from the settings' 1000 (init saw them); the step saw them too.
    np.testing.assert_array_equal(records.summary["games_started"], 1006.0)
    np.testing.assert_array_equal(records.summary["restarts"], 4.0)
    np.testing.assert_array_equal(records.summary["settings_in_step"], 1000.0)
    assert set(records.summary) == {"games_started", "restarts", "settings_in_step"}


def test_the_standard_lane_rule_draws_each_game_and_carry_from_its_first_key():
    """The core hands the lane rule its own keys; the standard rule draws a game's position from the first and its
    move-rule carry from the first folded with 1, in ``init`` and in ``step`` (here the "positions" and carries are
    the keys' data themselves, so each draw shows its key)."""
    key_rows = lambda key, num_games: jnp.broadcast_to(jax.random.key_data(key), (num_games, 2))  # noqa: E731
    rule = standard_lane_rule(make_game("go", go_size=7), initial_states=key_rows, init_carry=key_rows)
    init_keys = jax.random.split(jax.random.key(5), 3)
    lanes = rule.init(None, init_keys, 2, None)
    first, first_carry = jax.random.key_data(init_keys[0]), jax.random.key_data(jax.random.fold_in(init_keys[0], 1))
    np.testing.assert_array_equal(lanes.states, [first, first])
    np.testing.assert_array_equal(lanes.rule_carry, [first_carry, first_carry])
    assert not rule.from_start_position  # games from other positions: no self-play PGN

    step_keys = jax.random.split(jax.random.key(6), 2)
    decision = PlyDecision(action=jnp.zeros(2, jnp.int32), policy_target=jnp.zeros((2, 3)), carry=lanes.rule_carry)
    played = PlayedPly(decision=decision, action=decision.action, next_states=lanes.states,
                       game_over=jnp.array([True, False]), reward=jnp.zeros(2))
    after, statistics = rule.step(step_keys, lanes, played, None)
    fresh = jax.random.key_data(step_keys[0])
    fresh_carry = jax.random.key_data(jax.random.fold_in(step_keys[0], 1))
    np.testing.assert_array_equal(after.states, [fresh, first])  # lane 0's game ended: a fresh one
    np.testing.assert_array_equal(after.rule_carry, [fresh_carry, first_carry])
    np.testing.assert_array_equal(after.ply, [0, 1])
    assert statistics == {}
