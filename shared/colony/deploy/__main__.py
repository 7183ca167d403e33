"""``python -m colony.deploy``: build-time tooling (never part of a deployed bundle).

``tfvars`` rewrites terraform/registry.auto.tfvars.json; ``package [--out D] [names]`` does
that and stages build/functions/<name>/ with its zip.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colony.deploy import bundle, tfvars

REPO = Path(__file__).resolve().parents[3]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m colony.deploy")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tfvars", help="regenerate terraform/registry.auto.tfvars.json")
    package = sub.add_parser("package", help="stage and zip every function bundle")
    package.add_argument("--out", type=Path, default=REPO / "build" / "functions")
    package.add_argument("names", nargs="*", help="functions to package (default: all)")
    args = parser.parse_args()
    print(f"wrote {tfvars.write(REPO).relative_to(REPO)}")
    if args.command == "package":
        for built in bundle.build_bundles(REPO, args.out, args.names or None):
            size = built.zip_path.stat().st_size
            print(
                f"{built.name:24} {built.object_name}  {size / 1024:.0f} KiB"
                f"  {len(built.requirements)} requirements"
            )


if __name__ == "__main__":
    main()
