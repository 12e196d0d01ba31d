"""Publishing: the HTML report, the Hub dataset, provenance and the Space's database sync."""
