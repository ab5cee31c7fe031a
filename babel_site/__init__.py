"""Babel's Django project. The Celery app is imported here so shared_task binds to it."""

from babel_site.celery import app as celery_app

__all__ = ("celery_app",)
