"""`hpclz plan`: what an apply would do and what it would cost, terraform style.

- `changeset`: the model (per config field and per resource: create, modify, delete, replace,
  no change; each with an update policy, its reason and the action needed).
- `offline`: rendered DeploymentPlan against the last applied StateDocument (no credentials).
- `config_diff`: config fields changed since the last apply (`StateDocument.applied_config`,
  written by deploy with `config_snapshot(config)`), matched by name for lists of named items.
- `policies`: the per-resource-type table of properties that force replacement, drains or restarts.
- `whatif`: ARM what-if results mapped into the same model, with known noise filtered and counted.
- `printer`: the terraform-like text; `saved`: saved plans.

For deploy: `hpclz.plan.saved.load_saved_plan(path, config, state) -> DeploymentPlan` returns the
DeploymentPlan a `hpclz plan --out FILE` saved, after checking that the config, hpclz's templates
and the state (lineage and serial) are still those the plan was computed against; otherwise it
raises HpclzError (exit 1) saying what changed. Apply exactly the returned plan.
"""
