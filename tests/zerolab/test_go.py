"""Go scoring at any komi (zerolab.games.go) checked against pgx's own rewards."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.games.go import GoGame


@functools.partial(jax.jit, static_argnums=(0, 2))
def random_finished_games(game: GoGame, key: jax.Array, batch: int):
    """[batch] games played by random legal moves (pass 15% of the time) until pgx ends them."""
    keys = jax.random.split(key, batch + 1)
    states = jax.vmap(game.init)(keys[:batch])

    def ply(carry, ply_key):
        states = carry
        choice_key, pass_key = jax.random.split(ply_key)
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
        actions = jax.random.categorical(choice_key, logits)
        pass_now = jax.random.bernoulli(pass_key, 0.15, actions.shape)
        actions = jnp.where(pass_now, game.pass_action, actions)
        stepped = jax.vmap(game.step)(states, actions)
        states = jax.tree.map(lambda new, old: jnp.where(
            states.terminated.reshape((-1,) + (1,) * (new.ndim - 1)), old, new), stepped, states)
        return states, None

    states, _ = jax.lax.scan(ply, states, jax.random.split(keys[-1], game.max_game_plies))
    return states


@pytest.mark.parametrize("komi", [0.5, 7.5, -3.5, 9.5])
def test_area_difference_agrees_with_pgx_rewards(komi):
    game = GoGame(size=7, komi=komi)
    states = jax.device_get(random_finished_games(game, jax.random.key(int(komi * 10) + 100), 48))
    assert bool(states.terminated.all())
    two_passes = np.asarray(game.ended_by_two_passes(states))
    assert two_passes.sum() >= 10, "too few games ended by two passes to test the scoring"
    black_reward = states.rewards[np.arange(48), np.asarray(game.black_player(states))]
    ours = np.asarray(game.black_wins(states))
    np.testing.assert_array_equal(ours[two_passes], black_reward[two_passes] > 0)
    # The area does not depend on komi: the same boards at another komi score by the same difference.
    difference = np.asarray(game.area_difference(states))
    np.testing.assert_array_equal(np.asarray(game.black_wins(states, komi + 100.0)), difference - komi - 100.0 > 0)
    assert (np.abs(difference) <= 49).all()


def test_area_difference_of_hand_made_positions():
    game = GoGame(size=7, komi=0.5)
    step = jax.jit(game.step)
    state = game.init(jax.random.key(0))
    assert int(game.area_difference(state)) == 0  # an empty board reaches neither colour
    assert bool(game.black_to_move(state))
    for vertex in ["D4", "pass"]:  # one black stone: the whole board reaches only Black
        state = step(state, game.gtp_to_action(vertex))
    assert int(game.area_difference(state)) == 49
    assert bool(game.black_to_move(state)) and not bool(state.terminated)
    # A white wall on column B and black wall on column C: White owns column A, Black columns D..G.
    for black, white in zip(["C1", "C2", "C3", "C4", "C5", "C6", "C7"], ["B1", "B2", "B3", "B4", "B5", "B6", "B7"]):
        state = step(state, game.gtp_to_action(black))
        state = step(state, game.gtp_to_action(white))
    assert int(game.area_difference(state)) == 5 * 7 - 2 * 7
    state = step(step(state, game.pass_action), game.pass_action)
    assert bool(state.terminated) and bool(game.ended_by_two_passes(state))
    assert game.max_game_plies == 2 * 7 * 7


def test_start_positions_are_move_lists_from_the_empty_board():
    from zerolab.games import InvalidPositionError

    game = GoGame(size=7, komi=0.5)
    assert game.start_moves("C3 pass E5") == [game.gtp_to_action(v) for v in ("C3", "pass", "E5")]
    state = game.from_fen("C3 pass E5")  # two handicap stones: White to move, nobody has just passed
    step = jax.jit(game.step)
    expected = step(step(step(game.init(jax.random.key(0)), 30), game.pass_action), 18)
    np.testing.assert_array_equal(np.asarray(game.stone_colours(state)), np.asarray(game.stone_colours(expected)))
    np.testing.assert_array_equal(np.asarray(state.observation), np.asarray(expected.observation))
    assert not bool(game.black_to_move(state)) and int(game.plies_played(state)) == 3
    assert not bool(game.ended_by_two_passes(state)) and not bool(state.terminated)
    assert int(game.area_difference(game.from_fen(""))) == 0  # the empty text is the empty board
    for text, message in [("C3 Z9", "C3 Z9.*malformed"), ("C3 C3", "move 2 .C3. cannot be played: it is illegal"),
                          ("pass pass", "the game is over after these moves"),
                          ("pass pass C3", "move 3 .C3. cannot be played: the game is already over")]:
        with pytest.raises(InvalidPositionError, match=message):
            game.from_fen(text)
