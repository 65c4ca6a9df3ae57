"""skill-compat-stt (Hamade et al., ICLR 2024, Tables 1–3): tree, expector and junior-as-senior with maia-1900 as
junior against Stockfish's team in stochastic tag team; plain chess; Table 2/3 analogs.  Keys, types and presets:
:mod:`skill_compat.configs` (:class:`~skill_compat.configs.SttConfig`, which the launcher
reads with :func:`read_config(config, SttConfig) <skill_compat.configs.read_config>`)."""

from skill_compat.configs import SttConfig, framework_config, read_config


def get_config(preset: str = "tiny"):
    return framework_config("stt", preset)


__all__ = ["SttConfig", "get_config", "read_config"]
