"""Host bytes per frame that self-play sends to the host: dense (the program's float32 observations, bool masks and
float32 policy targets, as runs fetched them before frames were encoded on the device), encoded on the device (the
window's arrays at the static policy width) and stored in the window (policy cut to the widest frame).  Measured
from the arrays of one self-play batch of an untrained ResNet with Gumbel search (its targets cover every legal move).

    python scripts/frame_transfer_bytes.py [GAME] [GAMES] [PLIES] [SIMULATIONS]     # default: chess 16 32 8
"""

import sys

import jax

from zerolab.devices import local_numpy, make_mesh, replicate
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables
from zerolab.search.mcts import SearchConfig
from zerolab.selfplay.scan import SelfPlayConfig, make_selfplay_fn
from zerolab.training.replay import (
    STORAGE_DTYPES,
    FrameCodec,
    FrameWindow,
    device_policy_width,
    encode_device_frames,
    frame_fields,
    survey_frames,
)


def main(game_name: str = "chess", games: int = 16, plies: int = 32, simulations: int = 8) -> None:
    game = make_game(game_name)
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    mesh = make_mesh(jax.devices()[:1])
    selfplay = make_selfplay_fn(game, network, SearchConfig(num_simulations=int(simulations)),
                                SelfPlayConfig(num_games=int(games), plies_per_iteration=int(plies)), mesh)
    frames, _ = selfplay(replicate(init_variables(network, game, jax.random.key(0)), mesh), jax.random.key(1))
    count = frames.value_target.size
    dense = sum(array.nbytes for array in jax.tree.leaves(local_numpy(frames))) / count
    survey = jax.device_get(survey_frames(frames.observation, frames.policy_target))
    codec = FrameCodec.from_surveys(frames.observation.shape[2:], game.num_actions, [survey])
    width = device_policy_width(int(survey.policy_width), game.num_actions)
    fields = frame_fields(frames)
    sent = jax.device_get(encode_device_frames(codec, width, {name: fields[name] for name in STORAGE_DTYPES}))
    stored = FrameWindow.from_device_frames(frames)
    stored_bytes = sum(array.nbytes for name, array in stored.arrays.items() if not name.startswith("source_")) / count
    print(f"{game_name}: {count} frames ({games} games × {plies} plies, {simulations} simulations); bytes a frame to the "
          f"host: dense {dense:,.0f}; encoded on the device {sum(a.nbytes for a in sent.values()) / count:,.0f} "
          f"(policy width {width}); stored {stored_bytes:,.0f} (policy width {int(survey.policy_width)}; disk sources "
          f"not counted)")
    for name, array in sent.items():
        print(f"  {name:<22}{array.nbytes / count:>10,.1f} bytes a frame  {array.dtype} {array.shape[2:]}")
    print(f"  ({len(codec.bit_channels)} bit planes, {len(codec.scalar_channels)} one value "
          f"a frame, {len(codec.dense_channels)} float16 planes)")


if __name__ == "__main__":
    main(*sys.argv[1:2], *map(int, sys.argv[2:]))
