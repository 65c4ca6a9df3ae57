"""Launchers that reproduce each paper's figures.

``python -m experiments run NAME [--preset tiny|paper] [--workdir DIR] [key=value ...]`` loads the config
``experiments/configs/NAME.py`` (``get_config(preset)``) and calls ``run(config, workdir)`` of the runner
``experiments/NAME.py`` (``-`` in NAME becomes ``_``), which writes its run directory and returns its summary.
"""
