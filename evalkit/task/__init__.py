"""The fixed task: prompts and their criteria, and the rule-based pre-screen."""
