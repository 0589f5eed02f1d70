"""The Validation loop and repair: patch candidates, mutants, overfitting checks, the verdict."""
