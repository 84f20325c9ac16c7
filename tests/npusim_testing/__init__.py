"""Helpers shared by npusim's test folders (importable because tests/conftest.py puts tests/ on
sys.path)."""
