"""`python -m autograde.authoring [--check] [--if-stale] [CHAPTER ...]`: see autograde.authoring.products."""
import sys

from autograde.authoring.products import main

sys.exit(main())
