"""Per-function deployment bundles: ``build/functions/<name>/`` and a reproducible zip.

Cloud Functions uploads one source directory and installs the ``requirements.txt`` beside
``main.py``, so each bundle holds the function's ``main.py``, its pinned requirements (from
the import graph, ``colony.deploy.imports``), the shared package copied alongside
(``colony/``, without the local-only and build-time parts) and the data files its modules
declare in ``RUNTIME_DATA``, copied from the build environment (``colony.data_files``).

The zip is reproducible: entries sorted, fixed timestamps and modes, fixed compression, so the
same inputs give the same bytes; it is named by its content hash, which is the source object
terraform uploads (a code change is a new object and so a new function revision).

A function that runs in an image of our own (``Function.image``, e.g. ``browser``) is served
from the same bundle directory, built into ``deploy/<image>/Dockerfile``; its image tag is the
hash of the zip and of that Dockerfile, so a change to either is a new image and a new
revision. ``images.txt`` lists ``<name> <image> <tag>`` for the pipeline's image step, and
``sources.tfvars.json`` gives terraform the same tags (``function_images``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from colony.data_files import BUNDLED
from colony.deploy.imports import (
    Distributions,
    SharedPackage,
    excluded,
    import_graph,
    read_pins,
    requirements,
)
from colony.errors import ConfigError
from colony.registry.functions import FUNCTIONS

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
SOURCES_FILE = "sources.tfvars.json"  # terraform -var-file: function → source object, image tag
IMAGES_FILE = "images.txt"  # cloudbuild.yaml's image step: one "<name> <image> <tag>" a line


def dockerfile(repo: Path, image: str) -> Path:
    """The Dockerfile of an image of our own: ``deploy/<image>/Dockerfile``."""
    return repo / "deploy" / image / "Dockerfile"


@dataclass(frozen=True, slots=True)
class Bundle:
    name: str
    directory: Path  # build/functions/<name>/
    zip_path: Path  # build/functions/<name>-<sha256 prefix>.zip
    sha256: str
    requirements: tuple[str, ...]
    modules: frozenset[str]  # colony modules its main.py can import
    data: frozenset[tuple[str, str]]  # (distribution, path) files it carries
    image_tag: str | None = None  # for a function in an image of our own (module docstring)

    @property
    def object_name(self) -> str:
        return self.zip_path.name


def _package_files(shared_root: Path) -> list[tuple[Path, str]]:
    """The deployable files of the shared package: (source, path inside the bundle)."""
    files = []
    for path in sorted((shared_root / "colony").rglob("*")):
        rel = path.relative_to(shared_root)
        module = ".".join(rel.with_suffix("").parts)
        if not path.is_file() or "__pycache__" in rel.parts or path.suffix in {".pyc", ".pyo"}:
            continue
        if excluded(module):
            continue
        files.append((path, rel.as_posix()))
    return files


def _copy_data(distribution: str, rel: str, root: Path) -> None:
    """Copy ``rel`` of the installed ``distribution`` to ``root/<distribution>/<rel>``."""
    try:
        source = Path(str(metadata.distribution(distribution).locate_file(rel)))
    except metadata.PackageNotFoundError:
        raise ConfigError(f"{distribution!r} (RUNTIME_DATA) is not installed here") from None
    if not source.is_file():
        raise ConfigError(f"{distribution!r} has no file {rel!r} (RUNTIME_DATA)")
    target = root / distribution / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def _write_zip(directory: Path, target: Path) -> None:
    entries = sorted(p for p in directory.rglob("*") if p.is_file())
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in entries:
            info = zipfile.ZipInfo(path.relative_to(directory).as_posix(), ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3  # unix, whatever machine builds it
            archive.writestr(info, path.read_bytes(), compresslevel=6)


def build_bundles(
    repo: Path, out: Path, names: list[str] | None = None, *, shared_root: Path | None = None
) -> list[Bundle]:
    """Stage and zip ``names`` (default: every registered function) under ``out``."""
    shared_root = shared_root or repo / "shared"
    shared = SharedPackage(shared_root)
    dists = Distributions()
    pins = read_pins(repo / "constraints.txt")
    package = _package_files(shared_root)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.zip"):
        stale.unlink()
    bundles = []
    for name in sorted(names or FUNCTIONS):
        main = repo / "functions" / name / "main.py"
        if not main.is_file():
            raise ConfigError(f"function {name!r} is registered but {main} does not exist")
        graph = import_graph(main, shared)
        lines = requirements(graph, dists, pins)
        directory = out / name
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        shutil.copyfile(main, directory / "main.py")
        (directory / "requirements.txt").write_text(
            f"# {name}: generated by `make package` from its imports; pinned by constraints.txt\n"
            + "".join(f"{line}\n" for line in lines)
        )
        for source, rel in package:
            target = directory / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        for distribution, rel in sorted(graph.data):
            _copy_data(distribution, rel, directory / BUNDLED.parent.name / BUNDLED.name)
        staging = out / f".{name}.zip"
        _write_zip(directory, staging)
        digest = hashlib.sha256(staging.read_bytes()).hexdigest()
        zip_path = out / f"{name}-{digest[:16]}.zip"
        staging.replace(zip_path)
        tag = _image_tag(repo, FUNCTIONS[name].image, digest)
        bundles.append(
            Bundle(name, directory, zip_path, digest, tuple(lines), graph.modules, graph.data, tag)
        )
    manifest = {
        "function_sources": {b.name: b.object_name for b in bundles},
        "function_images": {b.name: b.image_tag for b in bundles if b.image_tag},
    }
    (out / SOURCES_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (out / IMAGES_FILE).write_text(
        "".join(
            f"{b.name} {FUNCTIONS[b.name].image} {b.image_tag}\n" for b in bundles if b.image_tag
        )
    )
    return bundles


def _image_tag(repo: Path, image: str, digest: str) -> str | None:
    """The tag of a function's own image: the hash of its zip and of the image's Dockerfile
    (None for a function Cloud Functions builds from the zip)."""
    if image == "buildpack":
        return None
    recipe = dockerfile(repo, image)
    if not recipe.is_file():
        raise ConfigError(f"image {image!r} has no Dockerfile at {recipe}")
    return hashlib.sha256(digest.encode() + b"\n" + recipe.read_bytes()).hexdigest()[:16]
