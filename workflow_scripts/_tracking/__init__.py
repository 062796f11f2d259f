"""The workflow's tracking: the only code that knows MLflow (Snakemake owns the pipeline;
MLflow only receives data, no rule reads it back).

* ``masking``   - the one function that masks secrets (URI passwords, ``password=``);
* ``protocol``  - what both sides share: environment, stream messages, run key, spool file;
* ``client``    - the job side (:class:`JobRun`), standard library only;
* ``records``   - what a run records about a job's files: its model file (tags, artifact
  within the size cap), the dataset files it read (MLflow dataset inputs);
* ``writer``    - applies a run's stream to MLflow (collector, writer process, replay);
* ``collector`` - the writer thread of the Snakemake process (a Unix-socket server);
* ``workflow``  - :class:`WorkflowTracking`, the object the Snakefile holds (parent run,
  collector, server; ``start`` in ``onstart``, ``end`` in ``onsuccess``/``onerror``);
* ``uri``       - tracking URIs and the fast reachability probe;
* ``secrets``   - store URIs from the environment (IBROBUST_BACKEND_STORE_URI), and the
  warning for a password given with ``--config``;
* ``invocation``- what one ``snakemake`` runs (targets, studies): the parent run's name;
* ``ui``        - the end-of-run lines: the command that serves the store, the run's URL;
* ``replay``    - ``python workflow_scripts/_tracking/replay.py``: spooled runs -> store;
* ``server``    - the run's own MLflow tracking server (start, stop, its supervisor).

Importing the package imports no MLflow.
"""

from __future__ import annotations

from .client import JobRun
from .collector import Collector, start_collector
from .invocation import Invocation
from .masking import mask_secrets, mask_value
from .protocol import (
    ENV_COLLECTOR,
    ENV_COMMIT,
    ENV_CONFIG_HASH,
    ENV_ENABLED,
    ENV_EXPERIMENT,
    ENV_PARENT,
    ENV_SPOOL,
    ENV_TIMEOUT,
    ENV_URI,
    MAX_PARAM_LEN,
    RUN_KEY_TAG,
    mlflow_key,
    run_key,
)
from .secrets import ENV_BACKEND_STORE, backend_store, command_line_warning
from .uri import TrackingUnreachable, probe, resolve_tracking_uri
from .workflow import WorkflowTracking, server_settings

__all__ = [
    "ENV_BACKEND_STORE",
    "ENV_COLLECTOR",
    "ENV_COMMIT",
    "ENV_CONFIG_HASH",
    "ENV_ENABLED",
    "ENV_EXPERIMENT",
    "ENV_PARENT",
    "ENV_SPOOL",
    "ENV_TIMEOUT",
    "ENV_URI",
    "MAX_PARAM_LEN",
    "RUN_KEY_TAG",
    "Collector",
    "Invocation",
    "JobRun",
    "TrackingUnreachable",
    "WorkflowTracking",
    "backend_store",
    "command_line_warning",
    "mask_secrets",
    "mask_value",
    "mlflow_key",
    "probe",
    "resolve_tracking_uri",
    "run_key",
    "server_settings",
    "start_collector",
]
