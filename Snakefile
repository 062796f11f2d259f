# ibrobust: implicit bias of gradient methods and adversarial robustness.
# Table of contents only; the logic lives in rules/common.smk, the study kinds' rules files
# (each kind's capability `rules`, ibrobust.kinds.STUDIES) and the library in src/.
from snakemake.utils import min_version

# the oldest Snakemake the tests have passed on (only 9.27.1 was tested; the onstart hooks
# read workflow.scheduler and workflow.dag, see workflow_scripts/_signals.py, _scheduler.py)
min_version("9.27.1")


configfile: os.path.join(workflow.basedir, "config.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/analysis.smk"
include: "rules/attack.smk"

# one rules file per study kind; its rules match that kind's studies only
for _kind, _rules in STUDY_RULES.items():

    wildcard_constraints:
        study=study_constraint(_kind),

    include: f"rules/{_rules}"


wildcard_constraints:
    study=study_constraint(),


include: "rules/targets.smk"
include: "rules/claims.smk"
include: "rules/decide.smk"


rule all:
    default_target: True
    input:
        default_targets(),
