"""The Docker sandbox's base image, made without any registry: debootstrap, then ``docker import``.

Machines that run EQUISA may reach Debian's package mirror but no container registry, so the
image ``equisa-python:bookworm`` is built from packages:

1. ``debootstrap --variant=minbase --include=python3-minimal,python3-pytest bookworm ROOT`` (about
   a minute; needs root and the ``debootstrap`` package),
2. ``ROOT`` packed into ``bookworm-python.tar`` in the cache folder (``$XDG_CACHE_HOME/equisa/docker``,
   else ``~/.cache/equisa/docker``), so later builds, on a fresh engine too, skip step 1,
3. the tarball imported as the image (``docker import`` through the SDK), with ``PATH`` and a
   UTF-8 locale set, then checked: ``python3 -m pytest --version`` must run in it.

Run ``python -m tasks.sandbox.docker_image`` to build it against ``DOCKER_HOST``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import docker
import docker.errors
import requests

from tasks.sandbox.contract import SandboxInfrastructureError
from tasks.sandbox.scratch import cache_folder

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_CACHE_DIR",
    "DEFAULT_MIRROR",
    "IMAGE_PACKAGES",
    "CONTAINER_PATH",
    "TARBALL_NAME",
    "ensure_base_image",
    "one_line",
    "build_rootfs_tarball",
    "main",
]

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "equisa-python:bookworm"
DEFAULT_CACHE_DIR = cache_folder("docker")
#: Overridable with ``EQUISA_DEBIAN_MIRROR`` (e.g. a local mirror or apt proxy).
DEFAULT_MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
#: python3-pytest (7.2.1 in bookworm) brings python3 itself; both exist in bookworm's main.
IMAGE_PACKAGES = ("python3-minimal", "python3-pytest")
TARBALL_NAME = "bookworm-python.tar"
#: An imported image has no environment of its own: these are its ``ENV`` lines.
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_IMAGE_CHANGES = [f"ENV PATH={CONTAINER_PATH}", "ENV LANG=C.UTF-8", 'CMD ["python3"]']
#: Left out of the tarball: downloaded .debs and package lists are not needed to run Python.
_EXCLUDED = ("./var/cache/apt/archives/*.deb", "./var/lib/apt/lists/*", "./proc/*", "./sys/*")


def ensure_base_image(
    client: docker.DockerClient,
    name: str = DEFAULT_IMAGE,
    cache_dir: Path = DEFAULT_CACHE_DIR,
    mirror: str | None = None,
) -> str:
    """Make sure image ``name`` exists on the engine, building it from Debian packages if not.

    Returns ``name``. Raises ``SandboxInfrastructureError`` with a one-line reason on failure.
    """
    try:
        client.images.get(name)
        return name
    except docker.errors.ImageNotFound:
        pass
    except (docker.errors.DockerException, requests.RequestException) as error:
        raise SandboxInfrastructureError(f"docker engine: {one_line(error)}") from None
    cache_dir = Path(cache_dir).expanduser()
    tarball = cache_dir / TARBALL_NAME
    if not tarball.is_file():
        build_rootfs_tarball(tarball, mirror=mirror or os.environ.get("EQUISA_DEBIAN_MIRROR", DEFAULT_MIRROR))
    repository, tag = name.rsplit(":", 1) if ":" in name.rsplit("/", 1)[-1] else (name, "latest")
    log.info("importing %s as %s", tarball, name)
    try:
        client.api.import_image_from_file(str(tarball), repository=repository, tag=tag,
                                          changes=_IMAGE_CHANGES)
        output = client.containers.run(name, ["python3", "-m", "pytest", "--version"], remove=True,
                                       network_mode="none", stdout=True, stderr=True)
    except docker.errors.ContainerError as error:
        raise SandboxInfrastructureError(
            f"image {name} was imported but `python3 -m pytest` fails in it: {one_line(error)}; "
            f"delete {tarball} to rebuild it"
        ) from None
    except (docker.errors.DockerException, requests.RequestException) as error:
        raise SandboxInfrastructureError(f"cannot import {tarball} as {name}: {one_line(error)}") from None
    log.info("image %s ready: %s", name, output.decode(errors="replace").strip())
    return name


def build_rootfs_tarball(tarball: Path, mirror: str = DEFAULT_MIRROR) -> Path:
    """Debootstrap a minimal bookworm with Python and pytest, and pack it into ``tarball``.

    The tarball appears atomically (written beside it, then renamed), so an interrupted build
    never leaves a half tarball for the next run to trust.
    """
    debootstrap = shutil.which("debootstrap") or next(
        (p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if os.path.exists(p)), None)
    if debootstrap is None:
        raise SandboxInfrastructureError(
            "debootstrap is not installed (apt-get install debootstrap): it builds the Docker "
            "sandbox's base image"
        )
    if os.geteuid() != 0:
        raise SandboxInfrastructureError(
            f"building the Docker base image needs root (debootstrap); run `sudo {sys.executable} "
            f"-m tasks.sandbox.docker_image` once, or put {TARBALL_NAME} in {tarball.parent}"
        )
    tarball.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=tarball.parent))
    root = work / "root"
    try:
        command = [debootstrap, "--variant=minbase", f"--include={','.join(IMAGE_PACKAGES)}", SUITE,
                   str(root), mirror]
        log.info("building the base image's root file system: %s", " ".join(command))
        with open(work / "debootstrap.log", "wb") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            tail = (work / "debootstrap.log").read_text(errors="replace").strip().splitlines()[-1:]
            raise SandboxInfrastructureError(
                f"debootstrap failed (exit {done.returncode}): {tail[0] if tail else 'no output'}"
            )
        partial = work / (TARBALL_NAME + ".partial")
        # GNU tar rather than the tarfile module: it keeps device nodes, hard links and numeric
        # owners of a whole root file system exactly, and is several times faster on 270 MB.
        excludes = [f"--exclude={pattern}" for pattern in _EXCLUDED]
        packed = subprocess.run(["tar", "--numeric-owner", *excludes, "-C", str(root), "-cf",
                                 str(partial), "."], capture_output=True, stdin=subprocess.DEVNULL)
        if packed.returncode != 0:
            raise SandboxInfrastructureError(
                f"packing the root file system failed: {one_line(packed.stderr.decode(errors='replace'))}"
            )
        os.replace(partial, tarball)
        return tarball
    finally:
        _remove_tree(work)


def _remove_tree(path: Path) -> None:
    """Remove a debootstrap work folder, first unmounting anything a killed debootstrap left."""
    prefix = str(path.resolve()) + "/"
    try:
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        mounts = []
    for mount in sorted((m for m in mounts if m.startswith(prefix)), reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


def one_line(error: object) -> str:
    """An error message on one line, capped at 300 characters."""
    text = " ".join(str(error).split())
    return text[:300] + ("..." if len(text) > 300 else "")


def main(argv: list[str] | None = None) -> int:
    """``python -m tasks.sandbox.docker_image``: build the base image on the engine ``DOCKER_HOST`` names."""
    parser = argparse.ArgumentParser(prog="python -m tasks.sandbox.docker_image", description=__doc__.split("\n")[0])
    parser.add_argument("--name", default=os.environ.get("EQUISA_DOCKER_IMAGE", DEFAULT_IMAGE))
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        client = docker.from_env()
        ensure_base_image(client, args.name, args.cache_dir)
    except docker.errors.DockerException as error:
        print(f"equisa: docker engine unreachable: {one_line(error)}", file=sys.stderr)
        return SandboxInfrastructureError.exit_code
    except SandboxInfrastructureError as error:
        print(f"equisa: {error.message}", file=sys.stderr)
        return error.exit_code
    print(args.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
