"""State: what hpclz last applied, and the backends (local, Azure Blob) that hold it under a lock."""
