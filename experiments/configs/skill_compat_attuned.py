"""skill-compat-attuned (Hamade et al., ICLR 2024, the attuned senior): maia-1900 fine-tuned in the framework
(``framework.name=stt|hb``) through zerolab's jitted self-play, then played against Stockfish's team and against
tree's team on the same bitstrings.  Keys, types and presets: :mod:`skill_compat.configs`
(:class:`~skill_compat.configs.AttunedConfig`, which the launcher reads with
:func:`read_config(config, AttunedConfig) <skill_compat.configs.read_config>`)."""

from skill_compat.configs import AttunedConfig, AttunedEvaluationConfig, attuned_config, read_config


def get_config(preset: str = "tiny"):
    return attuned_config(preset)


__all__ = ["AttunedConfig", "AttunedEvaluationConfig", "get_config", "read_config"]
