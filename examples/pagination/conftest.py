"""Root conftest: its folder goes on sys.path, so ``import pagination`` works without installing."""
