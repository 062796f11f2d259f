"""The workflow's tracking: jobs write run records, the Snakemake process makes MLflow runs
of them (MLflow is a view of the records; no rule reads it back).

* ``record``    - the run record a job appends to beside its log (standard library only;
  jobs never import MLflow), and a run's identity (:func:`record.run_key`);
* ``sync``      - records -> MLflow runs, idempotent by record id: the Snakemake process's
  live sync thread and ``ibrobust sync`` (the only module importing MLflow);
* ``workflow``  - :class:`WorkflowTracking`, the object the Snakefile holds (the parent
  record, the sync thread; ``start`` in ``onstart``, ``end`` in ``onsuccess``/``onerror``);
* ``masking``   - the one function that masks secrets (URI passwords, ``password=``);
* ``secrets``   - the warning for a password given with ``--config``;
* ``invocation``- what one ``snakemake`` runs (targets, studies): the parent run's name;
* ``ui``        - the end-of-run lines: the command that serves the store, the run's URL.
"""

from __future__ import annotations

from .invocation import Invocation
from .masking import mask_secrets, mask_value
from .record import ENV_PARENT, RunRecord, run_key
from .secrets import command_line_warning
from .workflow import WorkflowTracking

__all__ = ["ENV_PARENT", "Invocation", "RunRecord", "WorkflowTracking", "command_line_warning",
           "mask_secrets", "mask_value", "run_key"]  # fmt: skip
