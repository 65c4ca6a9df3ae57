"""skill-compat-stt (Hamade et al., ICLR 2024, Tables 1–3): tree, expector and junior-as-senior with maia-1900 as
junior against Stockfish's team in stochastic tag team; plain chess; Table 2/3 analogs.  Keys and presets:
:mod:`skill_compat.configs`."""

from skill_compat.configs import framework_config


def get_config(preset: str = "tiny"):
    return framework_config("stt", preset)
