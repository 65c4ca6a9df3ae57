"""Searchless chess: a transformer distilled from Stockfish action-values that plays without search."""
