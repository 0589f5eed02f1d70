"""The test-generation agent's tasks: setup, generation, measurement, the model and publishing."""
