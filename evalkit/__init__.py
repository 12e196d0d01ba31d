"""evalkit: does a draft model (Transformers assisted generation) make our writing requests
faster without hurting the content? Measure, judge, decide."""

__version__ = "0.1.0"
