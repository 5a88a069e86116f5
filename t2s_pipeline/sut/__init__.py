"""Clients for the system under test: the contract models, live HTTP and replay."""
