"""Networks: the input/output contract, the AlphaZero ResNet, and lc0-format networks (maia)."""
