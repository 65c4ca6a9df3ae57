"""Self-play in chunks under a device memory budget (zerolab/selfplay/chunks.py, make_selfplay_fn)."""

import logging
import re

import jax
import numpy as np
import pytest

from zerolab.devices import GIB, device_memory_budget, format_bytes, make_mesh, program_memory, replicate
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables
from zerolab.search.config import SearchConfig
from zerolab.selfplay.chunks import SelfPlayDoesNotFit, choose_chunk_games, chunk_keys, chunk_sizes
from zerolab.selfplay.programs import make_selfplay_fn
from zerolab.selfplay.scan import make_play_fn
from zerolab.selfplay.types import SelfPlayConfig


def test_the_chunk_is_the_largest_divisor_whose_program_fits():
    def memory(sizes: dict):
        """Programs of several chunks on the line 100 + 10·size, one chunk (12 games) at 200, below it."""
        compiled = []

        def memory_of(size):
            compiled.append(size)
            return sizes.get(size, 200 if size == 12 else 100 + 10 * size)

        return memory_of, compiled

    # All 12 games fit: one compile, one chunk.
    memory_of, compiled = memory({})
    choice = choose_chunk_games(12, memory_of, budget_bytes=200)
    assert (choice.chunk_games, choice.num_chunks, choice.device_bytes, compiled) == (12, 1, 200, [12])
    # Just over: the largest chunk of several, 6 games (2 chunks), fits.
    memory_of, compiled = memory({})
    choice = choose_chunk_games(12, memory_of, budget_bytes=165)
    assert (choice.chunk_games, choice.num_chunks, choice.device_bytes, compiled) == (6, 2, 160, [12, 6])
    # Further over: the line through 1 game (110) and 6 games (160) predicts 4 games under 145, compiled to verify.
    memory_of, compiled = memory({})
    choice = choose_chunk_games(12, memory_of, budget_bytes=145)
    assert (choice.chunk_games, choice.num_chunks, compiled) == (4, 3, [12, 6, 1, 4])
    assert choice.measured == {12: 200, 6: 160, 1: 110, 4: 140}
    # The line's slope is per game beyond the first: (160 − 110) / (6 − 1) = 10 a game, so 3 games (130) is the
    # largest predicted under 135 and the first compiled after the line's two points (a slope of 50 / 6 would
    # predict 4 games, 135.0 ≤ 135, and compile 4 first).
    memory_of, compiled = memory({})
    choice = choose_chunk_games(12, memory_of, budget_bytes=135)
    assert (choice.chunk_games, compiled) == (3, [12, 6, 1, 3])
    # A prediction the compiled program does not keep: the next smaller divisor is compiled in turn.
    memory_of, compiled = memory({4: 150})
    choice = choose_chunk_games(12, memory_of, budget_bytes=145)
    assert (choice.chunk_games, compiled) == (3, [12, 6, 1, 4, 3])
    assert chunk_sizes(12) == [1, 2, 3, 4, 6, 12] and chunk_sizes(7) == [1, 7]
    # A prime number of games: one chunk or chunks of one game.
    assert choose_chunk_games(7, lambda size: 10 * size, budget_bytes=50).chunk_games == 1
    # Even one game a device over the budget: an error naming the budget and the smallest program's memory.
    memory_of, compiled = memory({12: 3 * GIB, 6: 2 * GIB, 1: GIB // 2})
    with pytest.raises(SelfPlayDoesNotFit, match=r"budget of 0\.25 GiB.*chunks of 1 game, takes 0\.50 GiB") as error:
        choose_chunk_games(12, memory_of, budget_bytes=GIB // 4)
    assert (error.value.budget_bytes, error.value.smallest_bytes, compiled) == (GIB // 4, GIB // 2, [12, 6, 1])
    with pytest.raises(SelfPlayDoesNotFit):
        choose_chunk_games(1, lambda size: 10, budget_bytes=5)


def test_each_chunk_plays_with_its_own_key_folded_from_the_devices():
    """Chunk c of C plays with fold_in(key, c), keys all different; one chunk plays with the key itself."""
    key = jax.random.key(5)
    keys = chunk_keys(key, 3)
    data = [jax.random.key_data(keys[chunk]).tolist() for chunk in range(3)]
    assert data == [jax.random.key_data(jax.random.fold_in(key, chunk)).tolist() for chunk in range(3)]
    assert len({tuple(item) for item in data}) == 3
    assert jax.random.key_data(chunk_keys(key, 1)).tolist() == [jax.random.key_data(key).tolist()]


def test_the_budget_is_the_key_else_the_devices_own_memory():
    cpu = jax.devices("cpu")[0]
    assert device_memory_budget(1.5, cpu) == int(1.5 * GIB)
    assert device_memory_budget(None, cpu) is None  # the CPU reports no memory: no chunks
    with pytest.raises(ValueError, match="device_memory_gib must be > 0"):
        SelfPlayConfig(device_memory_gib=0.0)


def random_move_rule(game):
    """A move rule playing a uniformly random legal move: chunking is about the games a program plays, not its search,
    and this rule compiles in a fraction of a search's time."""
    import jax.numpy as jnp

    from zerolab.selfplay.types import MoveRule, PlyDecision

    def act(variables, key, states, ply, carry):
        action = jax.random.categorical(key, jnp.where(states.legal_action_mask, 0.0, -jnp.inf)).astype(jnp.int32)
        return PlyDecision(action=action, policy_target=jax.nn.one_hot(action, game.num_actions), carry=carry)

    return MoveRule(act=act)


@pytest.mark.slow  # 5 self-play programs of 4, 2 and 1 games compiled
def test_chunked_selfplay_has_the_shapes_of_one_chunk_and_each_chunk_is_a_call_of_its_own(caplog):
    # 5×5 Go and random legal moves: neither the game nor the search is the point, and these compile fastest.
    game = make_game("go", go_size=5)
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=4, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    mesh = make_mesh(jax.devices()[:1])
    search = SearchConfig(num_simulations=2, max_num_considered_actions=2)
    sizes = dict(num_games=4, plies_per_iteration=4, max_game_plies=3, temperature_plies=2)
    on_devices, key = replicate(variables, mesh), jax.random.key(5)
    play_fn = make_play_fn(game, random_move_rule(game), SelfPlayConfig(**sizes))

    def selfplay_under(gib):
        return make_selfplay_fn(game, network, search, SelfPlayConfig(**sizes, device_memory_gib=gib), mesh,
                                play_fn=play_fn)

    # A budget the whole program fits: one chunk, bit for bit the device's call of today (key folded with device 0).
    selfplay = selfplay_under(1000.0)  # one object for the call and the lowerings below: traced once a size
    frames, records = jax.device_get(selfplay(on_devices, key))
    today = jax.device_get(jax.jit(lambda v, k: play_fn(v, k, 4))(variables, jax.random.fold_in(key, 0)))
    for ours, theirs in zip(jax.tree.leaves((frames, records)), jax.tree.leaves(today)):
        np.testing.assert_array_equal(ours, theirs)

    # A budget between chunks of 2 games (the largest of several) and all 4: two chunks, the shapes and dtypes of one.
    memory = {size: program_memory(selfplay.lower(on_devices, key, size).compile()).device_bytes for size in (4, 2)}
    assert memory[2] < memory[4]
    with caplog.at_level(logging.INFO):
        chunked = jax.device_get(selfplay_under((memory[2] + memory[4]) / 2 / GIB)(on_devices, key))
    assert "4 games a device in 2 chunk(s) of 2" in caplog.text
    assert jax.tree.structure(chunked) == jax.tree.structure((frames, records))
    for ours, whole in zip(jax.tree.leaves(chunked), jax.tree.leaves((frames, records))):
        assert (ours.shape, ours.dtype) == (whole.shape, whole.dtype)
    assert chunked[0].to_frames().observation.shape == (4, 4, 5, 5, 17)
    # Each chunk's frames and records are an unchunked call on its 2 games with its key, fold_in(device key, c)
    # (written out here, not taken from chunk_keys, which a test above holds), and the two chunks' games differ.
    play_two = jax.jit(lambda v, k: play_fn(v, k, 2))
    device_key = jax.random.fold_in(key, 0)
    for chunk in range(2):
        alone = jax.device_get(play_two(variables, jax.random.fold_in(device_key, chunk)))
        for ours, theirs in zip(jax.tree.leaves(chunked), jax.tree.leaves(alone)):
            np.testing.assert_array_equal(ours[:, 2 * chunk:2 * chunk + 2], theirs)
    observations = chunked[0].to_frames().observation
    assert not np.array_equal(observations[:, :2], observations[:, 2:])

    # A budget under even one game a device: a clear error naming the budget and the 1-game program's memory (measured
    # here by the same compile the error's search makes), before anything runs.
    smallest = program_memory(selfplay.lower(on_devices, key, 1).compile()).device_bytes
    budget = smallest // 2
    message = (rf"budget of {re.escape(format_bytes(budget))}: .*in chunks of 1 game, "
               rf"takes {re.escape(format_bytes(smallest))}")
    with pytest.raises(SelfPlayDoesNotFit, match=message) as error:
        selfplay_under(budget / GIB)(on_devices, key)
    assert error.value.smallest_bytes == smallest and abs(error.value.budget_bytes - budget) <= 1


def test_carried_lanes_in_chunks_are_each_chunks_own_lanes_and_shared_state():
    """The carried calls in 2 chunks (:func:`lanes_in_chunks`) are, chunk by chunk, the unchunked calls on its 2
    games with its key, over two calls: lanes ``[4]`` hold each chunk's games, the lane rule's shared state ``[2]``
    each chunk's own (here a count of the games ended, carried from call to call); one chunk gives the shared state a
    leading axis of 1."""
    import jax.numpy as jnp

    from zerolab.selfplay.chunks import lanes_in_chunks
    from zerolab.selfplay.hooks import standard_lane_rule
    from zerolab.selfplay.types import LaneRule

    game = make_game("go", go_size=5)
    standard = standard_lane_rule(game)

    def init(variables, keys, num_games, settings):
        return standard.init(variables, keys, num_games, settings).replace(shared=jnp.zeros((), jnp.int32))

    def step(keys, lanes, played, settings):
        stepped, statistics = standard.step(keys, lanes.replace(shared=None), played, settings)
        return stepped.replace(shared=lanes.shared + played.game_over.sum()), statistics

    play_fn = make_play_fn(game, random_move_rule(game), SelfPlayConfig(num_games=4, plies_per_iteration=3,
                                                                     max_game_plies=4),
                           lane_rule=LaneRule(init=init, step=step))
    chunked_init, chunked_play = (jax.jit(f, static_argnums=2) for f in lanes_in_chunks(play_fn, 2))
    alone_init, alone_play = jax.jit(play_fn.init_lanes, static_argnums=2), jax.jit(play_fn.play_lanes,
                                                                                    static_argnums=2)
    key = jax.random.key(3)
    lanes = chunked_init(None, key, 4)
    assert lanes.shared.shape == (2,) and lanes.ply.shape == (4,)
    alone = [alone_init(None, chunk_key, 2) for chunk_key in chunk_keys(key, 2)]
    ended = 0
    for call in range(2):
        call_key = jax.random.fold_in(key, call + 1)
        frames, records, lanes = jax.device_get(chunked_play(None, call_key, 4, None, None, lanes))
        ended += int(np.asarray(records.game_over).sum())
        for chunk, chunk_key in enumerate(chunk_keys(call_key, 2)):
            own_frames, own_records, alone[chunk] = jax.device_get(
                alone_play(None, chunk_key, 2, None, None, alone[chunk]))
            for ours, theirs in zip(jax.tree.leaves((frames, records)), jax.tree.leaves((own_frames, own_records))):
                np.testing.assert_array_equal(ours[:, 2 * chunk:2 * chunk + 2], theirs)
            for ours, theirs in zip(jax.tree.leaves(lanes.replace(shared=None)),
                                    jax.tree.leaves(alone[chunk].replace(shared=None))):
                np.testing.assert_array_equal(ours[2 * chunk:2 * chunk + 2], theirs)
            assert int(lanes.shared[chunk]) == int(alone[chunk].shared)
    assert int(lanes.shared.sum()) == ended >= 4  # the games ended in both calls (the 4-ply cap ends one a lane)
    one_init, _ = lanes_in_chunks(play_fn, 1)
    assert jax.jit(one_init, static_argnums=2)(None, key, 4).shared.shape == (1,)


def test_the_lane_rule_gets_streams_1_to_3_of_the_calls_key_and_the_scan_stream_0():
    """``init`` (through ``play`` and ``init_lanes``) and ``resume`` (through ``play_lanes``) get streams 1–3 of the
    call's key, never the scan's stream 0 (which would make a lane's first game and its first move correlated)."""
    import jax.numpy as jnp

    from zerolab.selfplay.hooks import standard_lane_rule
    from zerolab.selfplay.scan import call_streams
    from zerolab.selfplay.types import LANE_INIT_KEYS, LaneRule, MoveRule, PlyDecision

    game = make_game("go", go_size=5)
    standard = standard_lane_rule(game)

    def remember(keys, num_games):  # [num_games, LANE_INIT_KEYS, 2] the key data each lane was handed
        return jnp.broadcast_to(jax.random.key_data(keys), (num_games,) + jax.random.key_data(keys).shape)

    def init(variables, keys, num_games, settings):
        return standard.init(variables, keys, num_games, settings).replace(rule_carry=remember(keys, num_games))

    def resume(variables, keys, lanes, settings):
        return lanes.replace(rule_carry=remember(keys, lanes.ply.shape[0]))

    def step(keys, lanes, played, settings):
        stepped, statistics = standard.step(keys, lanes.replace(rule_carry=None), played, settings)
        return stepped.replace(rule_carry=lanes.rule_carry), statistics

    def act(variables, key, states, ply, carry):
        action = jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)
        return PlyDecision(action=action, policy_target=jax.nn.one_hot(action, game.num_actions), carry=carry,
                           frame_extras={"lane_keys": carry})

    play = make_play_fn(game, MoveRule(act=act), SelfPlayConfig(num_games=2, plies_per_iteration=1,
                                                                max_game_plies=4),
                        lane_rule=LaneRule(init=init, step=step, resume=resume))
    key = jax.random.key(5)
    streams = jax.random.key_data(jax.random.split(key, 1 + LANE_INIT_KEYS))
    scan_key, lane_keys = call_streams(key)
    np.testing.assert_array_equal(jax.random.key_data(scan_key), streams[0])
    np.testing.assert_array_equal(jax.random.key_data(lane_keys), streams[1:])
    frames, _ = jax.jit(play, static_argnums=2)(None, key, 2)
    lanes = jax.jit(play.init_lanes, static_argnums=2)(None, key, 2)
    _, _, resumed = jax.jit(play.play_lanes, static_argnums=2)(None, key, 2, None, None, lanes)
    for handed in (np.asarray(frames.extras["lane_keys"])[0], np.asarray(lanes.rule_carry),
                   np.asarray(resumed.rule_carry)):
        for lane in handed:
            np.testing.assert_array_equal(lane, streams[1:])
            assert not (lane == streams[0]).all(axis=-1).any()
