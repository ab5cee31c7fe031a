"""Run a stand-in by hand: ``python -m tests.standins gemini --port 8765 --default 500``.

Prints the base URL to use (GEMINI_BASE_URL or OPENAI_BASE_URL) and serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import threading

from tests.standins import BEHAVIOURS, GeminiStandin, OpenAIStandin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("api", choices=("gemini", "openai"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--default", choices=BEHAVIOURS, default="ok")
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    args = parser.parse_args()
    cls = GeminiStandin if args.api == "gemini" else OpenAIStandin
    server = cls(port=args.port, default=args.default, slow_seconds=args.slow_seconds).start()
    print(server.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
