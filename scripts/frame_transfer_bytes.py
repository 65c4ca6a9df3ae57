"""Bytes a frame of self-play: dense (float32 observations, bool masks and float32 policy targets, as runs fetched
them before frames were encoded on the device), as the scan stores them on the device (the game's codec, policy
arrays as wide as the game's most legal moves), as they cross to the host (policy cut to the widest frame) and in the
window.  Measured from the arrays of one self-play batch of an untrained ResNet with Gumbel search (its targets cover
every legal move).

    python scripts/frame_transfer_bytes.py [GAME] [GAMES] [PLIES] [SIMULATIONS]     # default: chess 16 32 8
"""

import sys

import jax
import numpy as np

from zerolab import AlphaZeroResNet, SearchConfig, SelfPlayConfig, init_variables, make_game, make_mesh, replicate
from zerolab.selfplay import make_selfplay_fn
from zerolab.training import FrameWindow


def main(game_name: str = "chess", games: int = 16, plies: int = 32, simulations: int = 8) -> None:
    game = make_game(game_name)
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    mesh = make_mesh(jax.devices()[:1])
    selfplay = make_selfplay_fn(game, network, SearchConfig(num_simulations=int(simulations)),
                                SelfPlayConfig(num_games=int(games), plies_per_iteration=int(plies)), mesh)
    packed, _ = selfplay(replicate(init_variables(network, game, jax.random.key(0)), mesh), jax.random.key(1))
    count = packed.value_target.size
    host = jax.device_get(packed)  # one device, one process: the whole batch as numpy
    frames = host.to_frames()
    dense = (frames.observation.size * 4 + frames.legal_action_mask.size + frames.policy_target.size * 4
             + frames.value_target.size * 4 + frames.value_mask.size) / count
    on_device = {name: np.asarray(array) for name, array in host.stored_fields().items()}
    window = FrameWindow.from_device_frames(packed)
    to_host = {name: array for name, array in window.arrays.items() if not name.startswith("source_")}
    width = window.arrays["policy_indices"].shape[1]
    print(f"{game_name}: {count} frames ({games} games × {plies} plies, {simulations} simulations); bytes a frame: "
          f"dense {dense:,.0f}; stored in the scan {sum(a.nbytes for a in on_device.values()) / count:,.0f} (policy "
          f"width {on_device['policy_indices'].shape[-1]}); to the host and in the window "
          f"{sum(a.nbytes for a in to_host.values()) / count:,.0f} (policy width {width}; disk sources not counted)")
    for name, array in on_device.items():
        print(f"  {name:<22}{array.nbytes / count:>10,.1f} bytes a frame in the scan  {array.dtype} {array.shape[2:]}")
    codec = packed.codec
    print(f"  ({len(codec.bit_channels)} bit planes, {len(codec.scalar_channels)} one value "
          f"a frame, {len(codec.dense_channels)} float16 planes)")


if __name__ == "__main__":
    main(*sys.argv[1:2], *map(int, sys.argv[2:]))
