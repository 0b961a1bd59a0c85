"""Rules: config validators, template lint rules and verify checks, in one framework."""
