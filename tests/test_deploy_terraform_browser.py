"""terraform/browser.tf: the functions that run in an image of our own (the registry's
``image="browser"``: research, whose pages that need JavaScript Chromium renders) are Cloud Run
services with the settings a Cloud Function of theirs would have, the browser named in their
environment and nowhere else, and the research queue's tasks reach them.

Structural checks over the parsed HCL, as in tests/test_deploy_terraform.py (whose helpers
these use): ``terraform validate`` needs provider plugins that cannot be downloaded here.
"""

from __future__ import annotations

import re

import pytest

from colony.adapters.transport_checks import task_request
from colony.registry.functions import FUNCTIONS, QUEUES, RESEARCH_QUEUE
from colony.registry.secrets import SECRETS
from colony.settings import Settings
from tests.research_world import CHROMIUM
from tests.test_deploy_terraform import block, local_values, parsed, registry, variables

SERVICE = "google_cloud_run_v2_service"


def service() -> dict:
    return parsed()[SERVICE]["browser"]


def container() -> dict:
    return block(block(service(), "template"), "containers")


def selected(local: str) -> set[str]:
    """The functions a ``{for name, fn in var.functions : name => fn if fn.image == "x"}``
    local picks from the generated registry input."""
    found = re.fullmatch(
        r'\$\{\{for name, fn in var\.functions : name => fn if fn\.image == "(\w+)"\}\}',
        local_values()[local],
    )
    assert found, local_values()[local]
    return {name for name, fn in registry()["functions"].items() if fn["image"] == found.group(1)}


def service_env() -> dict[str, str]:
    """The browser service's environment: ``local.function_env`` merged with its own map
    (name → the HCL expression)."""
    dynamic = block(container(), "dynamic")["env"]
    assert dynamic["content"] == [{"name": "${env.key}", "value": "${env.value}"}]
    merged = re.fullmatch(r"\$\{merge\(local\.function_env, \{(.*)\}\)\}", dynamic["for_each"])
    assert merged, dynamic["for_each"]
    own = dict(re.findall(r"(\w+) = (.+?)(?=, \w+ = |$)", merged.group(1)))
    return {**{k: "local.function_env" for k in local_values()["function_env"]}, **own}


def test_the_registry_marks_the_functions_that_run_in_the_browser_image() -> None:
    """research runs in the browser image; every other function is a Cloud Function. The two
    locals split the registry between the Cloud Functions and the services, and nothing is
    both or neither."""
    assert FUNCTIONS["research"].image == "browser"
    assert {n for n, f in FUNCTIONS.items() if f.image == "browser"} == {"research"}
    spec = registry()["functions"]
    assert {n: f["image"] for n, f in spec.items()} == {n: f.image for n, f in FUNCTIONS.items()}
    buildpack, browser = selected("buildpack_functions"), selected("browser_functions")
    assert browser == {"research"} and buildpack == set(FUNCTIONS) - browser
    assert service()["for_each"] == "${local.browser_functions}"
    assert parsed()["google_cloudfunctions2_function"]["function"]["for_each"] == (
        "${local.buildpack_functions}"
    )
    # terraform refuses an image it has no resource for
    (validation,) = variables()["functions"]["validation"]
    assert 'contains(["buildpack", "browser"], fn.image)' in validation["condition"]
    # the image is the one the pipeline pushed: <repository>/<image>/<function>:<tag>
    assert container()["image"] == (
        "${local.image_registry}/${each.value.image}/${each.key}:${var.function_images[each.key]}"
    )
    assert local_values()["image_registry"] == (
        "${google_artifact_registry_repository.functions.location}-docker.pkg.dev/"
        "${var.project_id}/${google_artifact_registry_repository.functions.repository_id}"
    )
    assert variables()["function_images"]["default"] == {}


def test_a_browser_function_has_the_settings_its_cloud_function_would() -> None:
    """Its own account, the registry's concurrency, instances (the connection budget),
    timeout, memory and CPU, the VPC connector for Cloud SQL's private IP with Google APIs
    direct, internal ingress unless public, every request to the latest revision."""
    body = service()
    function = block(parsed()["google_cloudfunctions2_function"]["function"], "service_config")
    template = block(body, "template")
    assert body["name"] == "${each.key}" and body["location"] == "${var.region}"
    assert template["service_account"] == function["service_account_email"]
    assert template["service_account"] == "${google_service_account.function[each.key].email}"
    assert template["timeout"] == "${each.value.timeout_seconds}s"
    assert template["max_instance_request_concurrency"] == "${each.value.concurrency}"
    assert block(template, "scaling") == {
        "min_instance_count": 0,
        "max_instance_count": "${each.value.max_instances}",
    }
    assert block(template, "vpc_access") == {
        "connector": function["vpc_connector"],
        "egress": function["vpc_connector_egress_settings"],
    }
    assert body["ingress"] == (
        '${each.value.public ? "INGRESS_TRAFFIC_ALL" : "INGRESS_TRAFFIC_INTERNAL_ONLY"}'
    )
    assert function["ingress_settings"] == (
        '${each.value.public ? "ALLOW_ALL" : "ALLOW_INTERNAL_ONLY"}'
    )
    assert block(body, "traffic") == {
        "type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST",
        "percent": 100,
    }
    assert template["execution_environment"] == "EXECUTION_ENVIRONMENT_GEN2"
    limits = block(container(), "resources")["limits"]
    assert limits == {"cpu": "${each.value.cpu}", "memory": "${each.value.memory}"}
    # Chromium needs room: four renders at once of a heavy page peaked at 1.45 GiB (the
    # registry entry says how that was measured)
    research = registry()["functions"]["research"]
    assert research["memory"] == "4Gi" and research["cpu"] == "2"
    assert (research["concurrency"], research["max_instances"], research["public"]) == (4, 2, False)
    # the secrets it reads are granted before a revision starts
    assert "${google_secret_manager_secret_iam_member.function}" in body["depends_on"]


def test_the_browser_is_named_only_in_the_browser_services_environment() -> None:
    """COLONY_RESEARCH_BROWSER names Debian's binary in the image and is set on the browser
    services alone (a Cloud Function has no browser, and the setting is checked at start-up,
    so it would not start); the rest of the environment is every function's, and no secret
    value is in it."""
    env = service_env()
    assert env["COLONY_RESEARCH_BROWSER"] == "local.browser_binary"
    assert local_values()["browser_binary"] == CHROMIUM
    assert env["COLONY_SECRETS"] == 'join(",", each.value.secrets)'
    assert env["FUNCTION_TARGET"] == "each.value.entry_point"
    assert (
        env["FUNCTION_SIGNATURE_TYPE"] == 'each.value.trigger == "pubsub" ? "cloudevent" : "http"'
    )
    assert env["THREADS"] == "tostring(each.value.concurrency)"
    assert set(local_values()["function_env"]) <= set(env)
    assert not set(env) & set(SECRETS)
    assert "COLONY_RESEARCH_BROWSER" not in local_values()["function_env"]
    functions = block(parsed()["google_cloudfunctions2_function"]["function"], "service_config")
    assert "COLONY_RESEARCH_BROWSER" not in functions["environment_variables"]
    everywhere = [
        (kind, name)
        for kind, resources in parsed().items()
        for name, body in resources.items()
        if "COLONY_RESEARCH_BROWSER" in str(body)
    ]
    assert everywhere == [(SERVICE, "browser")]
    # what the settings make of it where the binary is (this machine, the image)
    assert Settings.from_env({"COLONY_RESEARCH_BROWSER": CHROMIUM}).research_browser == CHROMIUM


def test_the_research_queue_reaches_the_service_and_only_the_invoker_may_call_it() -> None:
    """The colony-research queue's tasks target ``research``, whose URL in
    COLONY_FUNCTION_URLS is the deterministic URL of a Cloud Run service of that name in
    the region: the task's URL and its OIDC audience (``transport_gcp`` uses the one for the
    other). The invoker's run.invoker grant is on the service itself."""
    assert QUEUES[RESEARCH_QUEUE].target == "research"
    assert RESEARCH_QUEUE in FUNCTIONS["research"].enqueues  # its own continuations
    urls = local_values()["function_urls"]
    assert urls == (
        "${{for name in keys(var.functions) : name => "
        '"https://${name}-${data.google_project.this.number}.${var.region}.run.app"}}'
    )
    assert service()["name"] == "${each.key}"  # so the service answers at its function's URL
    # the URLs terraform writes, for project number 123 in us-central1, as the code reads them
    function_urls = {
        name: f"https://{name}-123.us-central1.run.app" for name in registry()["functions"]
    }
    url, _, _ = task_request(
        function_urls, "p", "us-central1", RESEARCH_QUEUE, "research", b"{}", "t1", 0.0
    )
    assert url == "https://research-123.us-central1.run.app"
    assert local_values()["function_env"]["COLONY_FUNCTION_URLS"] == (
        "${jsonencode(local.function_urls)}"
    )
    # the invoker may call it (not public: only the invoker)
    assert not FUNCTIONS["research"].public
    assert local_values()["function_services"] == (
        "${merge({for name, fn in google_cloudfunctions2_function.function : name => "
        "fn.service_config[0].service}, {for name, service in "
        "google_cloud_run_v2_service.browser : name => service.name})}"
    )
    internal = parsed()["google_cloud_run_v2_service_iam_member"]["internal"]
    assert internal["name"] == "${local.function_services[each.key]}"
    assert internal["role"] == "roles/run.invoker"
    assert internal["member"] == "serviceAccount:${google_service_account.invoker.email}"
    # and `terraform output function_urls` lists it
    output = _outputs()["function_urls"]["value"]
    assert "google_cloud_run_v2_service.browser : name => service.uri" in output


def _outputs() -> dict:
    from tests.test_deploy_terraform import documents

    found: dict = {}
    for document in documents().values():
        for item in document.get("output", []):
            found.update(item)
    return found


def test_research_is_given_the_contact_url_it_must_name_in_production() -> None:
    """The research service's user agent must name a contact page in production, or it
    fetches nothing (``web_from_settings``): terraform requires one (no default), refuses one
    the settings would refuse, and passes it to the functions."""
    from colony.adapters.polite_web import web_from_settings
    from colony.adapters.web import user_agent
    from colony.errors import ConfigError

    variable = variables()["research_contact_url"]
    assert "default" not in variable
    assert local_values()["function_env"]["COLONY_RESEARCH_CONTACT_URL"] == (
        "${var.research_contact_url}"
    )
    (validation,) = variable["validation"]
    found = re.fullmatch(
        r'\$\{can\(regex\("(.+)", var\.research_contact_url\)\)\}', validation["condition"]
    )
    assert found, validation["condition"]
    pattern = found.group(1).replace("\\\\", "\\")  # the HCL string's escapes undone
    production = {
        "COLONY_ENV": "production",
        "K_SERVICE": "research",
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": "postgresql://colony_app@10.20.0.3:5432/colony?sslmode=verify-ca",
        "COLONY_DB_PASSWORD": "from-secret-manager",
        "COLONY_INVOKER_SERVICE_ACCOUNT": "invoker@p.iam.gserviceaccount.com",
    }
    for url in ("https://example.com/research-bot", "https://colony.example"):
        assert re.fullmatch(pattern, url), url
        settings = Settings.from_env({**production, "COLONY_RESEARCH_CONTACT_URL": url})
        fetcher = web_from_settings(settings, None)  # type: ignore[arg-type]  # no query made
        assert fetcher.fetcher._agent == user_agent(url)  # what every request carries
    for url in ("http://example.com/bot", "https://example.com/a b", "https://x.example/(me)"):
        assert not re.fullmatch(pattern, url), url
    with pytest.raises(ConfigError, match="COLONY_RESEARCH_CONTACT_URL"):
        web_from_settings(Settings.from_env(production), None)  # type: ignore[arg-type]
