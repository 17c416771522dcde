"""A small embeddings server on 127.0.0.1 that speaks the OpenAI embeddings API, for
tests and benchmarks: deterministic vectors, no network, no model.

A text's vector is the normalised sum of its words' vectors; each word's is a fixed
random unit vector, and the words of one SYNONYMS group share one, so "automobile" and
"car" embed alike while their text shares no word. `behaviour` makes it misbehave:
a wrong dimension, a 401 without the right key, a stall past the client's timeout, a 500.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SYNONYMS = (
    {"car", "cars", "automobile", "automobiles", "vehicle", "vehicles"},
    {"tea", "chai", "oolong", "matcha"},
    {"dog", "dogs", "puppy", "hound"},
)
_CANON = {word: min(group) for group in SYNONYMS for word in group}


@lru_cache(maxsize=100_000)
def _word(word: str, dimension: int) -> tuple[float, ...]:
    seed = int.from_bytes(hashlib.sha256(_CANON.get(word, word).encode()).digest()[:8], "big")
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(dimension)]
    norm = math.sqrt(sum(v * v for v in values))
    return tuple(v / norm for v in values)


def embed_text(text: str, dimension: int) -> list[float]:
    words = re.findall(r"[a-z0-9]+", text.lower()) or ["<empty>"]
    total = [0.0] * dimension
    for word in words:
        for i, v in enumerate(_word(word, dimension)):
            total[i] += v
    norm = math.sqrt(sum(v * v for v in total)) or 1.0
    return [v / norm for v in total]


@dataclass
class Behaviour:
    dimension: int = 384
    key: str | None = None  # a request must carry "Bearer <key>"
    stall_seconds: float = 0.0
    status: int = 200
    echo_headers: bool = False  # refuse with a body that repeats the request's headers
    requests: list[list[str]] = field(default_factory=list)  # the inputs, in order
    input_types: list[str | None] = field(default_factory=list)  # each request's input_type


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that timed out and hung up is what a stall test wants: no noise."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@contextmanager
def embedding_server(behaviour: Behaviour | None = None) -> Iterator[tuple[str, Behaviour]]:
    """(base URL ending in /v1, its behaviour, changeable while it runs)."""
    state = behaviour or Behaviour()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/embeddings":
                return self._answer(404, {"error": {"message": "no such path"}})
            if state.key is not None and self.headers.get("Authorization") != f"Bearer {state.key}":
                return self._answer(401, {"error": {"message": "Incorrect API key provided"}})
            if state.echo_headers:
                return self._answer(400, {"error": {"headers": dict(self.headers.items())}})
            if state.stall_seconds:
                time.sleep(state.stall_seconds)
            if state.status != 200:
                return self._answer(state.status, {"error": {"message": "overloaded"}})
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            state.requests.append(texts)
            state.input_types.append(body.get("input_type"))
            data = [
                {"object": "embedding", "index": i, "embedding": embed_text(t, state.dimension)}
                for i, t in enumerate(texts)
            ]
            self._answer(200, {"object": "list", "data": data, "model": body["model"]})

        def _answer(self, status: int, payload: object) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()
