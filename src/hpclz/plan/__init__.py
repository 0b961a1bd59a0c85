"""`hpclz plan`: what an apply would do and what it would cost, terraform style.

- `changeset`: the model (per config field and per resource: create, modify, delete, replace,
  no change; each with an update policy, its reason and the action needed).
- `offline`: rendered DeploymentPlan against the last applied StateDocument (no credentials).
- `config_diff`: config fields changed since the last apply (`StateDocument.applied_config`,
  written by deploy with `config_snapshot(config)`), matched by name for lists of named items.
- `policies`: the per-resource-type table of properties that force replacement, drains or restarts.
- `whatif`: ARM what-if results mapped into the same model, with known noise filtered and counted.
- `contract`: the change set deploy confirms and the refusals before its first write.
- `resources`: the Azure resources a plan declares, comparable with state; `assignments`: role assignments
  by what they mean; `drift`: what changed in Azure outside hpclz; `decode`: readable diffs of encoded values.
- `unchanged`: the one definition of "deployment unchanged".
- `saved`: saved plans. The text a person reads is printed by `hpclz.cli.views.changeset`.

For deploy: `hpclz.plan.saved.read_saved_plan(path)` reads what `hpclz plan --out FILE` saved, and
`check_saved_plan(saved, path, config, state) -> DeploymentPlan` returns its plan after checking that the
config, hpclz's templates and the state (lineage and serial) are still those the plan was computed against;
otherwise it raises HpclzError (exit 1) saying what changed. Apply exactly the returned plan.
"""
