"""Engines: clients of external UCI and GTP engines (Stockfish, Fairy-Stockfish, GNU Go)."""
