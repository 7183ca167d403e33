"""The browser image (``deploy/browser/Dockerfile``): what the research service runs in.

No Docker daemon runs here and no base image can be pulled, so the image itself is not built
in the tests. Instead its recipe is read and played on this machine, which is the Debian
release it names (bookworm) with its Debian packages (``make browser`` installs the
Dockerfile's list): the bundle ``make package`` makes is the context, a clean virtualenv of
Python 3.11 gets its ``requirements.txt`` as the Dockerfile's ``pip install`` line does, and
the Dockerfile's ``CMD`` serves it on ``$PORT`` as a user that is not root (as its ``USER``),
with the environment terraform gives the service (tests/test_deploy_terraform_browser.py
holds that), over the stand-in web, the embedded PostgreSQL and the GCS emulator. Research
passes then run through it: a page that needs JavaScript is rendered and its text kept, and
while a page that never settles is rendered, its renderer process is seen under Chromium's
seccomp filter in a network namespace of its own: the sandbox a browser run as root (given
``--no-sandbox``) would not have.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from colony.deploy.bundle import build_bundles, dockerfile
from colony.errors import ConfigError
from colony.registry.functions import FUNCTIONS
from colony.testing.lifeline import PARENT_DEATH
from colony.testing.loopback import HOST, accepts, closed_port
from colony.testing.web.cases import JS_TEXT
from colony.testing.web_server import WebServer
from tests.conftest import APP_ROLE, Gcs, PgDB
from tests.research_world import CHROMIUM, chromium
from tests.test_research_runner import ORG, orgs

REPO = Path(__file__).resolve().parents[1]
NOBODY = 65534  # stands in for the image's own user: any uid but root
PYTHON = "/usr/bin/python3.11"  # Debian's: readable by another user, unlike a pyenv's


@dataclass(frozen=True, slots=True)
class Recipe:
    """A Dockerfile's instructions, continuation lines joined: (instruction, arguments)."""

    steps: tuple[tuple[str, str], ...]

    @classmethod
    def read(cls, path: Path) -> Recipe:
        lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
        text = re.sub(r"\\\n\s*", " ", "\n".join(lines))
        steps = []
        for line in text.splitlines():
            if line.strip():
                instruction, _, arguments = line.strip().partition(" ")
                steps.append((instruction.upper(), arguments.strip()))
        return cls(tuple(steps))

    def all(self, instruction: str) -> list[str]:
        return [arguments for name, arguments in self.steps if name == instruction]

    def one(self, instruction: str) -> str:
        (only,) = self.all(instruction)
        return only


def browser_recipe() -> Recipe:
    return Recipe.read(dockerfile(REPO, "browser"))


def apt_packages(recipe: Recipe) -> list[str]:
    (install,) = [r for r in recipe.all("RUN") if "apt-get install" in r]
    assert "--no-install-recommends" in install
    words = install.split("apt-get install", 1)[1].split("&&")[0].split()
    return [w for w in words if not w.startswith("-")]


def test_the_image_is_pinned_python_with_debians_chromium_run_by_a_user_not_root() -> None:
    recipe = browser_recipe()
    # one exact Python release, on the Debian release the tests drive Chromium on
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", recipe.one("FROM"))
    assert "bookworm" in Path("/etc/os-release").read_text()
    packages = apt_packages(recipe)
    assert {"chromium", "chromium-sandbox", "fonts-liberation"} <= set(packages)
    # the machine the tests run on has what the image has (`make browser` installs both)
    makefile = (REPO / "Makefile").read_text()
    listed = re.search(r"^BROWSER_PACKAGES := (.+)$", makefile, re.M)
    assert listed and set(packages) <= set(listed.group(1).split())
    installed = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package}\n", *packages],
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    assert sorted(line.split()[1] for line in installed if line.startswith("ii")) == sorted(
        packages
    )
    # the binary terraform names (COLONY_RESEARCH_BROWSER) is the one Debian's package ships,
    # and its setuid sandbox helper is where Chromium looks for it
    files = subprocess.run(["dpkg", "-L", "chromium"], capture_output=True, text=True).stdout
    assert CHROMIUM in files.split()
    assert os.stat("/usr/lib/chromium/chrome-sandbox").st_mode & 0o4000
    # the bundle's requirements exactly, then its code, owned by root
    (pip,) = [r for r in recipe.all("RUN") if "pip install" in r]
    assert "--no-deps" in pip and pip.endswith("-r requirements.txt")
    assert recipe.all("COPY") == ["requirements.txt .", ". ."]
    # run as a numeric user that is not root, set after every RUN, with no health check of
    # its own (Cloud Run probes the port), serving the bundle's main.py
    user = recipe.one("USER")
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", user)
    names = [name for name, _ in recipe.steps]
    assert names.index("USER") > max(i for i, name in enumerate(names) if name == "RUN")
    assert "HEALTHCHECK" not in names and "ENTRYPOINT" not in names
    assert json.loads(recipe.one("CMD")) == ["functions-framework", "--source", "main.py"]


@dataclass(frozen=True, slots=True)
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def check(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(f"the server exited; its output:\n{self.tail()}")


@pytest.fixture(scope="module")
def image_root() -> Iterator[Path]:
    """The image's files as another user may read them: the bundle (the build context) and a
    clean virtualenv its requirements are installed into, outside pytest's private tmp."""
    root = Path(tempfile.mkdtemp(prefix="colony-browser-image-"))
    root.chmod(0o755)
    try:
        (bundle,) = build_bundles(REPO, root / "functions", ["research"])
        venv = root / "venv"
        subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True)
        (pip,) = [r for r in browser_recipe().all("RUN") if "pip install" in r]
        flags = [w for w in pip.split("pip install", 1)[1].split() if w.startswith("--")]
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", *flags, "-r", "requirements.txt"],
            cwd=bundle.directory,
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "compileall", "-q", "."],
            cwd=bundle.directory,
            check=True,
        )
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def serving(root: Path, env: dict[str, str]) -> Iterator[Served]:
    """The Dockerfile's CMD in its WORKDIR (the bundle) as ``NOBODY``, its PATH putting the
    virtualenv where the image's /usr/local/bin is, with ``env`` and its own URL as the
    research function's (its continuations are tasks to itself); stopped (its whole session)
    after."""
    from colony.local.progress import wait_until

    recipe = browser_recipe()
    command = json.loads(recipe.one("CMD"))
    venv = root / "venv" / "bin"
    port = closed_port()
    url = f"http://{HOST}:{port}"
    home = Path(tempfile.mkdtemp(prefix="colony-browser-home-"))
    os.chown(home, NOBODY, NOBODY)
    log = root / "server.log"
    environment = {
        "PATH": f"{venv}:/usr/bin:/bin",
        "HOME": str(home),
        "COLONY_DATA_DIR": str(home / "colony"),  # local-only files (a URL signing key)
        "PORT": str(port),  # Cloud Run sets it
        "HOST": HOST,  # the image listens on every interface; here, loopback only
        "K_SERVICE": "research",  # Cloud Run sets it to the service's name
        **dict(kv.split("=", 1) for kv in recipe.all("ENV")),
        **env,
        "COLONY_FUNCTION_URLS": json.dumps({"research": url}),
    }
    # the launcher asks for SIGINT when this process dies, then becomes the CMD itself
    launch = PARENT_DEATH % signal.SIGINT + "os.execv(sys.argv[2], sys.argv[2:])"
    binary = shutil.which(command[0], path=environment["PATH"])
    assert binary, f"{command[0]} is not on the image's PATH"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [str(venv / "python"), "-c", launch, str(os.getpid()), binary, *command[1:]],
            cwd=root / "functions" / "research",
            env=environment,
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Served(url, process, log)
    try:
        wait_until(
            "the research server", lambda: accepts(port, timeout=0.2), 60, alive=served.check
        )
        yield served
    finally:
        os.killpg(process.pid, signal.SIGINT)  # gunicorn's quick shutdown
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(home, ignore_errors=True)


def test_the_image_serves_the_research_bundle_and_renders_a_page_with_its_sandbox_on(
    image_root: Path, testdb: PgDB, gcs: Gcs
) -> None:
    from colony.adapters.embedding import OfflineHashEmbedder
    from colony.adapters.transport_local import LocalTransport
    from colony.flows.research import requests as research
    from colony.knowledge import KnowledgeStore
    from colony.local.progress import wait_until
    from colony.settings import Settings
    from colony.store import fetch_all
    from colony.testing.inline import local_deps
    from colony.testing.pgproxy import CountingProxy

    chromium()
    orgs(testdb)
    function = FUNCTIONS["research"]
    assert function.image == "browser" and function.trigger == "http"
    # the database over TCP, as Cloud SQL's private IP is reached: its unix socket belongs to
    # the server's own user, which the image's user may not open
    database = CountingProxy.in_front_of(testdb.dsn(APP_ROLE))
    env = {
        # what terraform/browser.tf adds to the functions' environment
        "COLONY_RESEARCH_BROWSER": CHROMIUM,
        "FUNCTION_TARGET": function.entry_point,
        "FUNCTION_SIGNATURE_TYPE": "http",
        "THREADS": str(function.concurrency),
        # local stand-ins for what production reaches
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": database.dsn,
        "COLONY_TRANSPORT": "local",
        "STORAGE_EMULATOR_HOST": gcs.url,
        "COLONY_ASSETS_BUCKET": gcs.bucket,
    }
    db = testdb.app()
    with (
        WebServer(seed=5) as web,
        serving(image_root, env | {"COLONY_RESEARCH_WEB": web.research_setting()}) as server,
        LocalTransport({"research": server.url}) as transport,
    ):
        # the image's user is not root, so the renderer starts Chromium with its sandbox on
        status = Path(f"/proc/{server.process.pid}/status").read_text()
        assert re.search(rf"^Uid:\s+{NOBODY}\s+{NOBODY}\b", status, re.M), status
        deps = local_deps(
            Settings.from_env({}), db, transport, None, KnowledgeStore(db, OfflineHashEmbedder())
        )
        for company in ("needs-js.example", "spinning-js.example"):
            assert research.request(deps, ORG, company, requested_by="u1") == "started"
        # while the page that never settles is being rendered (until the 30 s deadline),
        # its renderer, a descendant of the server, comes under Chromium's seccomp filter
        # (once started), in namespaces of its own (no network), and no browser process was
        # told --no-sandbox
        sandboxed = wait_until(
            "a sandboxed renderer",
            lambda: [r for r in renderers(server.process.pid) if r["seccomp"] == "2"],
            60,
            alive=server.check,
        )
        assert all(r["uid"] == NOBODY for r in sandboxed), sandboxed
        assert all(r["net"] != os.readlink("/proc/self/ns/net") for r in sandboxed), sandboxed
        browsers = [p for p in descendants(server.process.pid) if "colony-render-" in p["cmdline"]]
        assert browsers and not [p for p in browsers if "--no-sandbox" in p["cmdline"]]

        def finished(company: str) -> dict | None:
            job = research.status(deps, ORG, company)["job"]
            return job if job and job["status"] == "done" else None

        outcomes = {}
        for company in ("needs-js.example", "spinning-js.example"):
            try:
                job = wait_until(company, lambda c=company: finished(c), 120, alive=server.check)
            except ConfigError as error:
                raise AssertionError(f"{error}; the server's output:\n{server.tail()}") from None
            # the page that never settles is all that site has: nothing read there
            expected = "researched" if company == "needs-js.example" else "nothing_read"
            assert job["outcome"] == expected, server.tail()
            with db.transaction(ORG) as cur:
                (home,) = fetch_all(
                    cur,
                    "SELECT * FROM research_sources WHERE domain = %s AND role = 'home'"
                    " AND outcome = 'ok'",
                    (company,),
                )
            outcomes[company] = home["render_outcome"]
            assert home["needs_browser"], company
            if company == "needs-js.example":
                assert JS_TEXT in gcs.store.get(home["text_object"]).decode()
                shot = gcs.store.get(home["screenshot_object"])
                assert shot.startswith(b"\x89PNG\r\n\x1a\n")
        assert outcomes == {"needs-js.example": "rendered", "spinning-js.example": "timeout"}, (
            server.tail()
        )
        assert web.counters().refused_address == 0 and web.counters().robots_violations == 0


def descendants(root: int) -> list[dict]:
    """The processes descended from ``root`` (the browser leads a session of its own, so
    its parentage, not the server's session, finds it) with their uid, network namespace,
    seccomp mode and command line; those that exit while read are left out."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    family, found = {root}, []
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in family and pid not in family:
                family.add(pid)
                grew = True
    for pid in sorted(family - {root}):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            found.append(
                {
                    "pid": pid,
                    "uid": int(fields["Uid"].split()[1]),
                    "seccomp": fields["Seccomp"].strip(),
                    "net": os.readlink(f"/proc/{pid}/ns/net"),
                    "cmdline": command,
                }
            )
        except (OSError, KeyError):
            continue
    return found


def renderers(root: int) -> list[dict]:
    """Chromium's renderer processes descended from ``root``."""
    return [p for p in descendants(root) if "--type=renderer" in p["cmdline"]]
