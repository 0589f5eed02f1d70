"""The Discovery loop: the suite's spectrum, ambiguity groups, and which of them to split."""
