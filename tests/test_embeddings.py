"""The bundled MiniLM embedder: calls grouped by a token budget, long texts cut before tokenizing."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sensetree.models.embeddings import MiniLMOnnx, token_batches

WORDS = "harbour crane lease volcano tram saffron kayak orchard glacier survey the of and to in".split()


def test_token_batches_keep_every_call_within_the_budget():
    rng = random.Random(5)
    lengths = [rng.randint(1, 256) for _ in range(500)]
    batches = token_batches(lengths, 512)
    assert sorted(i for batch in batches for i in batch) == list(range(500))
    for batch in batches:
        assert len(batch) * max(lengths[i] for i in batch) <= 512
    widths = [max(lengths[i] for i in batch) for batch in batches]
    assert widths == sorted(widths), "similar lengths share a call"


def test_a_row_longer_than_the_budget_goes_alone():
    assert token_batches([600, 10, 10], 512) == [[1, 2], [0]]
    assert token_batches([], 512) == []


@pytest.fixture(scope="module")
def minilm():
    return MiniLMOnnx(threads=1)


def test_grouping_does_not_change_the_vectors(minilm):
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 400))) for _ in range(40)]
    together = minilm.embed_passages(texts)
    alone = np.stack([minilm.embed_passages([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert minilm.embed_passages([]).shape == (0, 384)


def test_a_long_chunk_embeds_as_its_first_256_tokens(minilm):
    """Prose is cut to 4,096 characters before tokenizing; the model still sees the same 256 tokens."""
    prose = " ".join(random.Random(9).choice(WORDS) for _ in range(5000))  # ~40,000 characters
    first_tokens = prose[:3000]  # more than 256 tokens of these words
    np.testing.assert_allclose(minilm.embed_passages([prose]), minilm.embed_passages([first_tokens]), atol=1e-6)
    np.testing.assert_allclose(minilm.embed_query(prose), minilm.embed_passages([prose])[0], atol=1e-6)
