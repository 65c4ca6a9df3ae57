"""AlphaGateau: chess as a graph (squares = nodes, moves = edges) with edge-featured GATEAU attention."""
