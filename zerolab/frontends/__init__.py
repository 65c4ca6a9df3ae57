"""Front ends: the UCI and GTP servers, the command lines, benchmarks and experiment set-up."""
