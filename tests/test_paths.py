"""The generation paths on real (tiny) Transformers models through the real generate()."""

import pytest
import torch

from evalkit.config import load_config
from evalkit.errors import EvalkitError
from evalkit.generation.models import load_pair
from evalkit.generation.paths import run_assisted, run_ordinary, run_path, run_prompt_lookup
from evalkit.task.prompts import load_prompts

PROMPTS = load_prompts()


@pytest.fixture
def pair(make_config):
    return load_pair(load_config(make_config()), progress=False)


@pytest.mark.slow
def test_greedy_float32_assisted_equals_ordinary_on_every_prompt(pair):
    assert pair.compat.verdict == "same_tokenizer"
    for prompt in PROMPTS:
        o = run_ordinary(pair, prompt, 7)
        (a,) = run_assisted(pair, prompt, 7)
        assert a.path == "assisted" and a.status == "ok"
        assert a.token_ids == o.token_ids, prompt.id
        assert a.token_hash == o.token_hash


def test_record_fields(pair):
    (a,) = run_assisted(pair, PROMPTS[0], 3)
    assert a.new_tokens == len(a.token_ids) > 0
    assert a.generate_seconds > 0 and a.decode_seconds is not None
    assert a.rss_mb and a.peak_rss_mb and a.peak_rss_mb >= a.rss_mb * 0.5
    cfg = a.effective_config
    assert cfg["assistant_generation_config"] == {
        "num_assistant_tokens": 4, "num_assistant_tokens_schedule": "constant", "assistant_confidence_threshold": 0.0,
    }
    assert cfg["config"]["decoding"]["mode"] == "greedy" and cfg["generate_kwargs"]["max_new_tokens"] == 24
    assert a.seed == 3 and a.decoding == "greedy"


def test_target_as_its_own_draft_accepts_everything(make_config):
    pair = load_pair(load_config(make_config(draft="target_copy")), progress=False)
    for prompt in PROMPTS[:3]:
        (a,) = run_assisted(pair, prompt, 1)
        assert a.draft_proposed > 0
        assert a.draft_accepted == a.draft_proposed  # acceptance 1.0
        assert a.counts_agree
        # independent counts: rounds from the candidate generator, passes from the forward hook
        assert a.draft_rounds == a.target_passes
        assert a.draft_accepted + a.draft_rounds == a.new_tokens
        assert a.tokens_per_target_pass > 2


@pytest.mark.slow
def test_random_draft_gets_low_acceptance_and_counts_agree(pair):
    accepted = proposed = 0
    for prompt in PROMPTS:
        (a,) = run_assisted(pair, prompt, 1)
        assert a.counts_agree and a.draft_rounds == a.target_passes
        accepted += a.draft_accepted
        proposed += a.draft_proposed
    assert proposed > 0 and accepted / proposed < 0.3


def test_ordinary_counts_one_token_per_pass(pair):
    o = run_ordinary(pair, PROMPTS[1], 2)
    assert o.target_passes == o.new_tokens and o.tokens_per_target_pass == 1.0 and o.counts_agree
    assert o.draft_proposed is None


def test_heuristic_schedule_is_reset_between_runs(make_config):
    pair = load_pair(load_config(make_config(draft="target_copy", **{"assistant.num_assistant_tokens_schedule": "heuristic"})), progress=False)
    (a1,) = run_assisted(pair, PROMPTS[0], 1)
    # full acceptance grows the draft length inside generate() and Transformers writes it back
    assert pair.draft.generation_config.num_assistant_tokens > 4
    (a2,) = run_assisted(pair, PROMPTS[0], 1)
    assert a2.effective_config["assistant_generation_config"]["num_assistant_tokens"] == 4
    assert a1.draft_proposed == a2.draft_proposed  # same state at the start of each measured run


def test_forced_assisted_failure_gives_labelled_separately_timed_fallback(pair, monkeypatch):
    def boom(*args, **kwargs):
        raise torch.OutOfMemoryError("simulated out of memory in the draft")

    monkeypatch.setattr(pair.draft, "forward", boom)
    records = run_assisted(pair, PROMPTS[0], 5)
    failed, fallback = records
    assert failed.path == "assisted" and failed.status == "failed"
    assert failed.error_class == "OutOfMemoryError" and failed.error_stage == "generate"
    assert "simulated" in failed.error_message and failed.effective_config["config"]
    assert fallback.path == "fallback" and fallback.status == "ok" and fallback.fallback_of == -1
    assert fallback.generate_seconds > 0 and failed.generate_seconds is not None
    assert fallback.total_wait_seconds == pytest.approx(
        failed.generate_seconds + fallback.generate_seconds + fallback.decode_seconds
    )
    assert fallback.token_ids == run_ordinary(pair, PROMPTS[0], 5).token_ids


def test_draft_load_failure_is_a_load_stage_record(make_config, tmp_path):
    cfg = load_config(make_config())
    pair = load_pair(cfg, progress=False)
    # the draft's weights vanish after the compatibility check: the load fails, the target still serves
    pair.draft = None
    pair.draft_error = {"error_class": "DraftLoadError", "error_stage": "load", "error_message": "gone"}
    failed, fallback = run_assisted(pair, PROMPTS[0], 1)
    assert failed.error_stage == "load" and fallback.path == "fallback" and fallback.status == "ok"


def test_stop_reason_max_new_tokens_and_eos(pair):
    o = run_ordinary(pair, PROMPTS[0], 1)
    assert o.stop_reason == "max_new_tokens" and o.new_tokens == 24
    # make the 5th greedy token the end-of-sequence token: generation must stop there, on both paths
    eos = o.token_ids[4]
    pair.target.generation_config.eos_token_id = eos
    o2 = run_ordinary(pair, PROMPTS[0], 1)
    (a2,) = run_assisted(pair, PROMPTS[0], 1)
    assert o2.stop_reason == "eos" and o2.token_ids[-1] == eos and o2.new_tokens <= 5
    assert a2.stop_reason == "eos" and a2.token_ids == o2.token_ids


def test_sampling_same_seed_same_path_is_reproducible(make_config):
    pair = load_pair(load_config(make_config(**{"decoding.mode": "sample"})), progress=False)
    a = run_ordinary(pair, PROMPTS[0], 11)
    b = run_ordinary(pair, PROMPTS[0], 11)
    assert a.token_ids == b.token_ids and a.decoding == "sample"


def test_incompatible_tokenizers_not_approved_only_ordinary_runs(make_config):
    pair = load_pair(load_config(make_config(draft="other_draft")), progress=False)
    assert pair.compat.verdict == "not_approved"
    assert any("tokenizers differ" in r for r in pair.compat.reasons)
    assert pair.draft is None  # never loaded
    with pytest.raises(EvalkitError, match="not approved"):
        run_assisted(pair, PROMPTS[0], 1)
    assert run_path(pair, PROMPTS[0], "ordinary", 1)[0].status == "ok"


def test_ordinary_switch_loads_no_draft(make_config):
    pair = load_pair(load_config(make_config(generation_path="ordinary")), progress=False)
    assert pair.draft is None and pair.compat.draft is None
    with pytest.raises(EvalkitError, match="switched off"):
        run_assisted(pair, PROMPTS[0], 1)


def test_prompt_lookup_arm(make_config):
    pair = load_pair(load_config(make_config(**{"assistant.prompt_lookup_num_tokens": 3})), progress=False)
    r = run_prompt_lookup(pair, PROMPTS[0], 1)
    o = run_ordinary(pair, PROMPTS[0], 1)
    assert r.path == "prompt_lookup" and r.token_ids == o.token_ids and r.counts_agree


def test_missing_model_path_is_a_clear_error(make_config, tmp_path):
    cfg = load_config(make_config(**{"models.target": str(tmp_path / "no-such-model")}))
    with pytest.raises(EvalkitError, match="(?s)no-such-model does not exist.*save_pretrained"):
        load_pair(cfg, progress=False)


def test_out_of_memory_on_the_ordinary_path_is_a_clear_error(pair, monkeypatch):
    def oom(*args, **kwargs):
        raise torch.OutOfMemoryError("simulated")

    monkeypatch.setattr(pair.target, "forward", oom)
    with pytest.raises(EvalkitError, match="(?s)out of memory generating 'writing-01' on the ordinary path.*fix:"):
        run_ordinary(pair, PROMPTS[0], 1)


def test_a_failure_before_the_clock_starts_takes_no_time(pair, monkeypatch):
    """Audit, 2026-12-02: a failure in the assisted path's preparation (before its stopwatch started) was timed from
    0.0, i.e. the seconds since the machine booted, and the fallback's total wait inherited them."""
    from evalkit.generation import paths

    def boom(_pair):
        raise RuntimeError("assistant settings could not be written")

    monkeypatch.setattr(paths, "apply_assistant_settings", boom)
    failed, fallback = run_path(pair, PROMPTS[0], "assisted", 7)
    assert failed.status == "failed" and failed.error_stage == "prepare"
    assert failed.generate_seconds == 0.0
    assert fallback.total_wait_seconds == pytest.approx(fallback.generate_seconds + (fallback.decode_seconds or 0))


def test_a_bench_process_records_no_first_call_or_warm_up_that_fell_back(make_config, monkeypatch):
    """Audit, 2026-12-02: the assisted worker stored the fallback's (ordinary) times as its own first call and
    warm-ups; its timed runs were correctly stored as fallbacks."""
    from evalkit.generation import paths
    from evalkit.generation.bench.worker import run_worker

    cfg = load_config(make_config(draft="target_copy"))
    cfg.bench.warmup, cfg.bench.reps = 2, 1

    def boom(_pair):
        raise RuntimeError("simulated: the assisted path cannot run")

    monkeypatch.setattr(paths, "apply_assistant_settings", boom)
    res = run_worker(cfg, "assisted", 1, 0, ["writing-01"])
    assert res["process"]["first_call_seconds"] is None and res["process"]["warmup_seconds"] == [None, None]
    assert {r["path"] for x in res["runs"] for r in x["records"]} == {"assisted", "fallback"}


def test_two_threads_on_one_shared_pair_each_get_their_own_clean_record(pair):
    """Live audit, 2026-12-04: a Live run left mid-way (the tab closed) kept generating in its thread while the next
    run started on the same shared models. The counting of one call wraps the target's candidate generator and hooks
    its forward passes, so two at once crashed ("'LlamaForCausalLM' object has no attribute
    '_get_candidate_generator'") or would have mixed their counts. Calls on one target now take turns: run together
    from threads, each gives the record it gives alone."""
    import threading

    prompt = load_prompts()[0]
    alone = run_path(pair, prompt, "assisted", 3)[0]
    results, errors = [None] * 4, []

    def call(i):
        try:
            results[i] = run_path(pair, prompt, "assisted", 3)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for recs in results:
        assert [r.status for r in recs] == ["ok"], [(r.status, r.error_message) for r in recs]
        r = recs[0]
        assert r.token_ids == alone.token_ids
        assert (r.target_passes, r.draft_proposed, r.draft_accepted) == (
            alone.target_passes, alone.draft_proposed, alone.draft_accepted)


def test_a_live_run_left_mid_way_ends_and_frees_the_models(pair):
    """The other half of the Live audit's finding: a run whose page went kept generating for nothing, holding the
    models. Gradio stops iterating the handler (the generator is closed); the streamers are told, and the next
    token ends the generation, so the models are free again."""
    import time

    from evalkit.errors import EvalkitError
    from evalkit.ui.live import RunAbandoned, _in_thread, _text_buffer, models_busy

    import threading

    prompt = load_prompts()[0]
    bufs = [_text_buffer(pair.tokenizer), _text_buffer(pair.tokenizer)]
    started, outcome, left = [], {}, threading.Event()

    def slow_run():  # a run still going when its page goes: it holds at its first streamed token until then (each
        put = bufs[0].put  # token slowed by 50 ms could all pass, on a loaded machine, before the page went)

        def put_held(value):
            started.append(1)
            left.wait(60)
            put(value)

        bufs[0].put = put_held
        try:
            outcome["records"] = run_path(pair, prompt, "assisted", 3, streamer=bufs[0], fallback_streamer=bufs[1])
        except EvalkitError as e:
            outcome["error"] = e
        return outcome

    stream = _in_thread(slow_run, bufs)
    next(stream)
    # by the clock, and not past a run that ended before its first token (that waited for ever)
    deadline = time.monotonic() + 120
    while not started and not outcome and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started, f"the run streamed no token in 120 s: {outcome}"
    assert models_busy(pair)
    stream.close()  # what Gradio does when the page is closed mid-run
    left.set()
    # a wait, not a measure (a loaded machine may take its time; 10 s was tight): RunAbandoned below tells a run
    # stopped at its next token from one that ran to its end
    deadline = time.monotonic() + 120
    while models_busy(pair) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not models_busy(pair), "the abandoned run still holds the models"
    while not outcome and time.monotonic() < deadline:
        time.sleep(0.05)
    # nothing of it is taken for a result: the assisted call and its fallback both failed, abandoned
    failed = outcome.get("records") or []
    assert "error" in outcome or all(r.status == "failed" for r in failed)
    assert RunAbandoned.__name__ in str(outcome.get("error", "")) + " ".join(r.error_class for r in failed)


def test_the_pool_warms_both_paths_up_untimed_and_lets_them_take_turns_going_first(make_config, tmp_path, monkeypatch):
    """Sceptic audit, 2026-12-06: `evalkit generate` ran ordinary then assisted for every sample, and nothing before
    the first: the process's first generate() call (one-time kernels, allocator, caches) was always the first pair's
    ordinary run, and every assisted run followed an ordinary one on the same prompt, so the pool's speed figures
    (shown as reported, deciding under a gate frozen before speed_source) leaned to assisted. Now one untimed call
    of each path comes first and is not stored, and the paths take turns going first, pair by pair."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.generation import paths
    from evalkit.store import open_db

    calls, real = [], paths._call
    monkeypatch.setattr(paths, "_call", lambda pair, prompt, seed, path, *a, **kw: calls.append(
        (path, prompt.id, seed)) or real(pair, prompt, seed, path, *a, **kw))
    cfg = make_config(**{"pool.prompts": ["writing-01", "writing-02"], "pool.gold_rate": 0.0,
                         "decoding.max_new_tokens": 4})
    r = CliRunner().invoke(cli, ["generate", "--config", str(cfg), "--db", str(tmp_path / "p.db"), "--samples", "2"])
    assert r.exit_code == 0, r.output
    stored = list(open_db(tmp_path / "p.db").query("SELECT path, prompt_id, seed FROM generations"))
    assert {g["path"] for g in stored} == {"ordinary", "assisted"} and len(stored) == 8
    # the warm-up: one call of each path before the first pair's, and nothing of it stored
    assert len(calls) == len(stored) + 2 and {c[0] for c in calls[:2]} == {"ordinary", "assisted"}
    items = [calls[i:i + 2] for i in range(2, len(calls), 2)]
    assert sorted(tuple(g.values()) for g in stored) == sorted(c for item in items for c in item)
    assert all({c[0] for c in item} == {"ordinary", "assisted"} and item[0][1:] == item[1][1:] for item in items)
    assert [item[0][0] for item in items].count("assisted") == len(items) // 2  # each path first in half the pairs


def test_the_report_and_card_say_whether_the_pool_s_timed_runs_were_warmed_up(make_config, tmp_path):
    """Speed audit, 2026-12-06: the pool has warmed both paths up untimed and let them take turns going first since
    c2d2d33, but nothing stored said so, and a pool made before (no warm-up, ordinary always first) showed its figure
    alike. The pool's experiment now records it (its note, study.pairs.WARMED_UP), and wherever the pool's figure is
    shown (the speed-up's source in the verdict, the report's line and plot, the card's figure and protocol, the
    Chinese verdict) it says which it had."""
    from click.testing import CliRunner

    from evalkit.aggregate import aggregate
    from evalkit.cli import cli
    from evalkit.publish.export import protocol_markdown
    from evalkit.publish.provenance import build_provenance
    from evalkit.publish.report import build_report
    from evalkit.store import open_db
    from evalkit.ui.results import verdict_markdown

    cfg = make_config(**{"pool.prompts": ["writing-01", "writing-02"], "pool.gold_rate": 0.0,
                         "decoding.max_new_tokens": 4})
    r = CliRunner().invoke(cli, ["generate", "--config", str(cfg), "--db", str(tmp_path / "p.db"), "--samples", "2"])
    assert r.exit_code == 0, r.output
    db = open_db(tmp_path / "p.db")
    pool = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]

    def shown(where: str):
        agg = aggregate(db)
        assert agg.speed.source.startswith("pair pool")
        card = build_provenance(db, agg)
        figure = next(f for f in card.figures if f.name == "speed-up").value
        page = build_report(db, tmp_path / where, agg).read_text(encoding="utf-8")
        return agg, [figure, page, protocol_markdown(agg.speed), verdict_markdown(agg)], verdict_markdown(agg, "zh")

    agg, english, zh = shown("now")
    assert agg.speed.pools_unwarmed == []
    assert all("each path warmed up untimed first, the paths taking turns going first" in t for t in english)
    assert "两条路径先各做一次不计时的预热，并轮流先运行" in zh and "没有记录不计时的预热" not in zh
    db.execute("UPDATE experiments SET note = '' WHERE id = ?", [pool])  # as a pool made before c2d2d33 stores it
    db.conn.commit()
    agg, english, zh = shown("before")
    assert agg.speed.pools_unwarmed == [pool]
    assert all(f"no untimed warm-up recorded for pool {pool}" in t and "warmed up untimed first" not in t
               for t in english)
    assert f"配对池 {pool} 没有记录不计时的预热" in zh


def test_both_bench_processes_warm_their_target_alike_before_the_timed_runs(make_config, monkeypatch):
    """Sceptic audit, 2026-12-06: the ordinary worker measured the target's cost per token alone (three more
    generate() calls) between its warm-up and its timed runs, so its target had run more calls than the assisted
    process's target when the clock started: two paths timed after different warm-ups. The probe now runs after the
    timed runs, and both processes' targets run the same calls (the first call and the warm-ups) before them; the
    per-token costs are still measured."""
    from evalkit.generation import models, paths
    from evalkit.generation.bench.worker import run_worker

    cfg = load_config(make_config(**{"decoding.max_new_tokens": 4}))
    cfg.bench.warmup, cfg.bench.reps = 1, 1
    events, real_load, real_run = [], models.load_pair, paths.run_path

    def load(*a, **kw):  # the target's every generate() call, whoever makes it
        pair = real_load(*a, **kw)
        generate = pair.target.generate
        pair.target.generate = lambda *x, **y: events.append("target") or generate(*x, **y)
        return pair

    monkeypatch.setattr(models, "load_pair", load)
    monkeypatch.setattr(paths, "run_path", lambda *a, **kw: events.append("run") or real_run(*a, **kw))
    before, res = {}, {}
    for path in ("ordinary", "assisted"):
        events.clear()
        res[path] = run_worker(cfg, path, 1, 0, ["writing-01"])
        first_timed = [i for i, e in enumerate(events) if e == "run"][1 + cfg.bench.warmup]
        before[path] = events[:first_timed].count("target")
    assert before == {"ordinary": 1 + cfg.bench.warmup, "assisted": 1 + cfg.bench.warmup}
    assert res["ordinary"]["process"]["target_seconds_per_token"] > 0
    assert res["assisted"]["process"]["draft_seconds_per_token"] > 0
