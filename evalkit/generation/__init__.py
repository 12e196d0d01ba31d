"""Generation: loading a pair, running a prompt through a path, measuring it, the benchmark."""
