"""Files shipped inside the wheel: the repository's prompts/ and configs/ are installed as evalkit/resources/prompts
and evalkit/resources/configs (pyproject.toml's package-dir). Read them through evalkit.locations, which prefers the
repository's own folders when evalkit runs from its source checkout."""
