"""cloudbuild.yaml: tests gate the deploy, every function is packaged and deployed, and
migrations run as a deploy step before the new code (never on a function's cold start)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from colony.registry.functions import FUNCTIONS

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
    assert "for_each    = var.functions" in functions_tf
    assert FUNCTIONS  # and test_deploy_terraform checks var.functions == the registry


def test_project_region_and_environment_are_substitutions() -> None:
    spec = pipeline()
    assert {"_REGION", "_ENV"} <= set(spec["substitutions"])
    for step in spec["steps"]:
        if step["id"] in {"deploy", "terraform-apply-database"}:
            args = step["args"]
            assert "-var=project_id=${PROJECT_ID}" in args
            assert "-var=region=${_REGION}" in args and "-var=environment=${_ENV}" in args
