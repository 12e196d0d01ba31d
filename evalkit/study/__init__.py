"""A study: its gate, its plan, the blind pair pool and its gold pairs."""
