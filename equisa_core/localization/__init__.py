"""The Localization loop: the prior, the evidence, the Bayesian updates, and what to inspect next."""
