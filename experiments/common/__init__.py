"""What several launchers of one method share: runners and config helpers that are not experiments themselves (no
``experiments/configs/`` file names them, and no experiment imports another; only these)."""
