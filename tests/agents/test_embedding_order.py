"""The order semantic and cluster embed a document in is each worker's own: cluster runs from the longest
sentences down and semantic from the shortest up, so through the shared store they meet in the middle.
Building one worker must not flip the other's order, even when both are built in one process."""

from __future__ import annotations

from pathlib import Path

from streams.agents.app import chunker_app
from streams.embedding.stores import embedder_for
from streams.settings import Settings
from streams.strategies import SENTENCE_UNITS


def test_semantic_and_cluster_workers_in_one_process_keep_their_own_order(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, broker="127.0.0.1:9", embed_cache="sqlite", embed_model=None)
    chunker_app("cluster", settings)
    chunker_app("semantic", settings)  # built second: it used to set the shared embedder's order back
    cluster = embedder_for(settings, SENTENCE_UNITS, descending=True)
    semantic = embedder_for(settings, SENTENCE_UNITS)
    assert cluster.descending and not semantic.descending
    # the very embedders the workers warmed up (one text each), not new ones
    assert cluster.stats.misses + cluster.stats.shared_hits == 1
    assert semantic.stats.misses + semantic.stats.shared_hits == 1
    assert cluster.store is not None and semantic.store is not None  # both share vectors through the store
