"""`python -m telemetry.agent ...`: the same as `manage.py run_agent ...`, without Django."""
import sys

from .cli import main

sys.exit(main())
