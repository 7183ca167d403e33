"""Structural checks over the parsed terraform (python-hcl2) and its generated registry input.

`terraform validate` needs the provider plugins, which cannot be downloaded here; these tests
check what matters offline: the resources terraform derives from the code's registries, the
bindings it grants, and that the generated input is not stale.
"""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import hcl2

from colony.deploy import tfvars
from colony.env_values import RETENTION_MAX_DAYS
from colony.registry.functions import (
    CRM_QUEUE,
    DEAD_LETTER_TOPIC,
    FUNCTIONS,
    INVOKER_ACCOUNT,
    KC_TIER_QUEUE,
    LIFECYCLE_QUEUE,
    QUEUES,
    RESEARCH_QUEUE,
    TOPICS,
    pool_size,
)
from colony.registry.schedules import SCHEDULES
from colony.registry.secrets import SECRETS
from colony.settings import Settings

REPO = Path(__file__).resolve().parents[1]
TF = REPO / "terraform"
PRIMITIVE = re.compile(r"roles/(owner|editor|viewer)\b")


def _clean(value: Any) -> Any:
    """python-hcl2 output without its bookkeeping: quoted keys unquoted, comments dropped,
    string literals as plain strings, expressions kept as ``${...}``."""
    if isinstance(value, dict):
        return {k.strip('"'): _clean(v) for k, v in value.items() if not k.startswith("__")}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


@cache
def documents() -> dict[str, dict[str, Any]]:
    """file name → its cleaned parse, for every .tf file (each parsed: a syntax gate too).
    Parsed once per session: resources, variables and locals all read these."""
    found = {}
    for path in sorted(TF.glob("*.tf")):
        with path.open() as handle:
            found[path.name] = _clean(hcl2.load(handle))
    return found


@cache
def parsed() -> dict[str, dict[str, dict[str, Any]]]:
    """resource type → name → body, over every .tf file."""
    resources: dict[str, dict[str, dict[str, Any]]] = {}
    for file, document in documents().items():
        for block in document.get("resource", []):
            for kind, named in block.items():
                for name, body in named.items():
                    assert name not in resources.setdefault(kind, {}), f"{kind}.{name} twice"
                    resources[kind][name] = {**body, "_file": file}
    return resources


@cache
def variables() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for document in documents().values():
        for block_ in document.get("variable", []):
            found.update(block_)
    return found


@cache
def local_values() -> dict[str, Any]:
    values: dict[str, Any] = {}
    for document in documents().values():
        for block in document.get("locals", []):
            values.update(block)
    return values


@cache
def function_modules(name: str) -> frozenset[str]:
    """The shared modules a function's ``main.py`` can reach (its bundle's import graph);
    cached, over one SharedPackage, because two tests walk every function's graph."""
    from colony.deploy.imports import import_graph

    return import_graph(REPO / "functions" / name / "main.py", _shared()).modules


@cache
def _shared() -> Any:
    from colony.deploy.imports import SharedPackage

    return SharedPackage(REPO / "shared")


def registry() -> dict[str, Any]:
    return json.loads((TF / "registry.auto.tfvars.json").read_text())


def block(body: dict[str, Any], name: str) -> dict[str, Any]:
    (only,) = body[name]
    return only


def test_terraform_is_split_by_concern() -> None:
    files = {p.name for p in TF.glob("*.tf")}
    assert files >= {
        "versions.tf",
        "variables.tf",
        "outputs.tf",
        "functions.tf",
        "pubsub.tf",
        "tasks.tf",
        "scheduler.tf",
        "sql.tf",
        "storage.tf",
        "kms.tf",
        "secrets.tf",
        "iam.tf",
        "browser.tf",
    }
    versions = (TF / "versions.tf").read_text()
    assert re.search(
        r'source\s*=\s*"hashicorp/google"\s*\n\s*version\s*=\s*"= \d+\.\d+\.\d+"', versions
    ), "the google provider must be pinned to one version"
    assert {r["_file"] for r in parsed()["google_cloudfunctions2_function"].values()} == {
        "functions.tf"
    }
    assert {r["_file"] for r in parsed()["google_cloud_run_v2_service"].values()} == {"browser.tf"}


def test_generated_registry_input_is_current() -> None:
    """`make package` (python -m colony.deploy tfvars) regenerates it after a registry change."""
    assert (TF / "registry.auto.tfvars.json").read_text() == tfvars.render(), (
        "terraform/registry.auto.tfvars.json is stale: run `make package`"
    )


def test_every_function_folder_has_one_function_with_its_entry_point_and_trigger() -> None:
    folders = {p.parent.name for p in (REPO / "functions").glob("*/main.py")}
    functions = registry()["functions"]
    assert folders == set(FUNCTIONS) == set(functions)
    # a Cloud Function for each function Cloud Functions builds from its zip; the others run
    # in an image of our own (tests/test_deploy_terraform_browser.py)
    (resource,) = parsed()["google_cloudfunctions2_function"].values()
    assert resource["for_each"] == "${local.buildpack_functions}"
    assert resource["name"] == "${each.key}"
    build = block(resource, "build_config")
    assert build["entry_point"] == "${each.value.entry_point}"
    assert block(block(build, "source"), "storage_source")["object"] == (
        "${google_storage_bucket_object.source[each.key].name}"
    )
    source = parsed()["google_storage_bucket_object"]["source"]
    assert source["for_each"] == "${local.buildpack_functions}"
    assert "var.function_sources[each.key]" in source["name"]  # the zip's content-hash name
    service = block(resource, "service_config")
    assert service["service_account_email"] == "${google_service_account.function[each.key].email}"
    assert service["max_instance_request_concurrency"] == "${each.value.concurrency}"
    assert service["available_memory"] == "${each.value.memory}"
    assert service["timeout_seconds"] == "${each.value.timeout_seconds}"
    # Pub/Sub functions get their messages from a push subscription; HTTP ones are called
    assert 'fn.trigger == "pubsub"' in local_values()["subscribers"]
    push = parsed()["google_pubsub_subscription"]["push"]
    assert push["for_each"] == "${local.subscribers}"
    assert push["topic"] == "${google_pubsub_topic.topic[each.value.topic].id}"
    assert block(push, "push_config")["push_endpoint"] == "${local.function_urls[each.key]}"
    for name, spec in functions.items():
        function = FUNCTIONS[name]
        assert (spec["entry_point"], spec["trigger"], spec["topic"]) == (
            function.entry_point,
            function.trigger,
            function.topic,
        ), name
        decorator = "cloud_event" if function.trigger == "pubsub" else "http"
        assert _entry_decorators(REPO / "functions" / name / "main.py", spec["entry_point"]) >= {
            f"functions_framework.{decorator}"
        }, f"{name}: {spec['entry_point']} is not a {decorator} function"


def _entry_decorators(main: Path, entry: str) -> set[str]:
    tree = ast.parse(main.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return {ast.unparse(d) for d in node.decorator_list}
    raise AssertionError(f"{main} defines no {entry}()")


def test_every_topic_and_queue_exists_with_dead_letter_and_retry_settings() -> None:
    spec = registry()
    assert spec["topics"] == {
        name: {"purpose": t.purpose, "max_delivery_attempts": t.max_delivery_attempts}
        for name, t in TOPICS.items()
    }
    assert spec["dead_letter_topic"] == DEAD_LETTER_TOPIC in TOPICS
    topic = parsed()["google_pubsub_topic"]["topic"]
    assert topic["for_each"] == "${var.topics}" and topic["name"] == "${each.key}"
    push = parsed()["google_pubsub_subscription"]["push"]
    dead_letter = block(push, "dead_letter_policy")
    assert dead_letter == {
        "dead_letter_topic": "${google_pubsub_topic.topic[var.dead_letter_topic].id}",
        "max_delivery_attempts": "${each.value.max_delivery_attempts}",
    }
    assert set(block(push, "retry_policy")) == {"minimum_backoff", "maximum_backoff"}
    assert block(block(push, "push_config"), "oidc_token")["service_account_email"] == (
        "${google_service_account.invoker.email}"
    )
    subscribers = [f for f in spec["functions"].values() if f["trigger"] == "pubsub"]
    assert subscribers, "no Pub/Sub function registered"
    for function in subscribers:  # Pub/Sub bounds dead-lettering to 5..100 attempts
        attempts = function["max_delivery_attempts"]
        assert attempts == TOPICS[function["topic"]].max_delivery_attempts and 5 <= attempts <= 100
    # the service agent may move messages to the dead-letter topic
    assert parsed()["google_pubsub_topic_iam_member"]["dead_letter_publisher"]["role"] == (
        "roles/pubsub.publisher"
    )
    assert spec["queues"] == {
        name: {
            "purpose": q.purpose,
            "max_attempts": q.max_attempts,
            "max_dispatches_per_second": q.max_dispatches_per_second,
        }
        for name, q in QUEUES.items()
    }
    queue = parsed()["google_cloud_tasks_queue"]["queue"]
    assert queue["for_each"] == "${var.queues}" and queue["name"] == "${each.key}"
    assert block(queue, "retry_config")["max_attempts"] == "${each.value.max_attempts}"
    assert block(queue, "rate_limits")["max_dispatches_per_second"] == (
        "${each.value.max_dispatches_per_second}"
    )


def test_every_secret_exists_and_is_granted_only_to_the_functions_that_read_it() -> None:
    spec = registry()
    assert spec["secrets"] == SECRETS
    secret = parsed()["google_secret_manager_secret"]["secret"]
    assert secret["for_each"] == "${var.secrets}" and secret["secret_id"] == "${each.value}"
    grants = parsed()["google_secret_manager_secret_iam_member"]
    assert set(grants) == {"function", "deployer_owner_password"}
    assert grants["function"]["for_each"] == "${local.secret_grants}"
    assert grants["function"]["member"] == (
        "serviceAccount:${google_service_account.function[each.value.function].email}"
    )
    assert "for setting in fn.secrets" in local_values()["secret_grants"]
    for name, function in spec["functions"].items():
        assert function["secrets"] == sorted(set(FUNCTIONS[name].secrets)), name
    readers = {s: {n for n, f in spec["functions"].items() if s in f["secrets"]} for s in SECRETS}
    assert readers["COLONY_DB_OWNER_PASSWORD"] == set()  # migrations only (the deployer)
    assert readers["COLONY_DELIVERY_WEBHOOK_SECRET"] == {"delivery-events"}
    assert readers["COLONY_CLERK_WEBHOOK_SECRET"] == {"clerk-webhook"}
    # the HubSpot app's secret: connecting (admin), verifying the webhook's v3 signature and
    # refreshing an org's token for the CRM queue's tasks (crm)
    assert readers["COLONY_HUBSPOT_CLIENT_SECRET"] == {"admin", "crm"}
    assert "COLONY_APPROVAL_TOKEN_KEY" not in spec["functions"]["enrichment"]["secrets"]
    # the model provider keys: only functions that build a model client or an embedder (the
    # internet-facing webhooks and the resume target never do, and start without them)
    model_free = {
        "campaign",
        "delivery-events",
        "drive-webhook",
        "notion-webhook",
        "campaign-resume",
        "admin",
        "data-lifecycle",
        "send",
        "clerk-webhook",
        "crm",
    }
    assert readers["COLONY_SMTP_PASSWORD"] == {"send"}  # only the sender logs in to the relay
    assert readers["COLONY_UNSUBSCRIBE_TOKEN_KEY"] == {"send", "delivery-events"}
    assert readers["OPENAI_API_KEY"] == set(FUNCTIONS) - model_free
    assert readers["GEMINI_API_KEY"] == readers["OPENAI_API_KEY"]
    # the Langfuse secret key reads every org's traced prompts: only functions that call a
    # chat model get it (reembed only embeds), never the webhooks or the model-free targets
    # (and data-lifecycle, which deletes an erased org's traces through Langfuse's API)
    # (research embeds its pages' passages, like reembed, and calls no chat model)
    untraced = {*model_free, "reembed", "research"} - {"data-lifecycle"}
    assert readers["LANGFUSE_SECRET_KEY"] == set(FUNCTIONS) - untraced
    assert readers["LANGFUSE_PUBLIC_KEY"] == readers["LANGFUSE_SECRET_KEY"]
    assert readers["COLONY_DB_PASSWORD"] == readers["SENTRY_DSN"] == set(FUNCTIONS)
    # no secret is granted any other way, and no value is ever an environment variable
    others = [k for k in parsed() if k.startswith("google_secret_manager") and "iam" in k]
    assert others == ["google_secret_manager_secret_iam_member"]
    env = block(parsed()["google_cloudfunctions2_function"]["function"], "service_config")
    names = set(local_values()["function_env"]) | set(env["environment_variables"])
    assert not names & set(SECRETS)
    assert env["environment_variables"].endswith(
        'COLONY_SECRETS = join(",", each.value.secrets)})}'
    )


def _grants_on(condition: str) -> dict[str, tuple[str, str]]:
    """The project IAM members granted under ``condition``: name → (member, role)."""
    return {
        name: (body["member"], body["role"])
        for name, body in parsed()["google_project_iam_member"].items()
        if "condition" in body and block(body, "condition")["expression"] == condition
    }


def test_notion_tokens_are_reached_by_the_admin_reembed_and_lifecycle_functions_only() -> None:
    """Each connected workspace's token (``colony-notion-*``): the admin function writes it,
    the reembed worker reads it and deletes it when the daily re-proof releases its workspace
    (``flows.knowledge.notion_workspaces.reprove``; a custom role holding that one permission),
    the data lifecycle deletes it when the org is erased; every grant conditioned on the name
    prefix."""
    role = parsed()["google_project_iam_custom_role"]["notion_secret_deleter"]
    assert role["permissions"] == ["secretmanager.secrets.delete"]
    grants = _grants_on('resource.name.startsWith(\\"${local.notion_secret_prefix}\\")')
    member = 'serviceAccount:${google_service_account.function["%s"].email}'
    assert grants == {
        "admin_notion_secrets": (member % "admin", "roles/secretmanager.admin"),
        "reembed_notion_secrets": (member % "reembed", "roles/secretmanager.secretAccessor"),
        "reembed_notion_secret_delete": (
            member % "reembed",
            "${google_project_iam_custom_role.notion_secret_deleter.id}",
        ),
        "lifecycle_notion_secret_delete": (
            member % "data-lifecycle",
            "${google_project_iam_custom_role.notion_secret_deleter.id}",
        ),
    }


def test_crm_tokens_are_reached_by_the_admin_lifecycle_and_crm_functions_only() -> None:
    """Each org's CRM tokens (``colony-crm-*``, issue 36): the admin function writes,
    refreshes and deletes them; the data lifecycle deletes them when the org is erased; the
    crm function reads (and refreshes) them for the CRM queue's tasks, both ways."""
    grants = _grants_on('resource.name.startsWith(\\"${local.crm_secret_prefix}\\")')
    member = 'serviceAccount:${google_service_account.function["%s"].email}'
    assert grants == {
        "admin_crm_secrets": (member % "admin", "roles/secretmanager.admin"),
        "lifecycle_crm_secret_delete": (
            member % "data-lifecycle",
            "${google_project_iam_custom_role.notion_secret_deleter.id}",
        ),
        "crm_secret_read": (
            member % "crm",
            "roles/secretmanager.secretAccessor",
        ),
        "crm_secret_refresh": (
            member % "crm",
            "roles/secretmanager.secretVersionAdder",
        ),
    }


def test_one_service_account_per_function_and_no_primitive_role() -> None:
    accounts = parsed()["google_service_account"]["function"]
    assert accounts["for_each"] == "${var.functions}"
    ids = [f["account_id"] for f in registry()["functions"].values()]
    assert len(set(ids)) == len(ids) and all(
        re.fullmatch(r"[a-z][a-z0-9-]{4,28}[a-z0-9]", i) for i in ids
    )
    for name, function in registry()["functions"].items():
        assert function["roles"], name
        assert all(why.strip() for why in function["roles"].values()), f"{name}: a role has no why"
    everything = json.dumps(parsed()) + (TF / "registry.auto.tfvars.json").read_text()
    assert not PRIMITIVE.search(everything)
    project_grants = parsed()["google_project_iam_member"]
    assert project_grants["function"]["for_each"] == "${local.project_grants}"
    assert project_grants["function"]["role"] == "${each.value.role}"
    # publishing and enqueueing are granted per topic / queue, never project-wide
    roles = {r["role"] for kind, rs in parsed().items() for r in rs.values() if "role" in r}
    assert "roles/pubsub.publisher" in roles and "roles/cloudtasks.enqueuer" in roles
    assert all(
        not r.startswith(("roles/pubsub", "roles/cloudtasks", "roles/storage"))
        for r in _project_roles()
    )


def _project_roles() -> set[str]:
    """Project-wide roles: the registry's, and unconditioned project bindings (a binding with
    an IAM condition is narrowed to named resources; see the build account's test)."""
    roles = {g for f in registry()["functions"].values() for g in f["roles"]}
    bindings = parsed()["google_project_iam_member"].values()
    return roles | {
        r["role"] for r in bindings if not r["role"].startswith("${") and "condition" not in r
    }


def test_assets_bucket_has_cmek_public_access_prevention_and_lifecycle() -> None:
    buckets = parsed()["google_storage_bucket"]
    assets = buckets["assets"]
    assert assets["name"] == "${var.assets_bucket}"
    assert block(assets, "encryption")["default_kms_key_name"] == (
        "${google_kms_crypto_key.assets.id}"
    )
    assert assets["uniform_bucket_level_access"] is True
    rules = assets["lifecycle_rule"]
    assert len(rules) == 5
    # retention (issues 14, 33): transcripts and stored research pages are deleted at the
    # deployment's limit, which is the limit the settings hold orgs to (the daily job deletes
    # them sooner for shorter periods)
    prefixed = [r for r in rules if block(r, "condition").get("matches_prefix")]
    assert [block(r, "condition") for r in prefixed] == [
        {"age": f'${{var.retention_max_days["{c}"]}}', "matches_prefix": [f"{c}/"]}
        for c in ("transcripts", "research")
    ]
    assert all(block(r, "action") == {"type": "Delete"} for r in prefixed)
    limits = variables()["retention_max_days"]["default"]
    assert limits == RETENTION_MAX_DAYS
    env = local_values()["function_env"]
    assert "COLONY_RETENTION_MAX_DAYS" in env
    for name, bucket in buckets.items():
        assert bucket["public_access_prevention"] == "enforced", name
        assert bucket["uniform_bucket_level_access"] is True, name
    key = parsed()["google_kms_crypto_key"]["assets"]
    assert key["rotation_period"] == "7776000s"
    assert parsed()["google_kms_key_ring"]["colony"]


def test_cloud_sql_is_postgres_16_tls_only_with_iam_auth_and_pitr() -> None:
    instance = parsed()["google_sql_database_instance"]["colony"]
    assert instance["database_version"] == "POSTGRES_16"
    settings = block(instance, "settings")
    network = block(settings, "ip_configuration")
    assert "authorized_networks" not in network  # the public IP admits connector clients only
    assert network["ssl_mode"] == "ENCRYPTED_ONLY"
    assert network["private_network"] == "${google_compute_network.colony.id}"
    assert settings["connector_enforcement"] == "NOT_REQUIRED"  # functions connect directly
    backups = block(settings, "backup_configuration")
    assert backups["enabled"] is True and backups["point_in_time_recovery_enabled"] is True
    flags = {f["name"]: f["value"] for f in settings["database_flags"]}
    assert flags["cloudsql.iam_authentication"] == "on"
    users = parsed()["google_sql_user"]
    assert users["iam"]["type"] == "CLOUD_IAM_USER"
    assert {users["owner"]["name"], users["app"]["name"]} == {"colony_owner", "colony_app"}
    assert "random_password" in users["app"]["password"]  # never a literal


def test_one_scheduler_job_per_registered_schedule_calls_data_lifecycle_with_oidc() -> None:
    spec = FUNCTIONS["data-lifecycle"]
    assert spec.trigger == "http" and not spec.public
    job = parsed()["google_cloud_scheduler_job"]["schedule"]
    assert job["for_each"] == "${var.schedules}"  # no org ids: the fan-out lists them
    target = block(job, "http_target")
    assert target["uri"] == '${local.function_urls["data-lifecycle"]}'
    assert block(target, "oidc_token") == {
        "service_account_email": "${google_service_account.invoker.email}",
        "audience": '${local.function_urls["data-lifecycle"]}',
    }
    assert '"schedule"' in target["body"] and "each.key" in target["body"]
    assert "org_id" not in target["body"]
    generated = registry()
    assert set(generated["schedules"]) == set(SCHEDULES)
    # data-lifecycle may add tasks to every queue a schedule fans out to (and its own
    # Knowledge Core moves, the research tasks the research sweep wakes, and a polled reply's
    # CRM push), and to no other
    fanned = {s.queue for s in SCHEDULES.values()} | {LIFECYCLE_QUEUE}
    enqueues = set(generated["functions"]["data-lifecycle"]["enqueues"])
    assert enqueues == fanned | {KC_TIER_QUEUE, RESEARCH_QUEUE, CRM_QUEUE}
    for queue in fanned:  # and each queue's target is a function that takes the task
        assert FUNCTIONS[QUEUES[queue].target].trigger == "http"


def test_internal_functions_are_invoked_only_by_the_invoker() -> None:
    invokers = parsed()["google_cloud_run_v2_service_iam_member"]
    assert (
        invokers["internal"]["member"] == "serviceAccount:${google_service_account.invoker.email}"
    )
    assert "if !fn.public" in invokers["internal"]["for_each"]
    assert "if fn.public" in invokers["public"]["for_each"]
    # on the Cloud Run service behind each function, whichever kind it is
    assert invokers["internal"]["for_each"].startswith("${{for name, fn in var.functions :")
    for grant in invokers.values():
        assert grant["name"] == "${local.function_services[each.key]}"
    public = {n for n, f in registry()["functions"].items() if f["public"]}
    assert public and all(FUNCTIONS[n].trigger == "http" for n in public)
    assert not public & {n for n, f in FUNCTIONS.items() if f.trigger == "pubsub"}


def test_the_invoker_terraform_creates_is_the_one_the_code_checks() -> None:
    """Its id is the registry's; its email is COLONY_INVOKER_SERVICE_ACCOUNT; every OIDC token
    terraform configures is the invoker's, for the function's own URL, which is the audience
    the code expects (COLONY_FUNCTION_URLS is the same local.function_urls)."""
    assert registry()["invoker_account_id"] == INVOKER_ACCOUNT
    account = parsed()["google_service_account"]["invoker"]
    assert account["account_id"] == "${var.invoker_account_id}"
    env = local_values()["function_env"]
    assert env["COLONY_INVOKER_SERVICE_ACCOUNT"] == "${google_service_account.invoker.email}"
    assert env["COLONY_FUNCTION_URLS"] == "${jsonencode(local.function_urls)}"
    push = block(block(parsed()["google_pubsub_subscription"]["push"], "push_config"), "oidc_token")
    assert push == {
        "service_account_email": "${google_service_account.invoker.email}",
        "audience": "${local.function_urls[each.key]}",
    }


def test_every_function_that_decides_approvals_may_publish_what_the_appliers_publish() -> None:
    """Appliers run in the deciding function (approval, and chat's decide tool and route): a
    deal moved to closed_won publishes to colony-onboarding, and an approved
    ``research_company`` queues on colony-research, from whichever function approved it, so
    each one needs the approval function's publisher and enqueuer grants or the decision
    fails."""
    deciders = {
        name for name in FUNCTIONS if "colony.flows.approvals.approval" in function_modules(name)
    }
    assert {"approval", "chat"} <= deciders
    needed = set(FUNCTIONS["approval"].publishes)
    queues = set(FUNCTIONS["approval"].enqueues)
    assert "colony-onboarding" in needed and "colony-research" in queues
    for name in deciders:
        assert needed <= set(registry()["functions"][name]["publishes"]), name
        assert queues <= set(registry()["functions"][name]["enqueues"]), name


def test_every_function_that_shows_approval_cards_may_sign_kit_links() -> None:
    """A deployment kit's card signs its link when the card is made
    (``colony.flows.approvals.approval_queue.pending_cards``), in the function that shows it: chat's
    GET /approvals and its list_approvals tool. The URL is signed through IAM signBlob as the
    function's own account and only opens if that account may read the object; both grants
    come with ``assets`` (terraform/iam.tf). Without them every kit link in the queue fails."""
    callers = {
        path.relative_to(REPO / "shared").as_posix()
        for path in (REPO / "shared" / "colony").rglob("*.py")
        if "pending_cards(" in path.read_text() and path.name != "approval_queue.py"
    }
    assert callers == {"colony/chat/api.py", "colony/flows/chat/tools.py"}
    assert registry()["functions"]["chat"]["assets"] in ("read", "write")
    grant = 'asset_users = { for name, fn in var.functions : name => fn if fn.assets != "none" }'
    assert grant in (TF / "iam.tf").read_text()


BUILD_MEMBER = "serviceAccount:${google_service_account.build.email}"


def _comment_above(path: Path, kind: str, name: str) -> str:
    """The comment lines directly above ``resource "kind" "name"`` in ``path``."""
    lines = path.read_text().splitlines()
    at = lines.index(f'resource "{kind}" "{name}" {{')
    comment: list[str] = []
    for line in reversed(lines[:at]):
        if not line.startswith("#"):
            break
        comment.insert(0, line)
    return "\n".join(comment)


def test_functions_are_built_by_a_dedicated_least_privilege_account() -> None:
    """Cloud Build runs as colony-build (not the default build or compute account), which holds
    exactly three grants, each on the narrowest resource and each commented with its reason."""
    function = parsed()["google_cloudfunctions2_function"]["function"]
    build = block(function, "build_config")
    assert build["service_account"] == "${google_service_account.build.id}"
    assert build["docker_repository"] == "${google_artifact_registry_repository.functions.id}"
    account = parsed()["google_service_account"]["build"]
    assert account["account_id"] == "colony-build" and "for_each" not in account
    # it builds; it never runs a function
    runtime = block(function, "service_config")["service_account_email"]
    assert "google_service_account.build" not in runtime
    grants = {
        (kind, name): body
        for kind, resources in parsed().items()
        for name, body in resources.items()
        if BUILD_MEMBER in json.dumps(body)
    }
    assert {(name, body["role"]) for (_, name), body in grants.items()} == {
        ("build_logs", "roles/logging.logWriter"),
        ("build_sources", "roles/storage.objectViewer"),
        ("build_images", "roles/artifactregistry.writer"),
    }
    assert grants.keys() == {
        ("google_project_iam_member", "build_logs"),
        ("google_project_iam_member", "build_sources"),
        ("google_artifact_registry_repository_iam_member", "build_images"),
    }
    assert all(body["member"] == BUILD_MEMBER for body in grants.values())
    assert "condition" not in grants[("google_project_iam_member", "build_logs")]
    # object read on the source zips only: ours and Cloud Functions' staged copy
    condition = block(grants[("google_project_iam_member", "build_sources")], "condition")
    alternatives = [a.strip() for a in condition["expression"].split("||")]
    assert len(alternatives) == 3
    on_a_bucket = re.compile(r'resource\.name( == |\.startsWith\()\\?"projects/_/buckets/.+')
    assert all(on_a_bucket.fullmatch(a) for a in alternatives), alternatives
    staged = "gcf-v2-sources-${data.google_project.this.number}-${var.region}"
    assert sum("${google_storage_bucket.sources.name}" in a for a in alternatives) == 2
    assert sum(staged in a for a in alternatives) == 1
    images = grants[("google_artifact_registry_repository_iam_member", "build_images")]
    assert images["repository"] == "${google_artifact_registry_repository.functions.name}"
    repository = parsed()["google_artifact_registry_repository"]["functions"]
    assert repository["format"] == "DOCKER"
    assert repository["kms_key_name"] == "${google_kms_crypto_key.artifacts.id}"
    # the first build must not start before its grants exist
    assert {f"${{{kind}.{name}}}" for kind, name in grants} <= set(function["depends_on"])
    for kind, name in grants:
        role = grants[(kind, name)]["role"]
        assert role in _comment_above(TF / "iam.tf", kind, name), f"{name}: {role} uncommented"


# Connections the cluster needs besides the functions': Cloud SQL's reserved superuser slots
# and its own agents, the deployer's migrations (colony_owner), people connecting with IAM
# (db_iam_users), and instances of an old revision still draining during a rollout.
RESERVED_CONNECTIONS = 40


def _listens(name: str) -> bool:
    """Whether the function keeps a dedicated LISTEN connection (the chat hub) next to its
    pool: it does if its code can reach colony.chat.hub."""
    return "colony.chat.hub" in function_modules(name)


def test_connection_budget_fits_cloud_sql_max_connections() -> None:
    """Every function at its max instances, each instance with its whole pool open (plus the
    chat hub's LISTEN connection), fits the instance's max_connections minus what is reserved
    (docs/deploy.md, "Connection budget"). Raising a max_instances past it fails here."""
    settings = block(parsed()["google_sql_database_instance"]["colony"], "settings")
    flags = {f["name"]: f["value"] for f in settings["database_flags"]}
    assert flags["max_connections"] == "${var.db_max_connections}"
    max_connections = variables()["db_max_connections"]["default"]
    assert isinstance(max_connections, int) and max_connections > RESERVED_CONNECTIONS
    # the functions run with the default pass-1 parallelism: terraform does not override it
    env = set(local_values()["function_env"])
    assert "COLONY_RECORDING_PARALLELISM" not in env
    parallelism = Settings().recording_parallelism
    functions = registry()["functions"]
    per_instance = {
        name: pool_size(name, parallelism) + (1 if _listens(name) else 0) for name in functions
    }
    assert per_instance["chat"] == pool_size("chat", parallelism) + 1
    for name, spec in functions.items():  # the terraform input is what the pools are sized from
        assert spec["concurrency"] == FUNCTIONS[name].concurrency
        assert spec["max_instances"] == FUNCTIONS[name].max_instances >= 1
    service = block(parsed()["google_cloudfunctions2_function"]["function"], "service_config")
    assert service["max_instance_count"] == "${each.value.max_instances}"
    browser = block(parsed()["google_cloud_run_v2_service"]["browser"], "template")
    assert block(browser, "scaling")["max_instance_count"] == "${each.value.max_instances}"
    assert browser["max_instance_request_concurrency"] == "${each.value.concurrency}"
    total = sum(spec["max_instances"] * per_instance[name] for name, spec in functions.items())
    assert total <= max_connections - RESERVED_CONNECTIONS, (
        f"{total} connections at full scale > {max_connections} - {RESERVED_CONNECTIONS}: "
        "lower a max_instances (colony/registry/*_functions.py) or raise db_max_connections"
    )


def _self_signed_pem() -> str:
    """A CA certificate, standing in for the instance's server CA."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Google Cloud SQL Server CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def test_functions_reach_cloud_sql_on_its_private_ip_over_verified_tls() -> None:
    """No connector in a function: the private IP through the VPC connector, the server
    checked against the instance's CA, the password from Secret Manager. The terraform
    values, with the instance's attributes filled in, are settings our code accepts."""
    env = local_values()["function_env"]
    assert env["COLONY_DB_MODE"] == "dsn" and "COLONY_CLOUDSQL_INSTANCE" not in env
    instance = "google_sql_database_instance.colony"
    assert env["COLONY_DB_SSL_ROOT_CERT"] == f"${{{instance}.server_ca_cert[0].cert}}"
    dsn = (
        env["COLONY_DB_DSN"]
        .replace("${google_sql_user.app.name}", "colony_app")
        .replace(f"${{{instance}.private_ip_address}}", "10.20.0.3")
        .replace("${google_sql_database.colony.name}", "colony")
    )
    assert dsn == "postgresql://colony_app@10.20.0.3:5432/colony?sslmode=verify-ca"
    from colony.store import connect_factory
    from colony.store.db import parse_dsn

    ca = _self_signed_pem()
    kwargs = parse_dsn(dsn, root_cert=ca)
    assert kwargs["host"] == "10.20.0.3" and kwargs["ssl_context"].check_hostname is False
    production = {
        "COLONY_ENV": "production",
        "K_SERVICE": "enrichment",
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": dsn,
        "COLONY_DB_SSL_ROOT_CERT": ca,
        "COLONY_DB_PASSWORD": "from-secret-manager",
        "COLONY_INVOKER_SERVICE_ACCOUNT": "invoker@p.iam.gserviceaccount.com",
    }
    connect_factory(Settings.from_env(production), "app")  # builds; connecting needs the VPC
    service = block(parsed()["google_cloudfunctions2_function"]["function"], "service_config")
    assert service["vpc_connector"] == "${google_vpc_access_connector.colony.id}"
    assert service["vpc_connector_egress_settings"] == "PRIVATE_RANGES_ONLY"
    connector = parsed()["google_vpc_access_connector"]["colony"]
    assert connector["network"] == "${google_compute_network.colony.name}"
    peering = parsed()["google_service_networking_connection"]["sql"]
    assert peering["reserved_peering_ranges"] == [
        "${google_compute_global_address.sql_private.name}"
    ]
    assert "google_service_networking_connection.sql" in " ".join(
        parsed()["google_sql_database_instance"]["colony"]["depends_on"]
    )
    # no function holds a Cloud SQL role: the connector's IAM check is not on their path
    assert not any("roles/cloudsql.client" in f["roles"] for f in registry()["functions"].values())


def test_clerk_authorized_parties_reach_the_functions() -> None:
    assert local_values()["function_env"]["COLONY_JWT_AUTHORIZED_PARTIES"] == (
        '${join(",", var.jwt_authorized_parties)}'
    )
    assert variables()["jwt_authorized_parties"]["type"] == "${list(string)}"
    # the page refreshes Clerk session tokens at the Frontend API named here (empty: none)
    assert local_values()["function_env"]["COLONY_CLERK_FRONTEND_API"] == (
        "${var.clerk_frontend_api}"
    )
    assert variables()["clerk_frontend_api"]["default"] == ""
