"""Search: mctx's Gumbel and PUCT loops with method rules (node state, selection, backup)."""
