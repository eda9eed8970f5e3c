"""Shared facts about a module that every rule asks about, computed once per module."""
