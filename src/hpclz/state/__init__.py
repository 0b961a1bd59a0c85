"""State: what hpclz last applied, and the backends (local, Azure Blob) that hold it under a lock.

Entry points: `hpclz.azure.backends.open_backend(config, base_dir=...)` returns a
`hpclz.state.backend.StateBackend` (this package defines it; the Azure Blob one lives in hpclz.azure); `hpclz.state.factory.new_state(config)` starts a document.
Errors: `hpclz.state.errors` (StateLockedError exits 4; StateConflictError; SecretInStateError).
"""
