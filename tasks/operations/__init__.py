"""Batch and scheduled operation: batches, deployment runs, CI triggers, task runners and progress events."""
