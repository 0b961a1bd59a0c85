"""Render: the typed config to ARM templates through Jinja, gathered in a DeploymentPlan."""
