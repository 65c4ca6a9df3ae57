"""Experiment configs: each module defines ``get_config(preset) -> ml_collections.ConfigDict``."""
