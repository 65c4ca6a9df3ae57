"""skill-compat-hb (Hamade et al., ICLR 2024, Tables 1, 4, 7): tree, expector, junior-as-brain and the hand alone
with maia-1900 as hand against Stockfish's team in hand and brain; plain chess; Table 4/7 analogs.  Keys, types and
presets: :mod:`skill_compat.configs` (:class:`~skill_compat.configs.HbConfig`, which the launcher
reads with :func:`read_config(config, HbConfig) <skill_compat.configs.read_config>`)."""

from skill_compat.configs import HbConfig, framework_config, read_config


def get_config(preset: str = "tiny"):
    return framework_config("hb", preset)


__all__ = ["HbConfig", "get_config", "read_config"]
