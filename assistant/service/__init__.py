"""The service layer: one function per user action, the only import of the CLI."""
