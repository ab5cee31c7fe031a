"""Stand-in model servers: real HTTP on 127.0.0.1 for the real SDKs (see server.py)."""

from tests.standins.gemini_api import GeminiStandin
from tests.standins.openai_api import OpenAIStandin
from tests.standins.server import BEHAVIOURS, RecordedRequest, Reply, StandinServer

__all__ = [
    "BEHAVIOURS",
    "GeminiStandin",
    "OpenAIStandin",
    "RecordedRequest",
    "Reply",
    "StandinServer",
]
