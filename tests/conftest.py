"""Shared fixtures for every part."""
