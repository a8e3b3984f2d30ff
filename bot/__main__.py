"""`python -m bot` runs the trainmedic command line, as the `trainmedic` console script does.

This file is only the process entry point the package must offer; the command line itself is an edge
(handlers/cli.py) and nothing else in bot/ imports handlers/.
"""

from handlers.cli import main

raise SystemExit(main())
