"""``python -m pycontroller.gen CRD_FILE [CRD_FILE ...] [-o OUT.py]``: TypedDicts from CRD schemas.

Writes one module for every CRD in the files, to stdout without ``-o``. See
``pycontroller.gen`` for the mapping.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pycontroller.gen import GenerationError, generate_file


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pycontroller.gen", description=__doc__)
    parser.add_argument("crd_files", nargs="+", metavar="CRD_FILE", help="YAML file(s) with CRDs")
    parser.add_argument("-o", "--output", metavar="OUT.py", help="write here (default: stdout)")
    args = parser.parse_args(argv)
    try:
        text = generate_file(*args.crd_files)
    except (OSError, GenerationError) as err:
        print(f"python -m pycontroller.gen: {err}", file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
