"""Babel's context engine: pure Python, no Django.

Everything that decides what goes into a model call lives here: token counting,
visibility rules, pack building, trimming, strain, strategies, memory (digest and
World Bible extraction) and the LLM clients. `campaigns/reads/adapters.py` turns model rows
into the frozen dataclasses of `context_engine.types`; nothing here imports django,
rest_framework, celery or campaigns (an import-linter contract enforces it).
"""
