"""Services: what each command does, returning typed results the CLI prints."""
