"""The shared local Prefect server, its watchdog, and where Prefect's logs go."""
