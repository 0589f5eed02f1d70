"""Root conftest: its folder goes on sys.path, so ``import invoicing`` works without installing."""
