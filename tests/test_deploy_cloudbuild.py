"""cloudbuild.yaml: tests gate the deploy, every function is packaged and deployed, the images
of the functions that run in one of our own are built and pushed before the deploy, and
migrations run as a deploy step before the new code (never on a function's cold start)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from colony.registry.functions import FUNCTIONS
from tests.test_deploy_terraform import local_values, parsed

REPO = Path(__file__).resolve().parents[1]


def pipeline() -> dict[str, Any]:
    return yaml.safe_load((REPO / "cloudbuild.yaml").read_text())


def command(step: dict[str, Any]) -> str:
    return " ".join(str(a) for a in step.get("args", []))


def test_steps_run_in_deploy_order() -> None:
    steps = pipeline()["steps"]
    order = [s["id"] for s in steps]
    assert order.index("test") < order.index("package") < order.index("migrate")
    assert order.index("migrate") < order.index("deploy")
    # the images need the bundles and their repository, and a failed build stops the
    # pipeline before the database moves
    assert order.index("package") < order.index("terraform-apply-database")
    assert order.index("terraform-apply-database") < order.index("images")
    assert order.index("images") < order.index("migrate")
    by_id = {s["id"]: s for s in steps}
    assert "make test" in command(by_id["test"])
    # `make test` runs `terraform fmt -check`, which the Python image cannot: an earlier step
    # copies the pinned terraform image's binary into the workspace, and make is pointed at it
    binary = re.search(r"TERRAFORM=(\S+)", command(by_id["test"]))
    assert binary, "the test step must tell make where terraform is"
    copier = by_id["terraform-binary"]
    assert order.index("terraform-binary") < order.index("test")
    assert copier["name"] == by_id["terraform-init"]["name"] == "${_TERRAFORM_IMAGE}"
    assert binary.group(1).removeprefix("/workspace/") in command(copier)
    assert "colony db migrate" in command(by_id["migrate"])
    env = dict(e.split("=", 1) for e in by_id["migrate"]["env"])
    assert env["COLONY_DB_MODE"] == "cloudsql"
    assert env["COLONY_SECRETS"] == "COLONY_DB_OWNER_PASSWORD"  # never a literal password
    assert not any(re.search(r"PASSWORD=(?!.*SECRETS)", e) for e in by_id["migrate"]["env"])


def test_every_function_is_packaged_and_deployed() -> None:
    """The package step builds every registered function (no names given), and the deploy
    step applies terraform with the sources manifest, whose `for_each` covers the registry."""
    by_id = {s["id"]: s for s in pipeline()["steps"]}
    assert re.fullmatch(r"make package( &&.*)?", command(by_id["package"]).removeprefix("-c "))
    deploy = by_id["deploy"]["args"]
    assert deploy[0] == "apply" and by_id["deploy"]["dir"] == "terraform"
    assert "-var-file=../build/functions/sources.tfvars.json" in deploy
    assert not any(a.startswith("-target") for a in deploy)  # the whole configuration
    functions_tf = (REPO / "terraform" / "functions.tf").read_text()
    assert "for_each    = local.buildpack_functions" in functions_tf
    browser_tf = (REPO / "terraform" / "browser.tf").read_text()
    assert "for_each    = local.browser_functions" in browser_tf
    assert FUNCTIONS  # and test_deploy_terraform checks var.functions == the registry


def test_project_region_and_environment_are_substitutions() -> None:
    spec = pipeline()
    assert {"_REGION", "_ENV"} <= set(spec["substitutions"])
    for step in spec["steps"]:
        if step["id"] in {"deploy", "terraform-apply-database"}:
            args = step["args"]
            assert "-var=project_id=${PROJECT_ID}" in args
            assert "-var=region=${_REGION}" in args and "-var=environment=${_ENV}" in args


def _substituted(text: str, values: dict[str, str]) -> str:
    """What Cloud Build runs: ``${NAME}`` of a substitution replaced, ``$$`` made ``$``."""
    for name, value in values.items():
        text = text.replace(f"${{{name}}}", value)
    assert not re.search(r"(?<!\$)\$\{_?[A-Z]", text.replace("$$", "")), "an unknown substitution"
    return text.replace("$$", "$")


# A docker stand-in: no Docker daemon or registry runs here. It logs each call, and answers
# `manifest inspect` with 0 for the references listed in $PUSHED (a registry holding them).
FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$DOCKER_LOG"
if [ "$1" = manifest ]; then grep -qxF "$3" "$PUSHED"; exit $?; fi
if [ "$1" = push ]; then echo "$2" >> "$PUSHED"; fi
"""


def test_the_images_step_builds_and_pushes_each_image_terraform_deploys(tmp_path: Path) -> None:
    """For each line of images.txt (``make package``), the step builds
    ``deploy/<image>/Dockerfile`` with the function's bundle as its context and pushes it as
    the reference terraform deploys (``<region>-docker.pkg.dev/<project>/<repository>/
    <image>/<name>:<tag>``, the tag in sources.tfvars.json); an image already pushed under
    its tag (the same bundle and Dockerfile) is neither built nor pushed again."""
    from colony.deploy.bundle import SOURCES_FILE, build_bundles

    step = {s["id"]: s for s in pipeline()["steps"]}["images"]
    assert step["name"] == "${_DOCKER_IMAGE}" and step["entrypoint"] == "bash"
    assert pipeline()["substitutions"]["_DOCKER_IMAGE"].startswith("gcr.io/cloud-builders/docker")
    assert step["args"][0] == "-c"
    script = _substituted(step["args"][1], {"_REGION": "europe-west1", "PROJECT_ID": "acme"})
    workspace = tmp_path / "workspace"  # Cloud Build's /workspace: the repository, built
    out = workspace / "build" / "functions"
    bundles = build_bundles(REPO, out, ["campaign", "research"])
    (workspace / "deploy").symlink_to(REPO / "deploy")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    log, pushed = tmp_path / "docker.log", tmp_path / "pushed"
    pushed.touch()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "DOCKER_LOG": str(log), "PUSHED": str(pushed)}

    def run() -> list[str]:
        log.write_text("")
        done = subprocess.run(
            ["bash", "-c", script], cwd=workspace, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return log.read_text().splitlines()

    # the reference terraform deploys (browser.tf), its expressions filled in
    tag = json.loads((out / SOURCES_FILE).read_text())["function_images"]["research"]
    assert tag == next(b.image_tag for b in bundles if b.name == "research")
    repository = parsed()["google_artifact_registry_repository"]["functions"]
    assert repository["location"] == "${var.region}"
    filled = {
        "${local.image_registry}": local_values()["image_registry"],
        "${google_artifact_registry_repository.functions.location}": "europe-west1",
        "${var.project_id}": "acme",
        "${google_artifact_registry_repository.functions.repository_id}": repository[
            "repository_id"
        ],
        "${each.value.image}": "browser",
        "${each.key}": "research",
        "${var.function_images[each.key]}": tag,
    }
    containers = parsed()["google_cloud_run_v2_service"]["browser"]["template"][0]["containers"]
    ref = containers[0]["image"]
    for expression, value in filled.items():
        ref = ref.replace(expression, value)
    assert ref == f"europe-west1-docker.pkg.dev/acme/colony-functions/browser/research:{tag}"
    assert run() == [
        f"manifest inspect {ref}",
        f"build --pull -f deploy/browser/Dockerfile -t {ref} build/functions/research",
        f"push {ref}",
    ]
    assert (workspace / "deploy/browser/Dockerfile").is_file()
    assert (workspace / "build/functions/research/main.py").is_file()
    # the next deploy with the same bundle and Dockerfile: the image is there already
    assert run() == [f"manifest inspect {ref}"]
    # the repository exists before the step: the earlier, targeted apply creates it
    early = {s["id"]: s for s in pipeline()["steps"]}["terraform-apply-database"]["args"]
    assert "-target=google_artifact_registry_repository.functions" in early
