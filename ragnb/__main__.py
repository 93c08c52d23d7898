"""``python -m ragnb``: the ``ragnb`` command."""

from ragnb.cli.main import main

raise SystemExit(main())
