"""Root conftest: its folder goes on sys.path, so ``import inventory`` works without installing."""
