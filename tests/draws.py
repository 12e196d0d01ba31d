"""The pool's draws, fixed for the tests: a pool built in a test (or a test fixture) takes its seed base, each pair's
sides, the queue's seed, the gold pairs' edits and sides, and the pair ids from one seeded stream, so a failure seen
once replays, and a test's outcome cannot rest on a rare draw (CI of 0a71024, and the round that moved this here).
Tests marked secret_seeds keep the product's secret draws."""

from __future__ import annotations

import contextlib
import hashlib
import random
from types import SimpleNamespace

import pytest


def seed_of(name: str) -> int:
    """A stream seed from a name (a test's node id): the same on every run and in every worker, whatever ran before."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


@contextlib.contextmanager
def seeded_draws(seed: int, bases=None):
    """Pools built inside draw from random.Random(seed), which it yields. `bases(db, cfg, first, samples)` gives each
    new pool's seed base; by default the config's decoding.seed, as every pool had before secret bases."""
    import evalkit.store.pool as store_pool
    import evalkit.study.gold as gold
    import evalkit.study.pairs as pairs

    draws = random.Random(seed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pairs, "_draw_sample_seed", bases or (lambda _db, cfg, _first, _samples: cfg.decoding.seed))
        patch.setattr(pairs, "secrets", SimpleNamespace(choice=draws.choice, randbits=draws.getrandbits))
        patch.setattr(gold, "random", SimpleNamespace(SystemRandom=lambda: draws))
        # the ids as new_pair_id writes them ("p" + 16 hex digits); the queue seed of a pool that stored none
        patch.setattr(store_pool, "secrets",
                      SimpleNamespace(token_hex=lambda n: f"{draws.getrandbits(8 * n):0{2 * n}x}",
                                      randbits=draws.getrandbits))
        yield draws


def made_pairs(db_file, n: int) -> list[tuple[str, str]]:
    """n study pairs made as a pool makes them (study.pairs._run_item: sides drawn, ids given), the two paths' runs
    stubbed with fixed texts, in a new database; (id, ordinary_side) in the order they were made."""
    import evalkit.generation.paths as paths
    import evalkit.study.pairs as pairs
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, open_db
    from evalkit.task.prompts import load_prompts

    def ran(path):
        return lambda _pair, prompt, seed: GenerationRecord(prompt_id=prompt.id, path=path, text=f"{path} {seed}",
                                                            new_tokens=2, stop_reason="eos", generate_seconds=1.0)

    db = open_db(db_file)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(paths, "run_ordinary", ran("ordinary"))
            patch.setattr(paths, "run_assisted", lambda *a: [ran("assisted")(*a)])
            exp, prompt = insert_experiment(db, "pool", {}, {}), load_prompts()[0]
            for i in range(n):
                assert pairs._run_item(None, prompt, i, i, None, db, exp, base=0) == (1, 0)
        return [tuple(r) for r in db.execute("SELECT id, ordinary_side FROM pairs ORDER BY rowid")]
    finally:
        db.close()
