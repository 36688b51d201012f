"""`python -m service.build_job --spec SPEC.json` — same as service.build_job.main."""
from __future__ import annotations

import sys

from service.build_job.main import main

sys.exit(main())
