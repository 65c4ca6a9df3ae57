"""SAI: 7x7 Go with a winrate-vs-komi sigmoid head, branching self-play and a margin-seeking lambda agent."""
