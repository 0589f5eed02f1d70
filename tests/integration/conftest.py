"""Integration fixtures shared by every module here (one Docker engine per session)."""

from tests.integration.docker_fixtures import docker_engine, docker_engine_info  # noqa: F401
