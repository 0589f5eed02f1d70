"""Root conftest: its folder goes on sys.path, so ``import gradebook`` works without installing."""
