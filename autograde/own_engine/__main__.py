"""python -m autograde.own_engine DIR: see autograde/own_engine/__init__.py."""
import sys

from autograde.own_engine.cli import main

sys.exit(main())
