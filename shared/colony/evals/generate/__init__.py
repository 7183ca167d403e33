"""The eval sets' generators, one module per agent family (``python -m colony.evals.generate``
writes ``sets/generated/``): cases built from the demo org's data, each with the properties its
inputs and the org's written rules give a good answer, never a model's output."""
