"""`python -m autograde.build [--check] [--if-stale] [CHAPTER ...]`: see autograde.build.products."""
import sys

from autograde.build.products import main

sys.exit(main())
