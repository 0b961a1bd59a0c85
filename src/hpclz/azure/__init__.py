"""The Azure adapter: the only package that imports the Azure SDK, and only lazily, inside functions."""
