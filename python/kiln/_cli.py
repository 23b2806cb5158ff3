"""The `kiln` command of an installed package: runs the command-line tool the package carries
(kiln/bin/kiln, the same program as a source build's build/bin/kiln) with the same arguments, so
output and exit codes are the tool's own; except `kiln serve ...`, which is `python -m kiln.serve
...` (Ray Serve, in Python)."""
import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        from .serve.__main__ import main as serve_main
        sys.exit(serve_main(sys.argv[2:]))
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kiln")
    if not os.access(tool, os.X_OK):
        sys.exit(f"kiln: the command-line tool is missing from this installation ({tool}); reinstall kiln")
    os.execv(tool, [tool] + sys.argv[1:])
