"""ARM template tooling: the expression parser and the three gates (schema, lint, checkov) on a plan."""
